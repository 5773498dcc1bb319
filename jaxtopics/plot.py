"""Pictures of fitted models (matplotlib; the ``viz`` extra: ``pip install "jaxtopics[viz]"``).

Every function takes a fitted model (several, or a trace) and an optional matplotlib ``Axes``
(``Figure`` for the grid of :func:`top_words`), draws on it, and returns it; none calls
``plt.show``. Without an axes a new figure is made (through ``matplotlib.pyplot``, so a notebook
shows it). matplotlib is imported on the first call, not with this module: without it a call
raises an ImportError whose message names the extra.

* :func:`log_joint`: the log joint per token over sweeps, of one chain or several.
* :func:`top_words`: each topic's top words as horizontal bars, a grid of small multiples.
* :func:`doc_topics`: a heat map of documents x topics (a readable subset of the documents,
  grouped by their main topic).
* :func:`cluster_sizes`: the sizes of the clusters (DMM, DPMM) or topics, sorted.
* :func:`active_topics`: the active topics (HDP, DP-MRM) or clusters (DPMM) over sweeps, from
  :func:`active_history` (the trace does not record them).
* :func:`coherence`: each topic's coherence (``FittedModel.coherence``), sorted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ParameterError

if TYPE_CHECKING:
    from .corpus import Corpus
    from .fit import TracePoint
    from .fitted import FittedModel

__all__ = ["log_joint", "top_words", "doc_topics", "cluster_sizes", "active_topics",
           "active_history", "coherence", "MISSING_MESSAGE"]

#: the one line an ImportError says when matplotlib is not installed
MISSING_MESSAGE = 'jaxtopics.plot needs matplotlib: pip install "jaxtopics[viz]"'

#: the colour map of the heat map (sequential, perceptually uniform, colour-blind safe)
_SEQUENTIAL_MAP = "viridis"


def _matplotlib():
    """matplotlib, or an ImportError naming the ``viz`` extra."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MISSING_MESSAGE) from None
    return matplotlib


def _new_axes(figsize: tuple[float, float]):
    """A new figure with one axes (pyplot, so a notebook shows it), laid out tightly."""
    _matplotlib()
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _label_topic(model: FittedModel, k: int, words: int = 3) -> str:
    """``"#k word word word"``: a topic's id and its first top words."""
    ids = model.top_word_ids(words, [k])[0]
    return f"#{k} " + " ".join(model.vocab[i] for i in ids)


def _shares(model: FittedModel) -> np.ndarray:
    """[K]: each topic's share (tokens, or documents for a model with one cluster each)."""
    from .fitted import _topic_shares
    return _topic_shares(model, model.doc_topic)[0]


def _check_count(value: Any, name: str) -> int:
    from .validate import check_positive_int
    return check_positive_int(value, name, high=None)


# -- log joint over sweeps ----------------------------------------------------------------------

def _as_series(chains: Any) -> list[tuple[str | None, list]]:
    """[(label, trace)] of a model, a trace, or a sequence of either."""
    from .fit import TracePoint
    from .fitted import FittedModel
    if isinstance(chains, FittedModel):
        return [(None, chains.trace)]
    items = list(chains) if isinstance(chains, Sequence) else None
    if items is None:
        raise ParameterError(f"log_joint takes a fitted model, a trace or a list of them, got "
                             f"{type(chains).__name__}")
    if not items or isinstance(items[0], TracePoint):
        return [(None, items)]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, FittedModel):
            out.append((f"seed {item.seed}", item.trace))
        elif isinstance(item, Sequence) and all(isinstance(p, TracePoint) for p in item):
            out.append((f"chain {i}", list(item)))
        else:
            raise ParameterError(f"log_joint: item {i} is a {type(item).__name__}, not a fitted "
                                 "model or a trace")
    return out


def log_joint(chains: FittedModel | Sequence[Any], ax: Any = None, *,
              labels: Sequence[str] | None = None, skip: int = 0) -> Any:
    """The log joint per token along the sweeps of one chain or several (one line each).

    Args:
        chains: a FittedModel, its ``trace`` (a list of TracePoint), or a list of either (e.g.
            what ``fit_chains`` returns: one line per chain, labelled by its seed).
        ax: the matplotlib Axes to draw on; None: a new figure.
        labels: a legend label per chain (default: ``seed s``, or ``chain i`` for traces).
        skip: leave out the trace points of the first `skip` sweeps (the burn-in, whose
            steep start flattens the rest).

    Returns:
        The Axes: sweeps on x, log p(w, z) per token on y.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> chains = jt.LDA(num_topics=2).fit_chains(corpus, num_sweeps=50, seeds=(0, 1))
        >>> ax = plot.log_joint(chains)
        >>> ax.get_xlabel(), len(ax.get_lines())
        ('sweep', 2)
    """
    series = _as_series(chains)
    if labels is not None:
        labels = [str(x) for x in labels]
        if len(labels) != len(series):
            raise ParameterError(f"labels has {len(labels)} entries for {len(series)} chains")
        series = [(lab, tr) for lab, (_, tr) in zip(labels, series)]
    skip = 0 if skip is None else int(skip)
    if ax is None:
        ax = _new_axes((6.0, 3.6))
    for label, trace in series:
        points = [p for p in trace if p.sweep >= skip]
        ax.plot([p.sweep for p in points], [p.log_joint_per_token for p in points],
                marker="o" if len(points) <= 12 else None, markersize=3, linewidth=1.4,
                label=label)
    ax.set_xlabel("sweep")
    ax.xaxis.set_major_locator(_matplotlib().ticker.MaxNLocator(integer=True))
    ax.set_ylabel("log p(w, z) per token")
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(axis="y", useOffset=False)
    if any(label for label, _ in series) and len(series) > 1:
        ax.legend(frameon=False, fontsize="small", ncols=1 if len(series) <= 6 else 2)
    return ax


# -- top words -----------------------------------------------------------------------------------

def _shown_topics(model: FittedModel, topics: Any, max_topics: int) -> np.ndarray:
    """Topic ids to show: `topics` as given, else the non-empty ones by share, largest first
    (at most `max_topics`)."""
    from .fitted import _empty_topics, _topic_ids
    if topics is not None:
        ids = _topic_ids(topics, model.num_topics)
        bad = ids[(ids < 0) | (ids >= model.num_topics)]
        if bad.size:
            raise ParameterError(f"topics out of range [0, {model.num_topics}): {bad.tolist()[:10]}")
        return ids
    share = _shares(model)
    held = np.flatnonzero(~_empty_topics(model))
    return held[np.argsort(-share[held], kind="stable")][:max_topics]


def top_words(model: FittedModel, num_words: int = 10, topics: Any = None, *,
              max_topics: int = 20, ncols: int | None = None, fig: Any = None) -> Any:
    """Each topic's top words as horizontal bars of p(word | topic), one small panel per topic.

    Args:
        model: a FittedModel.
        num_words: words per topic (its most probable, as ``top_words``).
        topics: topic ids (or a boolean mask) to show, in that order; None: the topics that
            hold something, largest share first, at most `max_topics`.
        max_topics: the most topics shown when `topics` is None.
        ncols: panels per row (default: up to 5).
        fig: the matplotlib Figure to draw on (its size is set); None: a new one. Without a
            layout engine of its own the panels are placed with fixed margins, the left one
            fitted to the widest word (a word wider than 1.2 inches is shortened with an
            ellipsis); a figure with one (``layout="constrained"``) is laid out by it.

    Returns:
        The Figure, one Axes per topic titled ``topic k (share)``.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> len(plot.top_words(model, num_words=3).axes)
        2
    """
    num_words = _check_count(num_words, "num_words")
    max_topics = _check_count(max_topics, "max_topics")
    ids = _shown_topics(model, topics, max_topics)
    share = _shares(model)
    n = max(len(ids), 1)
    ncols = min(5, n) if ncols is None else _check_count(ncols, "ncols")
    nrows = -(-n // ncols)
    rows_words = min(num_words, len(model.vocab))
    panel_h = 0.19 * rows_words + 0.55
    size = (2.5 * ncols + 0.3, panel_h * nrows + 0.3)
    top = model.top_word_ids(rows_words, ids) if len(ids) else np.zeros((0, rows_words), int)
    labels = [[model.vocab[w] for w in words] for words in top]
    if fig is None:
        _matplotlib()
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=size)
    else:
        fig.set_size_inches(*size)
    if fig.get_layout_engine() is None:        # panels placed here: no layout engine to run
        labels, grid = _top_words_grid(fig, labels, nrows, ncols, len(ids))
    else:                                      # the caller's figure keeps its own engine
        grid = fig.add_gridspec(nrows, ncols)
    place = [grid[i // ncols, i % ncols] for i in range(len(ids))]
    phi = model.topic_word
    colours = _matplotlib().colormaps["tab10"]
    locator = _matplotlib().ticker.MaxNLocator
    for i, where in enumerate(place):
        ax = fig.add_subplot(where)
        k, words = int(ids[i]), top[i]
        ax.barh(np.arange(len(words)), phi[k, words], color=colours(i % 10), height=0.75)
        ax.set_yticks(np.arange(len(words)), labels[i], fontsize=8)
        ax.invert_yaxis()                          # the most probable word on top
        ax.set_title(f"topic {k} ({share[k]:.1%})", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(locator(3))
        ax.spines[["top", "right"]].set_visible(False)
        if i // ncols == nrows - 1 or i + ncols >= len(ids):
            ax.set_xlabel("p(word | topic)", fontsize=8)
    return fig


#: :func:`top_words`' fixed layout, in inches: the figure's outer padding, the room of a
#: panel's title (9 pt, 6 pt pad), of its x tick labels (7 pt, 3.5 pt ticks and pad), of its
#: x label (8 pt), right of a panel (its last x tick label's half), left of its y tick labels
#: (3.5 pt ticks and pad), and the widest word label before it is shortened
_PAD, _TITLE, _XTICKS, _XLABEL, _RIGHT, _YTICKS, _WIDEST = 0.06, 0.28, 0.22, 0.19, 0.14, 0.12, 1.2


def _top_words_grid(fig: Any, labels: list[list[str]], nrows: int, ncols: int, shown: int
                    ) -> tuple[list[list[str]], Any]:
    """(labels, GridSpec): the panels of :func:`top_words` placed with fixed margins, the left
    one as wide as the widest word label (measured with the font it is drawn in; a label wider
    than ``_WIDEST`` inches is shortened to fit): no text overlaps another panel, and no layout
    engine runs when the figure is drawn (the constrained layout took ~0.5 s of a 20-panel
    figure's save)."""
    import warnings

    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties
    # hinting makes a text's width depend on the resolution (narrow glyphs: 'i' * 40 is 1.19 in
    # at 72 dpi, 1.41 in at 120, the CLI's): measured at the usual ones, the widest kept
    renderers = [(RendererAgg(1, 1, dpi), dpi) for dpi in sorted({72, 100, 120, 150,
                                                                 int(fig.dpi)})]
    font = FontProperties(size=8)
    known: dict[str, float] = {}

    def width(text: str) -> float:
        """`text`'s width in inches at the labels' font (glyph warnings are left to drawing)."""
        if text not in known:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                known[text] = max(r.get_text_width_height_descent(text, font, ismath=False)[0] / dpi
                                  for r, dpi in renderers)
        return known[text]

    def fitted(text: str) -> str:
        while width(text) > _WIDEST and len(text) > 2:
            text = _shorten(text, len(text) - 1)
        return text

    labels = [[fitted(w) for w in words] for words in labels]
    left = max((width(w) for words in labels for w in words), default=0.0) * 1.05 + _YTICKS
    w_in, h_in = fig.get_size_inches()
    panel_w = (w_in - 2 * _PAD) / ncols - left - _RIGHT
    # a row above the last holds x labels when the last row is not full (top_words labels the
    # panel with no panel below it)
    middle = _XTICKS + (_XLABEL if nrows > 1 and shown % ncols else 0.0) + _TITLE
    bottom = _PAD + _XTICKS + _XLABEL
    panel_h = (h_in - _PAD - _TITLE - bottom - (nrows - 1) * middle) / nrows
    grid = fig.add_gridspec(nrows, ncols, left=(_PAD + left) / w_in,
                            right=1 - (_PAD + _RIGHT) / w_in, bottom=bottom / h_in,
                            top=1 - (_PAD + _TITLE) / h_in, wspace=(left + _RIGHT) / panel_w,
                            hspace=middle / panel_h)
    return labels, grid


# -- documents x topics --------------------------------------------------------------------------

def _document_rows(theta: np.ndarray, max_docs: int) -> np.ndarray:
    """Documents to show, grouped by their main topic (then by its weight, descending); when
    there are more than `max_docs`, that many evenly spaced over this order (every large group
    keeps some)."""
    main = theta.argmax(1)
    order = np.lexsort((-theta[np.arange(len(main)), main], main))
    if len(order) > max_docs:
        order = order[np.linspace(0, len(order) - 1, max_docs).round().astype(int)]
    return order


def doc_topics(model: FittedModel, ax: Any = None, *, max_docs: int = 40, max_topics: int = 30,
               doc_names: Sequence[str] | None = None, cmap: str = _SEQUENTIAL_MAP) -> Any:
    """A heat map of theta, p(topic | document): documents in rows, topics in columns.

    The documents are grouped by their main topic (so the map reads as a staircase); with more
    than `max_docs`, that many are taken evenly over this order. Topics are columns in order of
    their share, largest first, at most `max_topics`; when some are left out, so are the
    documents whose main topic they are (they would be blank rows).

    Args:
        model: a FittedModel.
        ax: the matplotlib Axes to draw on; None: a new figure.
        max_docs: the most documents (rows) shown.
        max_topics: the most topics (columns) shown.
        doc_names: a name per training document (e.g. ``corpus.doc_names``) for the row labels;
            None: document ids.
        cmap: a sequential matplotlib colour map.

    Returns:
        The Axes (with a colour bar beside it).

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> plot.doc_topics(model, max_docs=8).images[0].get_array().shape
        (8, 2)
    """
    max_docs = _check_count(max_docs, "max_docs")
    max_topics = _check_count(max_topics, "max_topics")
    theta = np.asarray(model.doc_topic)
    if doc_names is not None and len(doc_names) != theta.shape[0]:
        raise ParameterError(f"doc_names has {len(doc_names)} entries for {theta.shape[0]} documents")
    cols = np.argsort(-_shares(model), kind="stable")[:max_topics]
    docs = np.arange(theta.shape[0])
    if len(cols) < theta.shape[1]:          # a document whose main topic is not shown would be
        on_shown = np.isin(theta.argmax(1), cols)              # a blank row
        docs = np.flatnonzero(on_shown) if on_shown.any() else docs
    rows = docs[_document_rows(theta[np.ix_(docs, cols)], max_docs)]
    image = theta[np.ix_(rows, cols)]
    if ax is None:
        ax = _new_axes((min(2.2 + 0.3 * len(cols), 10.0), min(1.2 + 0.2 * len(rows), 10.0)))
    shown = ax.imshow(image, aspect="auto", cmap=cmap, vmin=0.0, vmax=max(float(image.max()), 1e-9),
                      interpolation="nearest")
    ax.set_xticks(np.arange(len(cols)), [str(k) for k in cols],
                  fontsize=8 if len(cols) <= 30 else 6, rotation=0 if len(cols) <= 20 else 90)
    names = ([str(d) for d in rows] if doc_names is None
             else [_shorten(str(doc_names[d]), 28) for d in rows])
    step = max(1, -(-len(rows) // 50))                 # at most ~50 row labels
    ax.set_yticks(np.arange(0, len(rows), step), names[::step], fontsize=7 if len(rows) > 25 else 8)
    note = "largest share first" if len(cols) > 1 else ""
    if len(cols) < theta.shape[1]:
        note += f"; {len(cols)} of {theta.shape[1]}"
    ax.set_xlabel(f"topic ({note})" if note else "topic")
    ax.set_ylabel("document" + (f" ({len(rows)} of {theta.shape[0]})" if len(rows) < theta.shape[0]
                                else ""))
    bar = ax.figure.colorbar(shown, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label("p(topic | document)")
    return ax


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"


# -- cluster sizes -------------------------------------------------------------------------------

def _sizes(model: FittedModel) -> tuple[np.ndarray, str]:
    """(size of each topic / cluster, what it counts)."""
    for name, unit in (("cluster_sizes", "documents"), ("topic_sizes", "tokens")):
        try:
            return np.asarray(getattr(model, name)), unit
        except AttributeError:
            pass
    z = np.asarray(model.assignments)
    if z.shape == (model.num_tokens,):
        return np.bincount(z[z >= 0], minlength=model.num_topics)[:model.num_topics], "tokens"
    return np.bincount(model.doc_topic.argmax(1), minlength=model.num_topics), "documents"


def cluster_sizes(model: FittedModel, ax: Any = None, *, max_clusters: int = 25,
                  words: int = 3) -> Any:
    """The sizes of the clusters (DMM, DPMM: documents per cluster) or topics (tokens per
    topic), largest first, as horizontal bars labelled with each one's top words.

    Args:
        model: a FittedModel.
        ax: the matplotlib Axes to draw on; None: a new figure.
        max_clusters: the most bars (the largest clusters); the title says how many more there
            are.
        words: top words in each bar's label (0: the id alone).

    Returns:
        The Axes.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.DMM(num_clusters=4).fit(corpus, num_sweeps=20, seed=0)
        >>> plot.cluster_sizes(model).get_xlabel()
        'documents'
    """
    max_clusters = _check_count(max_clusters, "max_clusters")
    sizes, unit = _sizes(model)
    held = np.flatnonzero(sizes > 0)
    order = held[np.argsort(-sizes[held], kind="stable")]
    shown = order[:max_clusters]
    if ax is None:
        ax = _new_axes((6.0, min(1.0 + 0.24 * max(len(shown), 1), 11.0)))
    what = "clusters" if unit == "documents" else "topics"
    labels = [(_label_topic(model, int(k), words) if words else f"#{k}") for k in shown]
    ax.barh(np.arange(len(shown)), sizes[shown], color="tab:blue", height=0.75)
    ax.set_yticks(np.arange(len(shown)), [_shorten(s, 40) for s in labels],
                  fontsize=8 if len(shown) > 12 else 9)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.spines[["top", "right"]].set_visible(False)
    rest = len(order) - len(shown)
    title = f"{len(order)} non-empty {what}"
    if rest:
        title += f" (the largest {len(shown)} shown)"
    ax.set_title(title, fontsize=10)
    return ax


# -- active topics over sweeps -------------------------------------------------------------------

def _active_count(model: FittedModel) -> int:
    """Topics / clusters that hold something in the model's current state."""
    for name in ("num_active_topics", "num_active_clusters"):
        try:
            return int(getattr(model, name))
        except AttributeError:
            pass
    from .fitted import _empty_topics
    return int((~_empty_topics(model)).sum())


def active_history(model: FittedModel, corpus: Corpus, num_sweeps: int, every: int = 10
                   ) -> list[tuple[int, int]]:
    """Continue `model`'s chain for `num_sweeps` sweeps (in place, ``resume``: the same chain as
    one longer run), reading its active topics / clusters every `every` sweeps. The trace does
    not record them; this is how :func:`active_topics` gets them.

    Args:
        model: a FittedModel (HDP and DP-MRM: ``num_active_topics``; DPMM, DMM:
            ``num_active_clusters``; other models: the topics that hold a token).
        corpus: the corpus it was fitted on.
        num_sweeps: sweeps to run.
        every: sweeps between readings.

    Returns:
        [(sweep, active)]: the starting point, then one pair every `every` sweeps (and at the
        end).

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.HDP(alpha=1.0, gamma=1.0).fit(corpus, num_sweeps=0, seed=0)
        >>> [sweep for sweep, active in plot.active_history(model, corpus, 20, every=10)]
        [0, 10, 20]
    """
    from .validate import check_int
    num_sweeps = check_int(num_sweeps, "num_sweeps", low=0)
    every = _check_count(every, "every")
    history = [(model.sweeps_done, _active_count(model))]
    done = 0
    while done < num_sweeps:
        step = min(every, num_sweeps - done)
        model.resume(corpus, step, eval_every=step, progress=False)
        done += step
        history.append((model.sweeps_done, _active_count(model)))
    return history


def active_topics(history: Sequence[tuple[int, int]] | Mapping[str, Sequence[tuple[int, int]]],
                  ax: Any = None, *, ylabel: str = "active topics") -> Any:
    """The number of active topics (or clusters) over sweeps, as a step line.

    Args:
        history: [(sweep, active)] from :func:`active_history`, or {label: history} for several
            chains (one line each).
        ax: the matplotlib Axes to draw on; None: a new figure.
        ylabel: the y axis label ("active clusters" for DPMM).

    Returns:
        The Axes.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from jaxtopics import plot
        >>> plot.active_topics([(0, 1), (10, 5), (20, 7)]).get_ylabel()
        'active topics'
    """
    series = (list(history.items()) if isinstance(history, Mapping) else [(None, history)])
    if ax is None:
        ax = _new_axes((6.0, 3.4))
    top = 0
    for label, points in series:
        points = [(int(s), int(a)) for s, a in points]
        if not points:
            continue
        sweeps, active = zip(*points)
        top = max(top, max(active))
        ax.step(sweeps, active, where="post", linewidth=1.5, label=label,
                marker="o" if len(points) <= 12 else None, markersize=3)
    ax.set_xlabel("sweep")
    ax.xaxis.set_major_locator(_matplotlib().ticker.MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top * 1.1 + 1)
    ax.yaxis.set_major_locator(_matplotlib().ticker.MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend(frameon=False, fontsize="small")
    return ax


# -- coherence -----------------------------------------------------------------------------------

def coherence(model: FittedModel, corpus: Corpus | None = None, measure: str = "c_v", *,
              top_n: int = 10, scores: Any = None, ax: Any = None, max_topics: int = 30,
              words: int = 3) -> Any:
    """Each topic's coherence as horizontal bars, best first, with the mean as a dashed line.

    Args:
        model: a FittedModel.
        corpus: the reference corpus (usually the training corpus); not needed with `scores`.
        measure: "c_v" (default), "c_npmi", "c_uci", "u_mass" (``FittedModel.coherence``).
        top_n: the top words scored per topic.
        scores: the scores already computed (``model.coherence(...)``, one per topic); None:
            computed here from `corpus`.
        ax: the matplotlib Axes to draw on; None: a new figure.
        max_topics: the most bars (the best and the worst half each when there are more).
        words: top words in each bar's label.

    Returns:
        The Axes; topics that score NaN (empty ones) are left out.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import jaxtopics as jt
        >>> from jaxtopics import plot
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> plot.coherence(model, corpus, "c_npmi", top_n=3).get_xlabel()
        'coherence c_npmi (top 3 words)'
    """
    max_topics = _check_count(max_topics, "max_topics")
    if scores is None:
        if corpus is None:
            raise ParameterError("coherence needs a reference corpus, or the scores")
        scores = model.coherence(corpus, measure, top_n)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (model.num_topics,):
        raise ParameterError(f"scores has shape {scores.shape}, expected one per topic "
                             f"({model.num_topics},)")
    scored = np.flatnonzero(~np.isnan(scores))
    order = scored[np.argsort(-scores[scored], kind="stable")]
    if len(order) > max_topics:               # the best and the worst
        half = max_topics // 2
        order = np.concatenate([order[:max_topics - half], order[len(order) - half:]])
    if ax is None:
        ax = _new_axes((6.0, min(1.2 + 0.24 * max(len(order), 1), 11.0)))
    values = scores[order]
    ax.barh(np.arange(len(order)), values, color=np.where(values >= 0, "tab:blue", "tab:gray"),
            height=0.75)
    ax.set_yticks(np.arange(len(order)), [_shorten(_label_topic(model, int(k), words), 40)
                                          for k in order], fontsize=8 if len(order) > 12 else 9)
    ax.invert_yaxis()
    ax.axvline(0, color="0.4", linewidth=0.8)
    if len(scored):
        mean = float(scores[scored].mean())
        ax.axvline(mean, color="tab:orange", linestyle="--", linewidth=1.2)
        shown = ("" if len(order) == len(scored) else
                 f"\nthe {max_topics - max_topics // 2} best and {max_topics // 2} worst shown")
        ax.set_title(f"mean {mean:.3f} (dashed) over {len(scored)} topics{shown}", fontsize=10)
    ax.set_xlabel(f"coherence {measure} (top {top_n} words)")
    ax.spines[["top", "right"]].set_visible(False)
    return ax
