"""The validated, immutable corpus every model starts from: a :class:`Corpus` holds host numpy
arrays in a compressed-sparse-row layout (all tokens of all documents concatenated in
``word_ids``, document boundaries in ``doc_offsets``), the vocabulary, and optional sentence
boundaries, gold labels, label sets (for multi-label models such as DP-MRM) and document names;
its constructors build it from token lists, raw texts (tokenised by :mod:`jaxtopics.text`),
gensim-style bag-of-words, document-term matrices (``from_sparse``) and the files
:mod:`jaxtopics.io` reads (LDA-C, UCI bag-of-words, text lines, JSON lines). Empty documents are kept, never dropped; models that cannot take them
call :meth:`Corpus.require_nonempty_docs`. The text pipeline's public names (``TextOptions``,
``split_sentences``, ``default_tokenizer``, ``ENGLISH_STOP_WORDS``) are re-exported here; the
checks and encodings of what a corpus is given (arrays, strings, gold labels, label sets) are
:mod:`jaxtopics.corpus_checks`.
"""

from __future__ import annotations

import dataclasses
import os
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np

from . import fingerprint as _fp
from . import io as _io
from .corpus_checks import (_as_int_value, _check_frac_or_count, _encode_labels, _frozen,
                            _gold_labels, _int_array, _is_label_sets, _iterable, _label_sets_csr,
                            _require_documents, _shown, _str_tuple)
from .errors import CorpusError, EmptyDocumentError, ParameterError
from .sparse import from_sparse as _from_sparse
from .text import ENGLISH_STOP_WORDS, TextOptions, default_tokenizer, split_sentences
from .text import nfc_vocab as _nfc_vocab
from .validate import as_sequence

__all__ = ["Corpus", "ENGLISH_STOP_WORDS", "TextOptions", "default_tokenizer", "split_sentences"]

_INT32_MAX = int(np.iinfo(np.int32).max)
_INT64_MAX = int(np.iinfo(np.int64).max)


# --------------------------------------------------------------------------------------------
# index ranges (the checks of what a corpus is given are in corpus_checks.py)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Corpus:
    """Immutable validated corpus of host numpy arrays.

    Attributes:
        word_ids: int32 [N], the tokens of all documents concatenated (read-only).
        doc_offsets: int64 [D+1]; document d is ``word_ids[doc_offsets[d]:doc_offsets[d+1]]``.
        vocab: the words, ``len(vocab) = V > max(word_ids)``, NFC-normalised by every
            constructor (as ``from_texts`` normalises texts; two entries that normalise to the
            same word are refused, naming both).
        sentence_offsets: int64 [S+1] token offsets where sentences start, then N; every
            non-empty document starts a sentence; sentences are non-empty. None if unknown.
        labels: int64 [D] gold label / cluster per document, or None (given as anything but
            integers only, e.g. strings or strings and ints mixed, the labels get ids in
            first-seen order, as ``from_jsonl`` gives them).
        doc_names: a title / id per document, or None.
        text_options: how raw texts were turned into tokens (:class:`TextOptions`, set by
            :meth:`from_texts` and the readers built on it), or None.
        label_offsets, label_ids: multi-label documents (DP-MRM), CSR layout: the label set of
            document d is ``label_ids[label_offsets[d]:label_offsets[d+1]]`` (int64 [D+1],
            int32; non-empty, no repeats), ids into ``label_names``. None if unlabelled.
            ``labels=`` given as one list of labels per document fills these three fields.
        label_names: the label of each label id, or None.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple", "car engine car road"])
        >>> corpus
        Corpus(num_docs=2, num_tokens=7, num_words=5)
        >>> corpus.words(1), corpus.doc_lengths.tolist()
        (['car', 'engine', 'car', 'road'], [3, 4])
    """

    word_ids: np.ndarray
    doc_offsets: np.ndarray
    vocab: tuple[str, ...]
    sentence_offsets: np.ndarray | None = None
    labels: np.ndarray | None = None
    doc_names: tuple[str, ...] | None = None
    text_options: TextOptions | None = None
    label_offsets: np.ndarray | None = None
    label_ids: np.ndarray | None = None
    label_names: tuple[str, ...] | None = None

    # ----------------------------------------------------------------------------------------
    # validation

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "labels", as_sequence(self.labels))    # a generator, as texts may be
        self._route_label_sets()
        vocab = _nfc_vocab(_str_tuple(self.vocab, "vocab"))
        put(self, "vocab", vocab)
        offsets = _int_array(self.doc_offsets, np.int64, "doc_offsets")
        put(self, "doc_offsets", offsets)
        ids = _int_array(self.word_ids, np.int32, "word_ids")
        put(self, "word_ids", ids)
        n = ids.shape[0]

        if offsets.shape[0] < 2:
            raise CorpusError("corpus has no documents (doc_offsets needs at least 2 entries)")
        if offsets[0] != 0:
            raise CorpusError(f"doc_offsets[0] must be 0, got {offsets[0]}")
        steps = np.diff(offsets)
        if (steps < 0).any():
            d = int(np.flatnonzero(steps < 0)[0])
            raise CorpusError(
                f"doc_offsets decrease at document {d}: "
                f"doc_offsets[{d}] = {offsets[d]} > doc_offsets[{d + 1}] = {offsets[d + 1]}"
            )
        if offsets[-1] != n:
            raise CorpusError(
                f"doc_offsets[-1] = {offsets[-1]} must equal the number of tokens {n}"
            )
        if n == 0:
            raise CorpusError("corpus has no tokens")

        v = len(vocab)
        bad = (ids < 0) | (ids >= v)
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            d = int(np.searchsorted(offsets, t, side="right")) - 1
            raise CorpusError(
                f"word id {int(ids[t])} at token {t} (document {d}, position "
                f"{t - int(offsets[d])}) is outside the vocabulary [0, {v})"
            )
        if len(set(vocab)) != v:
            self._raise_duplicate(vocab)
        if not all(w and "\n" not in w and "\r" not in w for w in vocab):
            i = next(i for i, w in enumerate(vocab) if not w or "\n" in w or "\r" in w)
            raise CorpusError(f"vocabulary word {i} ({vocab[i]!r}) is empty or holds a line "
                              "break (a vocabulary has one word per line: a saved model could "
                              "not be loaded)")

        if self.sentence_offsets is not None:
            s = _int_array(self.sentence_offsets, np.int64, "sentence_offsets")
            put(self, "sentence_offsets", s)
            if s.shape[0] < 2 or s[0] != 0 or s[-1] != n:
                raise CorpusError(
                    f"sentence_offsets must start at 0 and end at the number of tokens {n}"
                )
            ssteps = np.diff(s)
            if (ssteps <= 0).any():
                k = int(np.flatnonzero(ssteps <= 0)[0])
                raise CorpusError(
                    f"sentence_offsets must increase strictly (no empty sentences): "
                    f"sentence_offsets[{k}] = {s[k]}, sentence_offsets[{k + 1}] = {s[k + 1]}"
                )
            missing = ~np.isin(offsets, s)
            if missing.any():
                d = int(np.flatnonzero(missing)[0])
                raise CorpusError(
                    f"document {d} starts at token {offsets[d]}, which is not a sentence start"
                )

        d_count = offsets.shape[0] - 1
        if self.labels is not None:
            lab = _gold_labels(self.labels)      # label names: ids in first-seen order
            put(self, "labels", lab)
            if lab.shape[0] != d_count:
                raise CorpusError(f"labels has {lab.shape[0]} entries for {d_count} documents")
        if self.doc_names is not None:
            names = _str_tuple(self.doc_names, "doc_names")
            put(self, "doc_names", names)
            if len(names) != d_count:
                raise CorpusError(f"doc_names has {len(names)} entries for {d_count} documents")
        if self.text_options is not None and not isinstance(self.text_options, TextOptions):
            raise CorpusError(
                f"text_options must be a TextOptions or None, got {type(self.text_options).__name__}"
            )
        self._check_label_sets(d_count)

    def _route_label_sets(self) -> None:
        """``labels=`` given as one label set per document (lists of labels): store them as the
        multi-label fields (label_offsets, label_ids, label_names) instead."""
        if not _is_label_sets(self.labels):
            return
        if self.label_offsets is not None or self.label_ids is not None:
            raise CorpusError("give label sets either as labels= (lists of labels) or as "
                              "label_offsets/label_ids, not both")
        try:
            docs = len(self.doc_offsets) - 1
        except TypeError:
            docs = None                          # doc_offsets itself is checked next
        if docs is not None and len(self.labels) != docs:
            raise CorpusError(f"labels has {len(self.labels)} label sets for {docs} documents")
        offsets, ids, names = _label_sets_csr(self.labels, self.label_names)
        put = object.__setattr__
        put(self, "labels", None)
        put(self, "label_offsets", offsets)
        put(self, "label_ids", ids)
        put(self, "label_names", names)

    def _check_label_sets(self, d_count: int) -> None:
        """Validate the multi-label fields (CSR offsets, ids in range, no empty or repeated set)."""
        put = object.__setattr__
        if self.label_offsets is None and self.label_ids is None:
            if self.label_names is not None:
                raise CorpusError("label_names given without label sets (labels= or "
                                  "label_offsets/label_ids)")
            return
        if self.label_offsets is None or self.label_ids is None:
            raise CorpusError("label_offsets and label_ids must be given together")
        offs = _int_array(self.label_offsets, np.int64, "label_offsets")
        ids = _int_array(self.label_ids, np.int32, "label_ids")
        if offs.shape[0] != d_count + 1:
            raise CorpusError(f"label_offsets has {offs.shape[0]} entries for {d_count} documents "
                              f"(expected {d_count + 1})")
        if offs[0] != 0 or offs[-1] != ids.shape[0]:
            raise CorpusError(f"label_offsets must start at 0 and end at the number of label ids "
                              f"{ids.shape[0]}, got {offs[0]} and {offs[-1]}")
        steps = np.diff(offs)
        if (steps < 0).any():
            d = int(np.flatnonzero(steps < 0)[0])
            raise CorpusError(f"label_offsets decrease at document {d}")
        if (steps == 0).any():
            d = np.flatnonzero(steps == 0)
            raise CorpusError(f"document {int(d[0])} has an empty label set (every document "
                              f"needs at least one label; documents {_shown(d)})")
        if self.label_names is None:
            names = tuple(str(i) for i in range(int(ids.max()) + 1 if ids.size else 0))
        else:
            names = _nfc_vocab(_str_tuple(self.label_names, "label_names"), "label_names entries")
            if len(set(names)) != len(names):
                dup = next(n for i, n in enumerate(names) if n in names[:i])
                raise CorpusError(f"label_names has the label {dup!r} twice")
        doc = np.repeat(np.arange(d_count), steps)
        bad = (ids < 0) | (ids >= len(names))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise CorpusError(f"label id {int(ids[k])} of document {int(doc[k])} is outside "
                              f"label_names [0, {len(names)})")
        key = doc.astype(np.int64) * max(len(names), 1) + ids
        if np.unique(key).shape[0] != key.shape[0]:
            order = np.sort(key)
            k = int(order[np.flatnonzero(np.diff(order) == 0)[0]])
            raise CorpusError(f"document {k // max(len(names), 1)} repeats label "
                              f"{names[k % max(len(names), 1)]!r} in its label set")
        put(self, "label_offsets", offs)
        put(self, "label_ids", ids)
        put(self, "label_names", names)

    # ----------------------------------------------------------------------------------------
    # sizes and views

    @property
    def num_docs(self) -> int:
        """D, the number of documents (empty ones included)."""
        return int(self.doc_offsets.shape[0] - 1)

    @property
    def num_tokens(self) -> int:
        """N, the number of tokens."""
        return int(self.word_ids.shape[0])

    @property
    def num_words(self) -> int:
        """V, the vocabulary size."""
        return len(self.vocab)

    @property
    def num_sentences(self) -> int | None:
        """S, the number of sentences, or None if sentence boundaries are unknown."""
        return None if self.sentence_offsets is None else int(self.sentence_offsets.shape[0] - 1)

    @cached_property
    def doc_lengths(self) -> np.ndarray:
        """int64 [D] tokens per document."""
        return _frozen(np.diff(self.doc_offsets))

    @cached_property
    def doc_index(self) -> np.ndarray:
        """int32 [N] the document of each token."""
        return _frozen(np.repeat(np.arange(self.num_docs, dtype=np.int32), self.doc_lengths))

    def __len__(self) -> int:
        return self.num_docs

    def _check_doc(self, d: int) -> int:
        di = _as_int_value(d)
        if di is None or isinstance(d, float):
            raise TypeError(f"document index must be an int, got {d!r}")
        if not -self.num_docs <= di < self.num_docs:      # negative: from the end, as a list
            raise IndexError(f"document {di} out of range [-{self.num_docs}, {self.num_docs})")
        return di % self.num_docs

    def doc(self, d: int) -> np.ndarray:
        """The word ids of document ``d``.

        Args:
            d: the document's index, in [-D, D) (negative: from the end, as for a list).

        Returns:
            int32 [tokens of d], a read-only view of ``word_ids``."""
        d = self._check_doc(d)
        return self.word_ids[self.doc_offsets[d] : self.doc_offsets[d + 1]]

    def words(self, d: int) -> list[str]:
        """The tokens of document ``d`` as strings.

        Args:
            d: the document's index, in [-D, D) (negative: from the end, as for a list).

        Returns:
            The words of its tokens, in order."""
        return [self.vocab[i] for i in self.doc(d).tolist()]

    def word_counts(self) -> np.ndarray:
        """The corpus frequency of each word.

        Returns:
            int64 [V]: the tokens of each word id."""
        return np.bincount(self.word_ids, minlength=self.num_words).astype(np.int64)

    @property
    def num_label_names(self) -> int | None:
        """L, the number of distinct labels of the label sets, or None if unlabelled."""
        return None if self.label_names is None else len(self.label_names)

    def label_set(self, d: int) -> tuple[str, ...]:
        """The label set of document ``d``.

        Args:
            d: the document's index, in [-D, D) (negative: from the end, as for a list).

        Returns:
            Its labels (names) in the order given; () if the corpus has no label sets."""
        d = self._check_doc(d)
        if self.label_offsets is None:
            return ()
        ids = self.label_ids[self.label_offsets[d]:self.label_offsets[d + 1]]
        return tuple(self.label_names[i] for i in ids.tolist())

    @property
    def label_sets(self) -> list[tuple[str, ...]] | None:
        """The label set (names) of every document, or None if unlabelled."""
        if self.label_offsets is None:
            return None
        return [self.label_set(d) for d in range(self.num_docs)]

    def fingerprint(self, sentences: bool = False, version: int = 1) -> str:
        """SHA-256 hex digest of the tokens, document offsets and vocabulary.

        Any str hashes (lone surrogates too). Where a word holds a newline, the word lengths are
        hashed as well, so ("a\\nb", "c") and ("a", "b\\nc") differ; other vocabularies hash
        as they always did (fingerprints in existing model files stay valid).

        Args:
            sentences: hash the sentence boundaries too (a sentence-level model's chain needs them).
            version: 1, the digest of the whole arrays; 2 (what model files store since the
                multi-process release), ``"v2:"`` and a digest that any split of the documents
                into contiguous parts computes alike (``fingerprint_parts``), so a model fitted
                over P processes resumes over any other number.

        Returns:
            The hex digest."""
        return _fp.fingerprint(self, sentences, version)

    def fingerprint_counts(self, sentences: bool = False) -> np.ndarray:
        """The sizes a part of a split corpus contributes to its version-2 fingerprint.

        Args:
            sentences: count the sentences (else 0).

        Returns:
            int64 [4]: tokens, documents, sentences, label entries."""
        return _fp.fingerprint_counts(self, sentences)

    def fingerprint_parts(self, sentences: bool = False, offsets=(0, 0, 0, 0)) -> np.ndarray:
        """This corpus's part of the version-2 fingerprint of a larger corpus it is a part of.

        Args:
            sentences: hash the sentence boundaries too.
            offsets: where its documents start in the larger corpus (``fingerprint_counts``
                order: tokens, documents, sentences, label entries).

        Returns:
            uint64 [4]: sums (mod 2^64) over its tokens, documents, sentences and label entries
            of a 64-bit hash of (global position, content); the parts add up to the whole's."""
        return _fp.fingerprint_parts(self, sentences, offsets)

    def fingerprint_from_parts(self, sentences: bool, counts, parts) -> str:
        """The version-2 fingerprint of a split corpus from its parts' sums; the vocabulary
        and label names are this corpus's (the same in every part).

        Args:
            sentences: whether the parts hashed their sentence boundaries.
            counts: the totals, ``fingerprint_counts`` summed over the parts.
            parts: the parts' ``fingerprint_parts`` summed mod 2^64.

        Returns:
            ``fingerprint(sentences, version=2)`` of the whole corpus."""
        return _fp.fingerprint_from_parts(self, sentences, counts, parts)

    def require_nonempty_docs(self, model: str) -> None:
        """Refuse empty documents (for models that need tokens).

        Args:
            model: the model's name, for the message.

        Raises:
            EmptyDocumentError: a document is empty (naming the first ones)."""
        empty = np.flatnonzero(self.doc_lengths == 0)
        if empty.size:
            raise EmptyDocumentError(
                f"{model} cannot take empty documents: {empty.size} of {self.num_docs} documents "
                f"are empty (indices {_shown(empty)}); keep the others with "
                f"corpus.subset(np.flatnonzero(corpus.doc_lengths > 0))"
            )

    def subset(self, doc_indices: Sequence[int] | np.ndarray) -> Corpus:
        """A corpus of the given documents (in the given order), same vocabulary.

        Args:
            doc_indices: indices in [0, D), or a boolean mask of length D.

        Returns:
            The new Corpus; sentence offsets, labels and names follow their documents."""
        idx = np.asarray(doc_indices)
        if idx.dtype.kind == "b":
            if idx.shape != (self.num_docs,):
                raise CorpusError(
                    f"boolean mask has shape {idx.shape}, expected ({self.num_docs},)"
                )
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = np.zeros(0, dtype=np.int64)
        elif idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise CorpusError(
                f"doc_indices must be a 1-D sequence of ints, got dtype {idx.dtype}, "
                f"shape {idx.shape}"
            )
        idx = idx.astype(np.int64)
        bad = (idx < 0) | (idx >= self.num_docs)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise CorpusError(
                f"doc_indices[{k}] = {idx[k]} is outside [0, {self.num_docs})"
            )
        if idx.size == 0:
            raise CorpusError("corpus has no documents (empty selection)")
        starts = self.doc_offsets[idx]
        lengths = self.doc_lengths[idx]
        new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        word_ids = self.word_ids[_ranges(starts, lengths)]
        sentence_offsets = None
        if self.sentence_offsets is not None:
            ss = self.sentence_offsets[:-1]
            first = np.searchsorted(ss, self.doc_offsets[:-1], side="left")[idx]
            last = np.searchsorted(ss, self.doc_offsets[1:], side="left")[idx]
            sel = _ranges(first, last - first)
            shift = np.repeat(new_offsets[:-1] - starts, last - first)
            sentence_offsets = np.concatenate([ss[sel] + shift, [new_offsets[-1]]])
        return Corpus(
            word_ids=_frozen(word_ids),
            doc_offsets=_frozen(new_offsets),
            vocab=self.vocab,
            sentence_offsets=None if sentence_offsets is None else _frozen(sentence_offsets),
            labels=None if self.labels is None else _frozen(self.labels[idx]),
            doc_names=None if self.doc_names is None else tuple(self.doc_names[i] for i in idx),
            text_options=self.text_options,
            **self._label_sets_of(idx),
        )

    def _label_sets_of(self, idx: np.ndarray) -> dict[str, Any]:
        """The multi-label fields of the documents `idx` (same label_names, so label ids keep
        their meaning across a train / held-out split)."""
        if self.label_offsets is None:
            return {}
        starts = self.label_offsets[idx]
        lengths = np.diff(self.label_offsets)[idx]
        return dict(label_offsets=_frozen(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)),
                    label_ids=_frozen(self.label_ids[_ranges(starts, lengths)]),
                    label_names=self.label_names)

    def __repr__(self) -> str:
        extra = ""
        if self.sentence_offsets is not None:
            extra += f", num_sentences={self.num_sentences}"
        if self.labels is not None:
            extra += f", num_labels={len(np.unique(self.labels))}"
        if self.label_names is not None:
            extra += f", label_sets over {len(self.label_names)} labels"
        return (
            f"Corpus(num_docs={self.num_docs}, num_tokens={self.num_tokens}, "
            f"num_words={self.num_words}{extra})"
        )

    # ----------------------------------------------------------------------------------------
    # constructors

    @classmethod
    def from_arrays(
        cls,
        word_ids: Any,
        doc_offsets: Any,
        vocab: Sequence[str],
        *,
        sentence_offsets: Any = None,
        labels: Any = None,
        doc_names: Sequence[str] | None = None,
        text_options: TextOptions | None = None,
        label_names: Sequence[str] | None = None,
    ) -> Corpus:
        """Validate and wrap arrays.

        Args:
            word_ids, doc_offsets, vocab, sentence_offsets, doc_names, text_options: the class
                attributes of those names.
            labels: one int per document, or one label set (a list of str / int labels) per
                document for multi-label models.
            label_names: fixes the id of each label of the label sets.

        Returns:
            The validated Corpus (CorpusError names what is wrong and where)."""
        return cls(
            word_ids=word_ids,
            doc_offsets=doc_offsets,
            vocab=vocab,
            sentence_offsets=sentence_offsets,
            labels=labels,
            doc_names=doc_names,
            text_options=text_options,
            label_names=None if label_names is None else _str_tuple(label_names, "label_names"),
        )

    @classmethod
    def from_token_lists(
        cls,
        docs: Iterable[Sequence[str]] | Iterable[Sequence[Sequence[str]]],
        *,
        vocab: Sequence[str] | None = None,
        unknown: Literal["error", "drop"] = "error",
        sentences: bool = False,
        labels: Any = None,
        doc_names: Sequence[str] | None = None,
        label_names: Sequence[str] | None = None,
    ) -> Corpus:
        """Build from documents given as lists of string tokens.

        Tokens and ``vocab`` are NFC-normalised (as ``from_texts`` normalises texts), so a
        decomposed "école" is the composed word.

        Args:
            docs: one list of tokens per document; with ``sentences=True`` one list of
                sentences per document, each a list of tokens.
            vocab: the vocabulary; None builds it in first-seen order.
            unknown: a token outside ``vocab`` raises CorpusError ("error") or is dropped
                ("drop").
            sentences: whether documents are given as sentences (kept as sentence_offsets).
            labels: one int per document, or one label set (list of labels) per document.
            doc_names: a name per document, or None.
            label_names: fixes the label ids of label sets (e.g. a training corpus's).

        Returns:
            The validated Corpus."""
        if unknown not in ("error", "drop"):
            raise ParameterError(f"unknown must be 'error' or 'drop', got {unknown!r}")
        if isinstance(docs, (str, bytes)):
            raise CorpusError("docs must be an iterable of token lists, got a single string")
        _iterable(docs, "docs must be an iterable of token lists")
        if vocab is None:
            word_to_id: dict[str, int] = {}
            grow = True
        else:
            vocab_t = _str_tuple(vocab, "vocab")
            word_to_id = {w: i for i, w in enumerate(vocab_t)}
            if len(word_to_id) != len(vocab_t):
                cls._raise_duplicate(vocab_t)
            vocab_t = _nfc_vocab(vocab_t)        # NFC, as the tokens below
            word_to_id = {w: i for i, w in enumerate(vocab_t)}
            grow = False
        nfc = unicodedata.normalize

        ids: list[int] = []
        doc_offsets = [0]
        sent_offsets = [0]

        def add_tokens(tokens: Any, where: str) -> None:
            if isinstance(tokens, (str, bytes)):
                raise CorpusError(f"{where} is a single string; expected a sequence of tokens")
            try:
                items = list(tokens)
            except TypeError:
                raise CorpusError(
                    f"{where} must be a sequence of tokens, got {type(tokens).__name__}"
                ) from None
            for p, tok in enumerate(items):
                if not isinstance(tok, str):
                    raise CorpusError(
                        f"{where}, position {p}: token must be a str, got "
                        f"{type(tok).__name__} ({tok!r})"
                    )
                if not tok or "\n" in tok or "\r" in tok:
                    raise CorpusError(f"{where}, position {p}: token {tok!r} is empty or holds a "
                                      "line break (a vocabulary has one word per line)")
                i = word_to_id.get(tok)
                if i is None and not tok.isascii():   # NFC, as from_texts and transform do
                    tok = nfc("NFC", tok)
                    i = word_to_id.get(tok)
                if i is None:
                    if grow:
                        i = word_to_id[tok] = len(word_to_id)
                    elif unknown == "drop":
                        continue
                    else:
                        raise CorpusError(
                            f"{where}, position {p}: token {tok!r} is not in the vocabulary "
                            f"(pass unknown='drop' to drop such tokens)"
                        )
                ids.append(i)

        for d, doc in enumerate(docs):
            if sentences:
                if isinstance(doc, (str, bytes)):
                    raise CorpusError(
                        f"document {d} is a single string; expected a list of sentences"
                    )
                try:
                    sents = list(doc)
                except TypeError:
                    raise CorpusError(
                        f"document {d} must be a list of sentences, got {type(doc).__name__}"
                    ) from None
                for s, sent in enumerate(sents):
                    add_tokens(sent, f"document {d}, sentence {s}")
                    if len(ids) > sent_offsets[-1]:
                        sent_offsets.append(len(ids))
            else:
                add_tokens(doc, f"document {d}")
            doc_offsets.append(len(ids))

        final_vocab = tuple(word_to_id) if grow else vocab_t
        return cls(
            word_ids=_frozen(np.asarray(ids, dtype=np.int32)),
            doc_offsets=_frozen(np.asarray(doc_offsets, dtype=np.int64)),
            vocab=final_vocab,
            sentence_offsets=_frozen(np.asarray(sent_offsets, dtype=np.int64))
            if sentences
            else None,
            labels=labels,
            doc_names=doc_names,
            label_names=None if label_names is None else _str_tuple(label_names, "label_names"),
        )

    @staticmethod
    def _raise_duplicate(vocab: tuple[str, ...]) -> None:
        seen: dict[str, int] = {}
        for i, w in enumerate(vocab):
            if w in seen:
                raise CorpusError(f"vocab has duplicate word {w!r} at ids {seen[w]} and {i}")
            seen[w] = i

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        *,
        tokenizer: Callable[[str], Sequence[str]] | None = None,
        lowercase: bool = True,
        stop_words: Literal["english"] | Iterable[str] | None = "english",
        min_df: int | float = 1,
        max_df: int | float = 1.0,
        min_length: int = 2,
        sentences: bool = False,
        labels: Any = None,
        doc_names: Sequence[str] | None = None,
        label_names: Sequence[str] | None = None,
    ) -> Corpus:
        """Tokenise raw texts and build a corpus.

        Steps: (split into sentences) -> NFC-normalise -> tokenise -> lowercase -> drop tokens
        shorter than ``min_length`` -> drop stop words -> keep words whose document frequency lies in
        [min_df, max_df]. The vocabulary is ordered by descending corpus frequency, then
        alphabetically. Documents left empty are kept. The per-text options are kept as
        ``corpus.text_options`` (:class:`TextOptions`), so a model fitted to the corpus
        tokenises new texts the same way.

        Args:
            texts: the documents' raw texts.
            tokenizer: text -> tokens; None: :func:`default_tokenizer`.
            lowercase, min_length: lowercase the tokens; the shortest token kept.
            stop_words: "english" (:data:`ENGLISH_STOP_WORDS`), a collection of words, or None.
            min_df, max_df: the document frequencies kept (an int is a count of documents, a
                float a fraction of them).
            sentences: split texts into sentences (``split_sentences``; empty ones dropped).
            labels, doc_names, label_names: as in :meth:`from_token_lists`.

        Returns:
            The validated Corpus (CorpusError: no texts, or no token left).

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["The cat sat. A dog ran!", "Cats and dogs."],
            ...                               sentences=True)
            >>> corpus.vocab, corpus.num_sentences
            (('cat', 'cats', 'dog', 'dogs', 'ran', 'sat'), 3)
        """
        if isinstance(texts, (str, bytes)):
            raise CorpusError("texts must be an iterable of str, got a single string")
        _iterable(texts, "texts must be an iterable of str")
        options = TextOptions.make(tokenizer, lowercase, stop_words, min_length)
        _check_frac_or_count(min_df, "min_df")
        _check_frac_or_count(max_df, "max_df")
        tokens_of = options._pipeline()

        # docs: list of sentences (each a token list); without sentences, one "sentence" per doc
        docs: list[list[list[str]]] = []
        for d, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"texts[{d}] must be a str, got {type(text).__name__}")
            if sentences:
                docs.append([tokens_of(s, d) for s in split_sentences(text)])
            else:
                docs.append([tokens_of(text, d)])
        num_docs = len(docs)
        if num_docs == 0:
            raise CorpusError("corpus has no documents (no texts given)")

        tf: Counter[str] = Counter()
        df: Counter[str] = Counter()
        for doc in docs:
            seen: set[str] = set()
            for sent in doc:
                tf.update(sent)
                seen.update(sent)
            df.update(seen)
        lo = min_df * num_docs if isinstance(min_df, (float, np.floating)) else min_df
        hi = max_df * num_docs if isinstance(max_df, (float, np.floating)) else max_df
        kept = [w for w in tf if lo <= df[w] <= hi]
        if not kept:
            raise CorpusError(
                f"corpus has no tokens left after filtering ({len(tf)} distinct words before "
                f"min_df={min_df}, max_df={max_df}; check stop_words, min_length, tokenizer)"
            )
        kept.sort(key=lambda w: (-tf[w], w))
        vocab = tuple(kept)
        if sentences:
            token_docs: Iterable[Any] = docs
        else:
            token_docs = (doc[0] for doc in docs)
        corpus = cls.from_token_lists(
            token_docs,
            vocab=vocab,
            unknown="drop",
            sentences=sentences,
            labels=labels,
            doc_names=doc_names,
            label_names=label_names,
        )
        return dataclasses.replace(corpus, text_options=options)

    @classmethod
    def from_bow(
        cls,
        docs: Iterable[Iterable[tuple[int, int | float]]],
        *,
        vocab: Sequence[str] | Mapping[int, str] | None = None,
        num_words: int | None = None,
        labels: Any = None,
        doc_names: Sequence[str] | None = None,
    ) -> Corpus:
        """Build from gensim-style bag-of-words.

        Args:
            docs: each document a list of ``(word_id, count)``; counts are non-negative integers
                (integral floats such as 2.0 are accepted). Each pair becomes ``count``
                repeated tokens, in order.
            vocab: a sequence of words or a mapping id -> word with ids 0..V-1 (e.g. a gensim
                Dictionary); None: the words are ``str(id)``.
            num_words: V without a vocab (default: the largest id + 1).
            labels, doc_names: as in :meth:`from_token_lists`.

        Returns:
            The validated Corpus.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_bow([[(0, 2), (1, 1)], [(2, 3)]], vocab=["x", "y", "z"])
            >>> corpus.words(0), corpus.num_tokens
            (['x', 'x', 'y'], 6)
        """
        if isinstance(docs, (str, bytes)):
            raise CorpusError("docs must be an iterable of (word_id, count) lists")
        _iterable(docs, "docs must be an iterable of (word_id, count) lists")
        if num_words is not None:
            if (isinstance(num_words, (bool, np.bool_))
                    or not isinstance(num_words, (int, np.integer)) or num_words < 0):
                raise ParameterError(f"num_words must be a non-negative int, got {num_words!r}")
            num_words = int(num_words)
        vocab_t: tuple[str, ...] | None = None
        if vocab is not None:
            if isinstance(vocab, Mapping):
                keys = list(vocab.keys())
                for k in keys:
                    if _as_int_value(k) is None or isinstance(k, float):
                        raise CorpusError(f"vocab mapping key {k!r} is not an int word id")
                    if int(k) < 0:
                        raise CorpusError(f"vocab mapping key {k!r} is negative; word ids are "
                                          f"0..V-1")
                present = set(int(k) for k in keys)
                size = max(present) + 1 if present else 0
                if len(present) != size:
                    missing = next(i for i in range(size) if i not in present)
                    raise CorpusError(
                        f"vocab mapping must cover ids 0..{size - 1}; id {missing} is missing"
                    )
                vocab_t = _str_tuple((vocab[i] for i in range(size)), "vocab")
            else:
                vocab_t = _str_tuple(vocab, "vocab")
            if num_words is not None and num_words != len(vocab_t):
                raise CorpusError(
                    f"num_words = {num_words} disagrees with the vocabulary size {len(vocab_t)}"
                )
        limit = len(vocab_t) if vocab_t is not None else num_words

        ids: list[int] = []
        counts: list[int] = []
        doc_offsets = [0]  # in pairs first, converted to tokens below
        for d, doc in enumerate(docs):
            try:
                entries = list(doc)
            except TypeError:
                raise CorpusError(
                    f"document {d} must be a list of (word_id, count) pairs, "
                    f"got {type(doc).__name__}"
                ) from None
            for e, entry in enumerate(entries):
                where = f"document {d}, entry {e}"
                try:
                    wid, cnt = entry
                except (TypeError, ValueError):
                    raise CorpusError(
                        f"{where}: expected a (word_id, count) pair, got {entry!r}"
                    ) from None
                w = _as_int_value(wid)
                if w is None:
                    raise CorpusError(f"{where}: word id {wid!r} is not an integer")
                if w < 0:
                    raise CorpusError(f"{where}: negative word id {w}")
                if limit is not None and w >= limit:
                    what = "vocabulary" if vocab_t is not None else "num_words"
                    raise CorpusError(
                        f"{where}: word id {w} is outside the {what} (size {limit})"
                    )
                if w > _INT32_MAX:
                    raise CorpusError(f"{where}: word id {w} is too large")
                c = _as_int_value(cnt)
                if c is None:
                    raise CorpusError(
                        f"{where}: count {cnt!r} for word id {w} is not an integer"
                    )
                if c < 0:
                    raise CorpusError(f"{where}: negative count {c} for word id {w}")
                if c > _INT32_MAX:
                    raise CorpusError(f"{where}: count {c} for word id {w} is too large")
                ids.append(w)
                counts.append(c)
            doc_offsets.append(len(ids))
        if len(doc_offsets) == 1:
            raise CorpusError("corpus has no documents (no documents given)")
        ids_a = np.asarray(ids, dtype=np.int32)
        counts_a = np.asarray(counts, dtype=np.int64)
        total = int(counts_a.sum())
        if total > _INT32_MAX - 1:
            raise CorpusError(
                f"the counts add up to {total} tokens, more than a corpus holds ({_INT32_MAX - 1})"
            )
        if vocab_t is None:
            size = num_words if num_words is not None else (int(ids_a.max()) + 1 if ids else 0)
            vocab_t = tuple(str(i) for i in range(size))
        token_end = np.concatenate([[0], np.cumsum(counts_a)]).astype(np.int64)
        offsets = token_end[np.asarray(doc_offsets, dtype=np.int64)]
        return cls(
            word_ids=_frozen(np.repeat(ids_a, counts_a)),
            doc_offsets=_frozen(offsets),
            vocab=vocab_t,
            labels=labels,
            doc_names=doc_names,
        )

    from_sparse = classmethod(_from_sparse)   # a document-term matrix (jaxtopics/sparse.py)

    @classmethod
    def from_ldac(
        cls,
        path: str | os.PathLike[str],
        vocab: str | os.PathLike[str] | Sequence[str] | None = None,
    ) -> Corpus:
        """Read an LDA-C file (:func:`jaxtopics.io.read_ldac`).

        Args:
            path: the LDA-C file.
            vocab: a vocabulary file path (one word per line), a word sequence, or None (words
                named ``str(id)``).

        Returns:
            The validated Corpus."""
        vocab_t: tuple[str, ...] | None
        if vocab is None:
            vocab_t = None
        elif isinstance(vocab, (str, os.PathLike)):
            vocab_t = _io.read_vocab(vocab)
        else:
            vocab_t = _str_tuple(vocab, "vocab")
        # every pair's id is checked against the vocabulary, a pair with count 0 too
        word_ids, doc_offsets = _io.read_ldac(
            path, num_words=None if vocab_t is None else len(vocab_t)
        )
        _require_documents(path, doc_offsets[1:])
        if vocab_t is None:
            size = int(word_ids.max()) + 1 if word_ids.size else 0
            vocab_t = tuple(str(i) for i in range(size))
        return cls(word_ids=_frozen(word_ids), doc_offsets=_frozen(doc_offsets), vocab=vocab_t)

    @classmethod
    def from_uci(
        cls, docword_path: str | os.PathLike[str], vocab_path: str | os.PathLike[str]
    ) -> Corpus:
        """Read UCI bag-of-words files (:func:`jaxtopics.io.read_uci`).

        Args:
            docword_path, vocab_path: the ``docword.*.txt`` and ``vocab.*.txt`` files.

        Returns:
            The validated Corpus."""
        word_ids, doc_offsets, vocab = _io.read_uci(docword_path, vocab_path)
        return cls(word_ids=_frozen(word_ids), doc_offsets=_frozen(doc_offsets), vocab=vocab)

    @classmethod
    def from_jsonl(
        cls,
        path: str | os.PathLike[str],
        text_key: str = "text",
        label_key: str | None = None,
        **from_texts_kwargs: Any,
    ) -> Corpus:
        """Read JSON lines (one object per document) and tokenise with :meth:`from_texts`.

        Args:
            path: the ``.jsonl`` file.
            text_key: the key of each object's text.
            label_key: the key of its label, or None. Integer labels are kept; other labels
                (e.g. strings) get ids in first-seen order.
            **from_texts_kwargs: :meth:`from_texts`'s options.

        Returns:
            The validated Corpus."""
        texts, labels = _io.read_jsonl(path, text_key=text_key, label_key=label_key)
        _require_documents(path, texts)
        if labels is not None:
            if "labels" in from_texts_kwargs:
                raise ParameterError("give either label_key or labels, not both")
            from_texts_kwargs["labels"] = np.asarray(_encode_labels(labels), dtype=np.int64)
        return cls.from_texts(texts, **from_texts_kwargs)

    @classmethod
    def from_text_file(cls, path: str | os.PathLike[str], labelled: bool = False,
                       **from_texts_kwargs: Any) -> Corpus:
        """Read one document per line and tokenise with :meth:`from_texts`.

        Args:
            path: the text file (a blank line is an empty document).
            labelled: read TopicModel4J's labelled lines ``label1--label2<TAB>text``: each
                document's label set (for multi-label models such as DP-MRM) before the tab.
            **from_texts_kwargs: :meth:`from_texts`'s options.

        Returns:
            The validated Corpus."""
        if not labelled:
            return cls.from_texts(_require_documents(path, _io.read_text_lines(path)),
                                  **from_texts_kwargs)
        if "labels" in from_texts_kwargs:
            raise ParameterError("labelled=True reads the labels from the file; do not pass labels=")
        label_sets, texts = _io.read_labelled_text_lines(path)
        _require_documents(path, texts)
        return cls.from_texts(texts, labels=label_sets, **from_texts_kwargs)
