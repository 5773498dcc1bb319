"""New documents onto a fitted model's vocabulary, for ``transform``, ``log_likelihood`` and
``perplexity``: raw texts are tokenised as the training texts were (the model's
``text_options``, split into sentences where the model needs them), a Corpus is taken as it is,
and either way every token is matched to the model's vocabulary by its word, never by its id.
Tokens of unknown words are dropped, counted in a ``TransformInfo`` and reported with an
``UnknownWordsWarning``; a multi-label model's label sets are matched by name. Which model
needs sentences or labels is read from the estimators' registry (``estimators.MODELS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .corpus import Corpus, split_sentences
from .errors import CorpusError, ParameterError, UnknownWordsWarning, warn_caller

if TYPE_CHECKING:  # pragma: no cover
    from .fitted import FittedModel

__all__ = ["TransformInfo"]


class TransformInfo(NamedTuple):
    """What ``FittedModel.transform`` did with the new documents' tokens (its
    ``last_transform``).

    Attributes:
        num_docs: documents folded in.
        num_tokens: tokens of words the model knows (folded in).
        dropped_tokens: tokens of other words (dropped).
        unknown_words: those words, each once.
        empty_docs: indices of the documents with no known token (their theta is the prior mean).

    Example:
        >>> import warnings
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", jt.UnknownWordsWarning)
        ...     theta = model.transform(["cherry apple zebra", "car wheel"])
        >>> model.last_transform
        TransformInfo(num_docs=2, num_tokens=4, dropped_tokens=1, unknown_words=('zebra',), empty_docs=())
    """

    num_docs: int
    num_tokens: int
    dropped_tokens: int
    unknown_words: tuple[str, ...]
    empty_docs: tuple[int, ...]


def _map_new_documents(model: FittedModel, docs: Any, what: str = "transform"
                       ) -> tuple[Corpus, TransformInfo]:
    """New documents over the model's vocabulary, matched word by word (never by id), and what
    was dropped. `docs`: a Corpus, or raw texts tokenised with ``model.text_options`` (split
    into sentences where the model needs them). Tokens of unknown words are dropped (and
    sentences left empty); documents are kept. A result without any token gets one dummy
    document at the end (its theta is not returned). `what`: the call errors are named after."""
    from .estimators import MODELS   # at call time: estimators.py imports fitted.py, which imports this
    cls = MODELS[model.model]
    if isinstance(docs, Corpus):                                    # before any word is counted
        if getattr(cls, "needs_labels", False) and docs.label_offsets is None:
            has = ("one integer label per document, not label sets" if docs.labels is not None
                   else "none (labels missing)")
            raise CorpusError(f"{what}: the {model.model} model needs a label set on every "
                              f"document, and this Corpus has {has}: build it with "
                              f"labels=[[...], ...]")
        if cls.needs_sentences and docs.sentence_offsets is None:
            raise CorpusError(f"{what}: the {model.model} model needs sentence boundaries, "
                              f"and this Corpus has none (Corpus.from_texts(texts, "
                              f"sentences=True))")
    index = {w: i for i, w in enumerate(model.vocab)}
    labels: dict[str, Any] = {}
    if isinstance(docs, Corpus):
        # label sets travel with them, matched by name, for a model that uses them; other
        # models ignore labels (gold clusters, label sets of another model), seen or not
        if getattr(cls, "needs_labels", False):
            names = model.label_names if model.label_names is not None else docs.label_names
            known = set(names)
            for d, labs in enumerate(docs.label_sets):
                unknown_labels = [lab for lab in labs if lab not in known]
                if unknown_labels:
                    raise CorpusError(f"document {d} has label {unknown_labels[0]!r}, which the "
                                      f"model does not know (its labels: {', '.join(names)})")
            labels = {"labels": docs.label_sets, "label_names": names}
        lookup = np.fromiter((index.get(w, -1) for w in docs.vocab), np.int64, docs.num_words)
        mapped, offsets, sentences = lookup[docs.word_ids], docs.doc_offsets, docs.sentence_offsets
        words = docs.vocab
        unknown_ids = docs.word_ids[mapped < 0]
    elif getattr(cls, "needs_labels", False):
        raise CorpusError(f"{what}: the {model.model} model needs a label set on every "
                          f"document, and raw texts carry none: pass a Corpus with label sets "
                          f"(Corpus.from_texts(texts, labels=[[...], ...]))")
    else:
        tokens, offsets, sentences = _tokenise_new_texts(model, docs, what)
        mapped = np.fromiter((index.get(t, -1) for t in tokens), np.int64, len(tokens))
        words = tokens
        unknown_ids = np.flatnonzero(mapped < 0)
    if offsets.shape[0] < 2:
        raise CorpusError(f"{what}: no documents given")
    _, first = np.unique(np.asarray([words[i] for i in unknown_ids], dtype=object), return_index=True)
    unknown = tuple(words[unknown_ids[i]] for i in sorted(first))        # in first-seen order
    keep = mapped >= 0
    position = np.concatenate([[0], np.cumsum(keep)])
    ids, offsets = mapped[keep].astype(np.int32), position[np.asarray(offsets)]
    if sentences is not None:
        sentences = np.unique(position[np.asarray(sentences)])
    empty = tuple(int(d) for d in np.flatnonzero(np.diff(offsets) == 0))
    info = TransformInfo(int(offsets.shape[0] - 1), int(ids.shape[0]), int((~keep).sum()), unknown,
                         empty)
    if ids.shape[0] == 0:      # a corpus needs a token: one dummy document at the end
        ids, offsets = np.zeros(1, np.int32), np.append(offsets, 1)
        sentences = None if sentences is None else np.asarray([0, 1])
        if "labels" in labels:
            labels["labels"] = list(labels["labels"]) + [labels["labels"][-1]]
    return Corpus.from_arrays(ids, offsets, model.vocab, sentence_offsets=sentences, **labels), info


def _tokenise_new_texts(model: FittedModel, docs: Any, what: str = "transform"
                        ) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """(tokens, doc offsets, sentence offsets or None) of raw texts, tokenised as the training
    texts were."""
    if isinstance(docs, (str, bytes)):
        raise CorpusError(f"{what} expects a Corpus or a list of texts, got a single string")
    try:
        texts = list(docs)
    except TypeError:
        raise CorpusError(f"{what} expects a Corpus or a list of texts, got "
                          f"{type(docs).__name__}") from None
    options = model.text_options
    if options is None:
        raise ParameterError(
            f"{what}: this model was not fitted on a corpus built from raw texts "
            "(Corpus.from_texts and the readers built on it), so it does not know how to "
            "tokenise them; pass a Corpus (its words are mapped onto the model's vocabulary)")
    if any(not isinstance(t, str) for t in texts):
        d = next(d for d, t in enumerate(texts) if not isinstance(t, str))
        raise CorpusError(f"{what}: texts[{d}] must be a str, got {type(texts[d]).__name__} "
                          f"(for token lists, pass Corpus.from_token_lists(docs))")
    from .estimators import MODELS   # at call time, as in _map_new_documents
    by_sentence = MODELS[model.model].needs_sentences
    tokens: list[str] = []
    offsets, sentences = [0], [0]
    for text in texts:
        for part in options.tokenize(split_sentences(text) if by_sentence else [text]):
            tokens.extend(part)
            if part:
                sentences.append(len(tokens))
        offsets.append(len(tokens))
    return tokens, np.asarray(offsets, np.int64), np.asarray(sentences) if by_sentence else None


def _warn_unknown_words(info: "TransformInfo", what: str, consequence: str) -> None:
    """The UnknownWordsWarning of a read-out of new documents that dropped unknown words."""
    if info.dropped_tokens:
        warn_caller(
            f"{what}: {info.dropped_tokens} of {info.dropped_tokens + info.num_tokens} tokens "
            f"({len(info.unknown_words)} distinct words, e.g. "
            f"{', '.join(map(repr, info.unknown_words[:5]))}) are not in the model's vocabulary "
            f"and were dropped; {consequence}", UnknownWordsWarning)
