"""The checks and encodings a :class:`~jaxtopics.corpus.Corpus` applies to what it is given:
integer arrays coerced and range-checked (``_int_array``), string tuples, integer values,
``min_df`` / ``max_df`` counts or fractions, a file that holds no documents, and the labels of
documents: one gold label per document (``_gold_labels``: int64 ids, non-integers in first-seen
order) or one label set per document (``_is_label_sets``; ``_label_sets_csr``: CSR offsets,
label ids and label names). Each raises a ``CorpusError`` (or ``ParameterError``) naming what
and where.

Private helpers of ``jaxtopics.corpus`` (and of the per-process readers of
``jaxtopics.processes``); this module sits below ``corpus`` and never imports it.
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import CorpusError, ParameterError
from .text import nfc_vocab as _nfc_vocab

__all__: list[str] = []

_NUM_SHOWN = 5  # how many offending indices an error message lists


# --------------------------------------------------------------------------------------------
# arrays and values


def _shown(indices: Sequence[int] | np.ndarray) -> str:
    idx = [int(i) for i in indices[:_NUM_SHOWN]]
    more = ", ..." if len(indices) > _NUM_SHOWN else ""
    return ", ".join(map(str, idx)) + more


def _int_array(x: Any, dtype: type[np.integer], name: str) -> np.ndarray:
    """Coerce ``x`` to a 1-D integer array, rejecting non-integral or out-of-range values."""
    if isinstance(x, np.ndarray) and x.dtype == dtype and not x.flags.writeable and x.flags.owndata:
        return x if x.ndim == 1 else _int_array(np.array(x), dtype, name)
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as e:
            raise CorpusError(f"{name}: cannot be read as an array ({e})") from None
    if arr.ndim != 1:
        raise CorpusError(f"{name} must be 1-D, got shape {arr.shape}")
    kind = arr.dtype.kind
    info = np.iinfo(dtype)
    if kind == "b":
        raise CorpusError(f"{name} must hold integers, got booleans")
    if kind in "iu":
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            k = int(np.flatnonzero((arr < info.min) | (arr > info.max))[0])
            raise CorpusError(f"{name}[{k}] = {arr[k]} does not fit in {np.dtype(dtype).name}")
    elif kind == "f":
        bad = ~np.isfinite(arr)
        bad |= np.where(bad, False, np.floor(np.where(bad, 0.0, arr)) != arr)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise CorpusError(f"{name}[{k}] = {arr[k]} is not an integer")
        # compare in float64 against exact powers of two: float(2**63 - 1) rounds up to 2**63,
        # so "arr > info.max" would let 2.0**63 through to a cast that wraps it negative
        lo, hi_excl = float(info.min), 2.0 ** (np.iinfo(dtype).bits - 1)
        out_of_range = (arr < lo) | (arr >= hi_excl)
        if out_of_range.any():
            k = int(np.flatnonzero(out_of_range)[0])
            raise CorpusError(f"{name}[{k}] = {arr[k]} does not fit in {np.dtype(dtype).name}")
    else:
        raise CorpusError(f"{name} must hold integers, got dtype {arr.dtype}")
    out = np.array(arr, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


def _iterable(x: Any, what: str) -> Any:
    """`x` itself when it can be iterated (a generator is not consumed); else a CorpusError
    naming `what` it must be and the type it is."""
    try:
        iter(x)
    except TypeError:
        raise CorpusError(f"{what}, got {type(x).__name__}") from None
    return x


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _str_tuple(x: Any, name: str) -> tuple[str, ...]:
    if isinstance(x, (str, bytes)):
        raise CorpusError(f"{name} must be a sequence of strings, got a single {type(x).__name__}")
    try:
        out = tuple(x)
    except TypeError:
        raise CorpusError(f"{name} must be a sequence of strings, got {type(x).__name__}") from None
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise CorpusError(f"{name}[{i}] must be a str, got {type(s).__name__} ({s!r})")
    return out


def _as_int_value(v: Any) -> int | None:
    """``v`` as a Python int if it is an integer (or an integral float); else None."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        if math.isfinite(v) and float(v).is_integer():
            return int(v)
    return None


def _check_frac_or_count(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be an int count or a float fraction, got {value!r}")
    if isinstance(value, (float, np.floating)) and not 0.0 <= value <= 1.0:
        raise ParameterError(f"{name} as a fraction must lie in [0, 1], got {value}")
    if value < 0:
        raise ParameterError(f"{name} must be non-negative, got {value}")


# --------------------------------------------------------------------------------------------
# labels: one gold label, or one label set, per document


def _encode_labels(labels: Sequence[Any]) -> list[int]:
    """Integer labels pass through; other labels get ids in first-seen order."""
    if all(_as_int_value(v) is not None for v in labels):
        return [int(v) for v in labels]
    ids: dict[Any, int] = {}
    return [ids.setdefault(v, len(ids)) for v in labels]


def _gold_labels(labels: Any) -> np.ndarray:
    """One gold label per document -> int64 [D], the same way for every constructor: integer
    labels are kept; labels that are not all integers (strings, or strings and ints mixed, as
    JSON lines may hold them) get ids in first-seen order, as ``from_jsonl`` gives them (the
    string "1" and the int 1 are different labels there). None, bools, non-integral floats and
    other objects are refused, naming the document."""
    if isinstance(labels, np.ndarray) and labels.ndim != 1:
        raise CorpusError(
            f"labels must be 1-D, one label per document, got shape {np.shape(labels)}; for "
            f"label sets (several labels per document, as DP-MRM takes) pass a list of label "
            f"lists, e.g. labels=[['sport', 'news'], ['news']] (array.tolist() when the rows "
            f"are label sets, not 0/1 indicators)")
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf":
        return _int_array(labels, np.int64, "labels")
    if not isinstance(labels, (list, tuple, np.ndarray)):
        return _int_array(labels, np.int64, "labels")          # other array-likes
    items = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
    for d, v in enumerate(items):
        if not (isinstance(v, str) or _as_int_value(v) is not None):
            raise CorpusError(f"labels[{d}] = {v!r}: the label of document {d} must be an "
                              f"integer or a string (every document needs one)")
    if not any(isinstance(v, str) for v in items):             # ints kept (range checked),
        return _int_array([_as_int_value(v) for v in items], np.int64, "labels")  # never via float
    return _frozen(np.asarray(_encode_labels(items), np.int64))


def _is_label_sets(labels: Any) -> bool:
    """True when ``labels`` holds one label *set* per document (multi-label: a list whose
    entries are lists / tuples / sets of labels) rather than one int label per document."""
    if labels is None or isinstance(labels, (str, bytes, np.ndarray)):
        return False
    if not isinstance(labels, (list, tuple)):
        return False
    return any(isinstance(e, (list, tuple, set, frozenset, np.ndarray)) for e in labels)


def _label_sets_csr(sets: Any, names: Sequence[str] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Per-document label sets -> ``(label_offsets int64 [D+1], label_ids int32, label_names)``.

    Each entry is an iterable of labels (str or int) or a single label; repeated labels in one
    set count once. Without `names`, label ids follow ascending order when every label is an
    int and first-seen order otherwise; with `names`, ids are positions in it and a label
    outside it is an error. A document with an empty label set raises CorpusError naming it.
    """
    if isinstance(sets, (str, bytes)):
        raise CorpusError("label sets must be a sequence with one label set per document, "
                          "got a single string")
    docs: list[list[Any]] = []
    for d, entry in enumerate(sets):
        if isinstance(entry, (str, int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            items = [entry]
        else:
            try:
                items = list(entry)
            except TypeError:
                raise CorpusError(f"label set of document {d} must be a list of labels, got "
                                  f"{type(entry).__name__} ({entry!r})") from None
        seen: dict[str, Any] = {}
        for x in items:
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (str, int, np.integer)):
                raise CorpusError(f"document {d}: a label must be a str or an int, got "
                                  f"{type(x).__name__} ({x!r})")
            if isinstance(x, str) and not x.strip():
                raise CorpusError(f"document {d}: empty label name {x!r}")
            if isinstance(x, str):               # NFC, as words are: one label however composed
                x = unicodedata.normalize("NFC", x)
            seen.setdefault(str(x), x)
        if not seen:
            raise CorpusError(f"document {d} has an empty label set (every document needs at "
                              f"least one label)")
        docs.append(list(seen.values()))
    if names is None:
        if all(isinstance(x, (int, np.integer)) for doc in docs for x in doc):
            names_t = tuple(str(x) for x in sorted({int(x) for doc in docs for x in doc}))
        else:
            names_t = tuple(dict.fromkeys(str(x) for doc in docs for x in doc))
    else:
        names_t = _nfc_vocab(_str_tuple(names, "label_names"), "label_names entries")
    index = {n: i for i, n in enumerate(names_t)}
    ids: list[int] = []
    offsets = [0]
    for d, doc in enumerate(docs):
        for x in doc:
            i = index.get(str(x))
            if i is None:
                raise CorpusError(f"document {d}: label {x!r} is not in label_names")
            ids.append(i)
        offsets.append(len(ids))
    return (_frozen(np.asarray(offsets, np.int64)), _frozen(np.asarray(ids, np.int32)), names_t)


# --------------------------------------------------------------------------------------------
# files


def _require_documents(path, documents: Sequence) -> Sequence:
    """`documents` as read from the file `path`, refused when there are none."""
    if len(documents) == 0:
        raise CorpusError(f"{os.fspath(path)}: the file holds no documents")
    return documents
