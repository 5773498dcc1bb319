"""Corpus fingerprints: the SHA-256 digest (FIPS 180-4) a model file stores to recognise the
corpus it was fitted to. Version 1 hashes the whole arrays; version 2 sums, modulo 2^64, a
64-bit hash of (global position, value) over every token, document, sentence and label entry,
mixed by the splitmix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014), so that the processes of a multi-process fit, each holding a
contiguous part of the documents, compute parts that add up to the whole corpus's digest. The
functions take anything with :class:`jaxtopics.corpus.Corpus`'s array fields; the ``Corpus``
methods of the same names document them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = ["fingerprint", "fingerprint_counts", "fingerprint_from_parts", "fingerprint_parts"]

_HASH_CHUNK = 1 << 20                # rows hashed at a time by _hash_sums (bounded temporaries)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, a bijective 64-bit mixer, elementwise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class _Positions:
    """The column start, start + 1, ..., start + n - 1 (int64), made a chunk at a time: hashing
    a corpus's token positions then holds no [N] int64 array (8 bytes per token)."""

    def __init__(self, start: int, n: int):
        self.start, self.shape = start, (n,)

    def __getitem__(self, chunk: slice) -> np.ndarray:
        lo, hi, _ = chunk.indices(self.shape[0])
        return np.arange(self.start + lo, self.start + hi, dtype=np.int64)


def _hash_sums(family: int, *columns: np.ndarray | _Positions) -> np.ndarray:
    """uint64 [2]: for two seeds of `family`, the sum (mod 2^64) over rows of the chained mix
    of the row's columns (non-negative integers): an order-sensitive digest that adds up over
    any split of the rows."""
    out = [0, 0]
    n = columns[0].shape[0]
    for lo in range(0, n, _HASH_CHUNK):
        cols = [np.asarray(c[lo:lo + _HASH_CHUNK]).astype(np.uint64) for c in columns]
        for j in range(2):
            h = np.full(cols[0].shape, 0x9E3779B97F4A7C15 * (2 * family + j + 1) % 2**64, np.uint64)
            for c in cols:
                h = _mix64(h ^ c)
            out[j] = (out[j] + int(h.sum(dtype=np.uint64))) % 2**64
    return np.asarray(out, np.uint64)


def fingerprint(corpus: Any, sentences: bool = False, version: int = 1) -> str:
    """``Corpus.fingerprint``: the version-1 digest of the whole arrays, or the version-2 one
    (``"v2:..."``) from the corpus's own counts and parts."""
    if version == 2:
        return fingerprint_from_parts(corpus, sentences, fingerprint_counts(corpus, sentences),
                                      fingerprint_parts(corpus, sentences))
    if version != 1:
        raise ParameterError(f"fingerprint version must be 1 or 2, got {version!r}")
    h = hashlib.sha256()
    h.update(b"jaxtopics-corpus-v1\0")
    h.update(np.asarray([corpus.num_tokens, corpus.num_docs, corpus.num_words], "<i8").tobytes())
    h.update(corpus.word_ids.astype("<i4", copy=False).tobytes())
    h.update(corpus.doc_offsets.astype("<i8", copy=False).tobytes())
    h.update("\n".join(corpus.vocab).encode("utf-8", "surrogatepass"))
    if any("\n" in w for w in corpus.vocab):
        h.update(np.asarray([len(w) for w in corpus.vocab], "<i8").tobytes())
    if sentences:
        h.update(b"sentences\0")
        if corpus.sentence_offsets is not None:
            h.update(corpus.sentence_offsets.astype("<i8", copy=False).tobytes())
    if corpus.label_offsets is not None:     # multi-label corpora only (others unchanged)
        h.update(b"\0label-sets\0")
        h.update(corpus.label_offsets.astype("<i8", copy=False).tobytes())
        h.update(corpus.label_ids.astype("<i4", copy=False).tobytes())
        h.update("\n".join(corpus.label_names).encode("utf-8"))
    return h.hexdigest()


def fingerprint_counts(corpus: Any, sentences: bool = False) -> np.ndarray:
    """int64 [4]: tokens, documents, sentences (0 unless `sentences`), label entries."""
    s = corpus.num_sentences if sentences and corpus.sentence_offsets is not None else 0
    labels = 0 if corpus.label_ids is None else corpus.label_ids.shape[0]
    return np.asarray([corpus.num_tokens, corpus.num_docs, s, labels], np.int64)


def fingerprint_parts(corpus: Any, sentences: bool = False, offsets=(0, 0, 0, 0)) -> np.ndarray:
    """uint64 sums (mod 2^64) of the position-and-content hashes of `corpus`'s tokens,
    documents, sentences and label entries, placed at global `offsets`."""
    t0, d0, s0, l0 = (int(x) for x in offsets)
    docs = d0 + np.arange(corpus.num_docs, dtype=np.int64)
    parts = [_hash_sums(1, _Positions(t0, corpus.num_tokens), corpus.word_ids),
             _hash_sums(2, docs, t0 + corpus.doc_offsets[:-1])]
    if sentences and corpus.sentence_offsets is not None:
        parts.append(_hash_sums(3, s0 + np.arange(corpus.num_sentences, dtype=np.int64),
                                t0 + corpus.sentence_offsets[:-1]))
    if corpus.label_offsets is not None:
        parts.append(_hash_sums(4, docs, l0 + corpus.label_offsets[:-1]))
        parts.append(_hash_sums(5, _Positions(l0, corpus.label_ids.shape[0]),
                                corpus.label_ids))
    return np.concatenate(parts)


def fingerprint_from_parts(corpus: Any, sentences: bool, counts, parts) -> str:
    """The version-2 digest from the totals and the parts' sums (mod 2^64)."""
    h = hashlib.sha256()
    h.update(b"jaxtopics-corpus-v2\0")
    h.update(np.asarray([*counts, corpus.num_words, int(bool(sentences))], "<i8").tobytes())
    h.update(np.asarray([len(w) for w in corpus.vocab], "<i8").tobytes())
    h.update("\n".join(corpus.vocab).encode("utf-8", "surrogatepass"))
    if corpus.label_names is not None:
        h.update(b"\0label-names\0" + "\n".join(corpus.label_names).encode("utf-8", "surrogatepass"))
    h.update(np.asarray(parts, np.uint64).astype("<u8").tobytes())
    return "v2:" + h.hexdigest()
