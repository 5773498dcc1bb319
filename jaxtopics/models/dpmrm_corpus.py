"""DP-MRM's corpus checks (``jaxtopics.models.dpmrm``): a corpus carries a label set on every
document, and a training corpus uses every label of its ``label_names``."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..corpus import Corpus
from ..errors import CorpusError, LabelWarning, warn_caller

__all__ = ["check_label_sets", "check_training_corpus"]


def check_label_sets(corpus: Corpus) -> None:
    """Raise CorpusError unless the corpus carries a label set on every document."""
    if corpus.label_offsets is None:
        has = ("has one integer label per document (gold clusters), not label sets"
               if corpus.labels is not None else "has none (labels missing)")
        raise CorpusError(
            f"DP-MRM needs a label set on every document, and this corpus {has}: "
            "build it with labels= one list of labels per document (e.g. "
            "Corpus.from_texts(texts, labels=[['sports', 'politics'], ...])) or read "
            "'label1--label2<TAB>text' lines with Corpus.from_text_file(path, labelled=True)")


def check_training_corpus(corpus: Corpus, total: Callable | None = None) -> None:
    """A corpus DP-MRM can be fitted on: label sets present and every label on some document
    (a label with no documents is almost always a mistake in ``label_names``). Held-out
    corpora only need label sets over the fitted labels. `total` sums the documents per label
    over the processes of a multi-process fit (each holds some of the documents)."""
    check_label_sets(corpus)
    per_label = np.bincount(corpus.label_ids, minlength=len(corpus.label_names))
    if total is not None:
        per_label = total(per_label)
    unused = np.flatnonzero(per_label == 0)
    if unused.size:
        names = ", ".join(repr(corpus.label_names[i]) for i in unused[:5])
        raise CorpusError(f"label {names} (id {int(unused[0])}) has no documents: every label of "
                          f"label_names must be on at least one document ({unused.size} unused)")
    tokens = np.bincount(corpus.label_ids, minlength=len(corpus.label_names),
                         weights=np.repeat(corpus.doc_lengths, np.diff(corpus.label_offsets))).astype(np.int64)
    if total is not None:
        tokens = total(tokens)
    idle = np.flatnonzero(np.asarray(tokens) == 0)
    if idle.size:
        names = ", ".join(repr(corpus.label_names[i]) for i in idle[:5])
        warn_caller(f"label {names} is only on documents with no tokens ({idle.size} such "
                      "label(s)): it can own no topic, and a document whose labels are all like "
                      "it gets uniform doc_topic and transform rows", LabelWarning)
