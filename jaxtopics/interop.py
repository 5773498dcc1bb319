"""A fitted model in other libraries' terms: pyLDAvis's ``prepare`` arguments and pandas frames
(``FittedModel.to_pyldavis``, ``doc_topic_frame``, ``topic_word_frame`` call these), and the
lazy import of the optional packages they need (extra ``interop``:
``pip install "jaxtopics[interop]"``, which brings scikit-learn, pandas and pyLDAvis).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np

from .corpus import Corpus
from .errors import CorpusError

__all__ = ["optional_import", "pyldavis_kwargs", "doc_topic_frame", "topic_word_frame",
           "INSTALL_HINT"]

#: how to install what this module's functions need
INSTALL_HINT = 'pip install "jaxtopics[interop]"'


def optional_import(name: str, what: str) -> ModuleType:
    """Import an optional package, or say in one line how to install it.

    Args:
        name: the package to import ("pandas", "pyLDAvis", "sklearn").
        what: what needs it, for the message.

    Returns:
        The module.

    Raises:
        ImportError: it is not installed; the message names the extra to install."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"{what} needs the optional package {name!r}, which is not installed "
                          f"({e.msg if hasattr(e, 'msg') else e}): {INSTALL_HINT}") from None


def _membership(model: Any) -> np.ndarray | None:
    """One-hot rows of a one-cluster-per-document model's labels (DMM, DPMM), else None."""
    if getattr(model._module, "CHANGED_UNIT", "tokens") != "documents":
        return None
    labels = model._estimates().get("labels")
    if labels is None or np.ndim(labels) != 1:
        return None
    k = model.num_topics
    labels = np.asarray(labels)
    rows = np.zeros((labels.shape[0], k))
    seated = (labels >= 0) & (labels < k)
    rows[np.flatnonzero(seated), labels[seated]] = 1.0
    return rows


def pyldavis_kwargs(model: Any, corpus: Corpus) -> dict[str, Any]:
    """``pyLDAvis.prepare``'s keyword arguments for a fitted model (``FittedModel.to_pyldavis``).

    Args:
        model: a FittedModel.
        corpus: its training corpus (checked by fingerprint, as ``resume`` checks it).

    Returns:
        {"topic_term_dists", "doc_topic_dists", "doc_lengths", "vocab", "term_frequency",
        "sort_topics": False, "start_index": 0} (and "mds" when one topic holds tokens:
        pyLDAvis's own scaling fails on one); see ``FittedModel.to_pyldavis``.

    Raises:
        CorpusError: not the training corpus, or no topic holds a token."""
    from .fitted import _check_same_corpus, _empty_topics
    _check_same_corpus(model, corpus, "to_pyldavis")
    phi = np.asarray(model.topic_word, np.float64)
    theta = _membership(model)
    if theta is None:
        theta = np.asarray(model.doc_topic, np.float64)
    if theta.shape[0] != corpus.num_docs:
        raise CorpusError(f"to_pyldavis: the model has {theta.shape[0]} document rows, the corpus "
                          f"{corpus.num_docs} documents")
    kept = ~_empty_topics(model)
    if not kept.any():
        raise CorpusError("to_pyldavis: no topic or cluster holds a token (nothing to show)")
    term_frequency = corpus.word_counts()
    used = term_frequency > 0          # pyLDAvis divides by a word's frequency: unused words go
    phi = phi[kept][:, used]
    phi /= phi.sum(1, keepdims=True)
    theta = theta[:, kept]
    total = theta.sum(1, keepdims=True)
    theta = np.divide(theta, total, out=np.full_like(theta, 1.0 / theta.shape[1]),
                      where=total > 0)
    kwargs = {"topic_term_dists": phi, "doc_topic_dists": theta,
              "doc_lengths": np.asarray(corpus.doc_lengths, np.int64),
              "vocab": [w for w, u in zip(corpus.vocab, used) if u],
              "term_frequency": term_frequency[used], "sort_topics": False, "start_index": 0}
    if phi.shape[0] == 1:              # pyLDAvis's own scaling places one topic on one axis and
        kwargs["mds"] = _one_topic_mds   # fails a bare assert: the topic at the origin instead
    return kwargs


def _one_topic_mds(distributions: np.ndarray) -> np.ndarray:
    """pyLDAvis's ``mds`` for a single topic: it sits at (0, 0)."""
    return np.zeros((len(distributions), 2))


def doc_topic_frame(model: Any, corpus: Corpus | None = None) -> Any:
    """theta as a pandas DataFrame (``FittedModel.doc_topic_frame``).

    Args:
        model: a FittedModel.
        corpus: the training corpus, for its ``doc_names`` (the index); None: document ids.

    Returns:
        A DataFrame [D, K]: index the document names (or ids 0..D-1), named "document"; columns
        the topic ids, named "topic".

    Raises:
        CorpusError: `corpus` has another number of documents than the model."""
    pd = optional_import("pandas", "doc_topic_frame")
    theta = model.doc_topic
    names = None
    if corpus is not None:
        if not isinstance(corpus, Corpus):
            raise CorpusError(f"doc_topic_frame expects a jaxtopics.Corpus, got "
                              f"{type(corpus).__name__}")
        if corpus.num_docs != theta.shape[0]:
            raise CorpusError(f"doc_topic_frame: the corpus has {corpus.num_docs} documents, the "
                              f"model {theta.shape[0]} (give the training corpus)")
        names = corpus.doc_names
    index = (pd.Index(list(names), name="document") if names is not None
             else pd.RangeIndex(theta.shape[0], name="document"))
    return pd.DataFrame(theta, index=index, columns=pd.RangeIndex(theta.shape[1], name="topic"))


def topic_word_frame(model: Any) -> Any:
    """phi as a pandas DataFrame (``FittedModel.topic_word_frame``).

    Args:
        model: a FittedModel.

    Returns:
        A DataFrame [K, V]: index the topic ids, named "topic"; columns the words, named
        "word"."""
    pd = optional_import("pandas", "topic_word_frame")
    phi = model.topic_word
    return pd.DataFrame(phi, index=pd.RangeIndex(phi.shape[0], name="topic"),
                        columns=pd.Index(list(model.vocab), name="word"))
