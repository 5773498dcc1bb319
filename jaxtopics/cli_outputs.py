"""What ``jaxtopics fit`` writes beside ``model.jtm`` for reading and plotting: ``doc_topics.csv``
(always), and ``trace.png`` and ``topics.png`` when matplotlib is installed (the ``viz`` extra)
and ``--no-plots`` is not given. Every file is written atomically (``io.atomic_path``): whole or
not at all. The pictures are drawn on matplotlib ``Figure`` objects of their own (no pyplot, no
display needed).
"""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .io import atomic_path, atomic_write_bytes

if TYPE_CHECKING:
    from .corpus import Corpus
    from .fitted import FittedModel

#: the pictures `fit` draws, in the order it writes them
PICTURES = ("trace.png", "topics.png")

#: the modules the pictures need: imported by :func:`import_matplotlib_early` while the sweeps run
_PICTURE_MODULES = ("matplotlib", "matplotlib.figure", "matplotlib.ticker",
                    "matplotlib.font_manager", "matplotlib.backends.backend_agg")

#: the thread importing them, until :func:`write_pictures` waits for it
_early_import: list[threading.Thread] = []


def _import_picture_modules() -> None:
    import importlib
    try:
        for name in _PICTURE_MODULES:
            importlib.import_module(name)
    except Exception:         # no matplotlib (or a broken one): write_pictures says so itself
        pass


def import_matplotlib_early() -> None:
    """Start importing matplotlib (~0.3-0.4 s) in a thread of its own, so that the import runs
    while the fit's sweeps do (they release the GIL) instead of after them. Only the modules
    are imported there: the figures are made and drawn on the calling thread, by
    :func:`write_pictures`, which waits for this import first. Does nothing when matplotlib is
    already imported or the import has been started."""
    import sys
    if any(t.is_alive() for t in _early_import) or "matplotlib.backends.backend_agg" in sys.modules:
        return
    _early_import.clear()               # a finished one no picture waited for (a failed fit)
    thread = threading.Thread(target=_import_picture_modules, name="jaxtopics-import-matplotlib")
    _early_import.append(thread)
    thread.start()


def write_doc_topics(model: FittedModel, corpus: Corpus, path: Path) -> None:
    """`path`: a header ``doc,topic_0,...,topic_{K-1}``, then one row per training document:
    its name (``corpus.doc_names``) or id, then its topic (cluster) proportions, theta."""
    theta = model.doc_topic
    names = corpus.doc_names
    if names is None or len(names) != theta.shape[0]:   # a multi-process run: process 0's only
        names = range(theta.shape[0])
    table = io.StringIO(newline="")
    w = csv.writer(table)
    w.writerow(["doc"] + [f"topic_{k}" for k in range(theta.shape[1])])
    w.writerows([name, *map(str, row)] for name, row in zip(names, theta))
    atomic_write_bytes(path, table.getvalue().encode("utf-8"))


def write_pictures(model: FittedModel, out: Path, top_words: int = 10) -> list[str]:
    """Draw ``trace.png`` (the log joint per token over the sweeps) and ``topics.png`` (the top
    words of the largest topics) into `out`.

    Returns:
        The names written. Raises ImportError (``plot.MISSING_MESSAGE``) without matplotlib."""
    while _early_import:                # import_matplotlib_early's thread: its import done
        _early_import.pop().join()
    from . import plot
    plot._matplotlib()
    from matplotlib.figure import Figure

    written = []
    fig = Figure(figsize=(6.0, 3.6), layout="constrained")
    ax = plot.log_joint(model, ax=fig.subplots())
    ax.set_title(f"{model.model.upper()}, seed {model.seed}, {model.sweeps_done} sweeps",
                 fontsize=10)
    _save(fig, out / "trace.png")
    written.append("trace.png")
    fig = plot.top_words(model, num_words=min(top_words, 15), fig=Figure())
    _save(fig, out / "topics.png")
    written.append("topics.png")
    return written


def _save(fig: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def remove_stale_pictures(out: Path) -> None:
    """Remove pictures of an earlier fit in `out` (they would not show this model)."""
    for name in PICTURES:
        (out / name).unlink(missing_ok=True)
