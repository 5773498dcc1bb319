"""Document-term matrices as a corpus: :meth:`jaxtopics.Corpus.from_sparse` (scikit-learn's
``CountVectorizer`` output, gensim's ``corpus2csc`` transposed, any scipy sparse or numpy dense
matrix of counts). Its checks of what it is given live here; this module does not import
``jaxtopics.corpus`` (the method builds the Corpus through the class it is called on), so it sits
below it, as ``jaxtopics.corpus_checks`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .corpus_checks import _frozen, _str_tuple
from .errors import CorpusError

__all__ = ["document_term_counts"]   # and Corpus.from_sparse (from_sparse below)

_INT32_MAX = int(np.iinfo(np.int32).max)


def document_term_counts(X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """The nonzero counts of a document-term matrix, row by row, checked.

    Args:
        X: a scipy sparse matrix or array (CSR, CSC, COO, ... any format with ``tocsr``) or
            anything numpy reads as a 2-D array (a list of lists, a dense ndarray); rows are
            documents, columns words. Counts are non-negative integers of any int, unsigned,
            bool or float dtype (integral floats such as 2.0 are accepted).

    Returns:
        (indptr int64 [D+1], word ids int32 [nnz], counts int64 [nnz], (D, V)): within a row
        the word ids increase; zeros are left out (duplicate COO entries are summed).

    Raises:
        CorpusError: not 2-D, not numeric, a negative, non-integral, NaN or infinite count, or
            more tokens than a corpus holds."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):          # scipy sparse, matrix or array
        csr = X.tocsr(copy=True) if X.format == "csr" else X.tocsr()
        csr.sum_duplicates()                                 # also sorts the indices
        shape = tuple(int(s) for s in csr.shape)
        data, indices, indptr = np.asarray(csr.data), np.asarray(csr.indices), np.asarray(csr.indptr)
    else:
        try:
            dense = np.asarray(X)
        except (TypeError, ValueError) as e:
            raise CorpusError(f"X must be a document-term matrix (scipy sparse or a 2-D array), "
                              f"got {type(X).__name__} ({e})") from None
        if dense.ndim != 2:
            raise CorpusError(f"X must be a 2-D document-term matrix (documents x words), got "
                              f"{dense.ndim} dimension(s), shape {dense.shape}")
        shape = tuple(int(s) for s in dense.shape)
        _check_dtype(dense.dtype)
        rows, cols = np.nonzero(dense)
        data, indices = dense[rows, cols], cols
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    if len(shape) != 2:
        raise CorpusError(f"X must be 2-D, got shape {shape}")
    _check_dtype(data.dtype)
    doc_of = np.repeat(np.arange(shape[0]), np.diff(indptr))
    if data.dtype.kind == "f":
        bad = ~np.isfinite(data)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise CorpusError(f"X[{int(doc_of[k])}, {int(indices[k])}] = {data[k]} is not a "
                              f"finite count")
    neg = data < 0
    if neg.any():
        k = int(np.flatnonzero(neg)[0])
        raise CorpusError(f"X[{int(doc_of[k])}, {int(indices[k])}] = {data[k]} is negative; "
                          f"counts are non-negative integers")
    if data.dtype.kind == "f":
        frac = data != np.floor(data)
        if frac.any():
            k = int(np.flatnonzero(frac)[0])
            raise CorpusError(
                f"X[{int(doc_of[k])}, {int(indices[k])}] = {data[k]} is not an integer count "
                f"(topic models count tokens: give raw counts, e.g. CountVectorizer's, not "
                f"tf-idf weights or normalised rows)")
    if data.size and float(data.max()) > _INT32_MAX:
        k = int(np.argmax(data))
        raise CorpusError(f"X[{int(doc_of[k])}, {int(indices[k])}] = {data[k]} is too large")
    counts = data.astype(np.int64)
    total = int(counts.sum())
    if total > _INT32_MAX - 1:
        raise CorpusError(f"X holds {total} tokens, more than a corpus holds ({_INT32_MAX - 1})")
    keep = counts > 0
    if not keep.all():                                       # explicit zeros of a sparse matrix
        per_row = np.bincount(doc_of[keep], minlength=shape[0])
        indptr = np.concatenate([[0], np.cumsum(per_row)])
        counts, indices = counts[keep], indices[keep]
    return (np.asarray(indptr, np.int64), np.asarray(indices, np.int32), counts, shape)


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind not in "biuf":
        raise CorpusError(f"X must hold numbers (counts), got dtype {dtype}")


def from_sparse(cls: Any, X: Any, vocab: Sequence[str] | None = None, *, labels: Any = None,
                doc_names: Sequence[str] | None = None) -> Any:
    """Build a corpus from a document-term matrix of counts (rows documents, columns words).

    Accepts any scipy sparse matrix or array (CSR, CSC, COO, ...) and dense numpy arrays, of
    any int, unsigned, bool or float dtype whose values are non-negative integers (2.0 is a
    count of 2). Document order is kept. A count c of word w becomes c tokens of w, words in
    column order within a document (a bag of words has no token order). Empty rows are kept as
    empty documents (every model takes them; DMM and DPMM seat each in a cluster too; drop
    them with ``corpus.subset(corpus.doc_lengths > 0)``); all-zero columns stay words of the
    vocabulary that no token uses.

    Args:
        X: the [D, V] matrix of counts, e.g. ``CountVectorizer().fit_transform(texts)``.
        vocab: V words naming the columns (``vectorizer.get_feature_names_out()``); None: the
            columns' ids as words, ``"0"``, ``"1"``, ...
        labels, doc_names: as in :meth:`from_token_lists` (one per row).

    Returns:
        The validated Corpus.

    Raises:
        CorpusError: X is not a 2-D matrix of non-negative integer counts (naming the entry),
            `vocab` does not have one word per column, or X holds no token at all.

    Example:
        >>> import numpy as np
        >>> import jaxtopics as jt
        >>> X = np.array([[2, 0, 1], [0, 0, 0], [0, 3, 0]])
        >>> corpus = jt.Corpus.from_sparse(X, vocab=["apple", "car", "pie"])
        >>> corpus.words(0), corpus.doc_lengths.tolist()
        (['apple', 'apple', 'pie'], [3, 0, 3])
    """
    indptr, indices, counts, (d, v) = document_term_counts(X)
    if vocab is None:
        words = tuple(str(i) for i in range(v))
    else:
        if hasattr(vocab, "tolist") and not isinstance(vocab, str):   # numpy / pandas arrays
            vocab = vocab.tolist()
        words = _str_tuple(vocab, "vocab")
        if len(words) != v:
            raise CorpusError(f"vocab has {len(words)} words for the {v} columns of X (one word "
                              f"per column, in column order)")
    if d == 0:
        raise CorpusError("X has no rows (no documents)")
    if counts.sum() == 0:
        raise CorpusError(f"X holds no token: all of its {d} x {v} counts are 0")
    tokens_end = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return cls(word_ids=_frozen(np.repeat(indices, counts).astype(np.int32)),
               doc_offsets=_frozen(tokens_end[indptr]), vocab=words, labels=labels,
               doc_names=doc_names)
