"""File formats, read into numpy arrays and plain Python values and written atomically: LDA-C
(Blei's ``lda-c``: ``N id:count ...`` per document), UCI bag-of-words (``docword``/``vocab``
files of the UCI Machine Learning Repository's Bag of Words data set), vocabularies, one text
per line, JSON Lines (https://jsonlines.org), and the ``.npz`` model files with their SHA-256
checksum (FIPS 180-4). This module knows nothing of :class:`jaxtopics.corpus.Corpus`, whose
constructors call these readers and build the corpus from what they return. Every text file is
decoded as strict UTF-8 (RFC 3629); a problem in a file raises
:class:`~jaxtopics.errors.FormatError` naming the path and the 1-based line number. Everything
written goes through a temporary file in the same directory and ``os.replace``, so a file is
either fully written or untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import FormatError

__all__ = [
    "MODEL_FORMAT",
    "MODEL_FORMAT_VERSION",
    "read_ldac",
    "write_ldac",
    "read_vocab",
    "write_vocab",
    "read_uci",
    "read_text_lines",
    "read_labelled_text_lines",
    "read_jsonl",
    "atomic_path",
    "atomic_write_bytes",
    "encode_strings",
    "decode_strings",
    "save_model_file",
    "load_model_file",
    "model_checksum",
]

PathLike = str | os.PathLike[str]


class _TokenArrays(Protocol):
    """What :func:`write_ldac` reads of a corpus (a :class:`jaxtopics.corpus.Corpus` has both)."""

    word_ids: np.ndarray      # int [N], the tokens of all documents concatenated
    doc_offsets: np.ndarray   # int [D+1], document d is word_ids[doc_offsets[d]:doc_offsets[d+1]]

MODEL_FORMAT = "jaxtopics-model"
MODEL_FORMAT_VERSION = 3
"""1: vocabulary as a numpy unicode array; 2: as UTF-8 bytes + offsets (``encode_strings``),
with ``num_docs`` and ``text_options`` in the metadata; 3: the same, and the metadata always
carries the SHA-256 ``checksum`` (``model_checksum``; late version-2 files may carry one too).
All are read."""
#: the first format version whose files must carry a checksum
CHECKSUMMED_SINCE = 3
_META_KEY = "__meta__"
_INT32_MAX = np.iinfo(np.int32).max
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
_MAX_TOKENS = int(_INT32_MAX) - 1     # token positions and the dummy slot N stay int32


# --------------------------------------------------------------------------------------------
# text decoding


def _read_text(path: PathLike) -> str:
    """Read a whole file as strict UTF-8 (a leading BOM is dropped)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1)
        raise FormatError(
            f"file is not valid UTF-8: byte 0x{data[e.start]:02x} at byte offset {e.start} "
            f"(column {col + 1}) cannot be decoded",
            path,
            line,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _lines(text: str) -> list[str]:
    r"""Split at "\n", "\r\n" or a lone "\r" (old Mac files), not at other Unicode breaks;
    drop a trailing line break."""
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


_LINE_BREAK = re.compile("\r\n|\r|\n")


# --------------------------------------------------------------------------------------------
# LDA-C

_LDAC_LINE = re.compile(r"[ \t]*(\d+)((?:[ \t]+\d+:\d+)*)[ \t]*", re.ASCII)


def _ldac_diagnose(line: str, path: PathLike, lineno: int) -> FormatError:
    """Build a precise error for an LDA-C line that failed the fast pattern."""
    parts = line.split()
    if not parts:
        return FormatError(
            "blank line (an empty document is written as a line holding 0)", path, lineno
        )
    head = parts[0]
    try:
        n = int(head)
    except ValueError:
        return FormatError(
            f"expected the number of distinct words as an integer, got {head!r}", path, lineno
        )
    if n < 0:
        return FormatError(f"negative number of distinct words {n}", path, lineno)
    for j, pair in enumerate(parts[1:], start=1):
        where = f"pair {j} ({pair!r})"
        if pair.count(":") != 1:
            return FormatError(f"{where}: expected word_id:count", path, lineno)
        a, b = pair.split(":")
        for what, s in (("word id", a), ("count", b)):
            try:
                v = int(s)
            except ValueError:
                return FormatError(f"{where}: {what} {s!r} is not an integer", path, lineno)
            if v < 0:
                return FormatError(f"{where}: negative {what} {v}", path, lineno)
            if not s.isdigit():
                return FormatError(f"{where}: malformed {what} {s!r}", path, lineno)
    return FormatError(f"malformed line {line[:80]!r}", path, lineno)


def read_ldac(path: PathLike, num_words: int | None = None,
              documents: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read an LDA-C file (``N id:count id:count ...`` per document, ``0`` = empty document).

    Args:
        path: the file.
        num_words: V: every pair's id (a pair with count 0 too) must be below it; None: any.
        documents: (start, stop): read only those lines (a process of a multi-process fit
            holds only its own documents); errors still name the line of the file. None: all.

    Returns:
        ``(word_ids int32 [N], doc_offsets int64 [D+1])``; each pair ``id:count`` becomes
        ``count`` repeated tokens ``id`` in file order.

    Raises:
        FormatError: a malformed line (``path:line: message``).

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import io
        >>> corpus = jt.Corpus.from_token_lists([["a", "b", "a"], ["c"]])
        >>> io.write_ldac("corpus.ldac", corpus)
        >>> print(open("corpus.ldac").read(), end="")
        2 0:2 1:1
        1 2:1
        >>> word_ids, doc_offsets = io.read_ldac("corpus.ldac", num_words=3)
        >>> word_ids.tolist(), doc_offsets.tolist()
        ([0, 0, 1, 2], [0, 3, 4])
    """
    lines = _lines(_read_text(path))
    first = 0
    if documents is not None:
        first = documents[0]
        lines = lines[documents[0]:documents[1]]
    match = _LDAC_LINE.fullmatch
    npairs = np.empty(len(lines), dtype=np.int64)
    bodies: list[str] = []
    for i, line in enumerate(lines, start=first):
        m = match(line)
        if m is None:
            raise _ldac_diagnose(line, path, i + 1)
        body = m.group(2)
        n = body.count(":")
        declared = _decimal(m.group(1))
        if declared != n:
            raise FormatError(
                f"line declares {declared} distinct words but holds {n} id:count pairs",
                path,
                i + 1,
            )
        npairs[i - first] = n
        bodies.append(body)
    flat = " ".join(bodies).replace(":", " ").split()
    pair_end = np.cumsum(npairs)
    try:
        vals = np.array(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int64)
    except (OverflowError, ValueError):  # a number beyond int64 (or of thousands of digits)
        values = [_decimal(s) for s in flat]
        k = next((j for j, v in enumerate(values) if v > _INT64_MAX), None)
        if k is not None:
            line = int(np.searchsorted(pair_end, k // 2, side="right")) + 1 + first
            raise FormatError(f"number {_number_text(flat[k])} is too large", path, line) from None
        vals = np.array(values, dtype=np.int64)     # long only by leading zeros
    ids, counts = vals[0::2], vals[1::2]
    for what, col in (("word id", ids), ("count", counts)):
        if col.size and col.max() > _INT32_MAX:
            k = int(np.argmax(col > _INT32_MAX))
            line = int(np.searchsorted(pair_end, k, side="right")) + 1 + first
            raise FormatError(f"{what} {int(col[k])} is too large", path, line)
    if num_words is not None and ids.size and ids.max() >= num_words:
        k = int(np.argmax(ids >= num_words))
        line = int(np.searchsorted(pair_end, k, side="right")) + 1 + first
        raise FormatError(
            f"word id {int(ids[k])} is outside the vocabulary of {num_words} words", path, line
        )
    _check_distinct_ids(ids, npairs, path, first)
    token_end = np.concatenate([[0], np.cumsum(counts)])
    _check_total_tokens(token_end, pair_end, path, first + 1)
    doc_offsets = np.concatenate([[0], token_end[pair_end]]).astype(np.int64)
    word_ids = np.repeat(ids.astype(np.int32), counts)
    return word_ids, doc_offsets


def _check_distinct_ids(ids: np.ndarray, npairs: np.ndarray, path: PathLike, first: int) -> None:
    """Raise FormatError at the first LDA-C line that lists a word id twice (a line declares
    its distinct words). Lines with ascending ids, as writers emit them, need no sort."""
    line_of = np.repeat(np.arange(npairs.shape[0]), npairs)
    same_line = line_of[1:] == line_of[:-1]
    if not (same_line & (ids[1:] <= ids[:-1])).any():
        return
    key = line_of * (int(ids.max()) + 1) + ids
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
    if repeated.size:
        k = int(order[repeated[0] + 1])
        raise FormatError(f"word id {int(ids[k])} appears twice in the line (an LDA-C line "
                          f"lists each distinct word once, with its count)", path,
                          int(line_of[k]) + 1 + first)


def ldac_doc_tokens(path: PathLike) -> np.ndarray:
    """Tokens of every document of an LDA-C file ([D] int64), without building token arrays
    (used to balance a multi-process fit by tokens).

    Raises:
        FormatError: a line that is not ``N id:count ...`` (path:line), as :func:`read_ldac`
            says it (the other checks are read_ldac's)."""
    out = []
    for i, line in enumerate(_lines(_read_text(path))):
        m = _LDAC_LINE.fullmatch(line)
        if m is None:      # a bad line: the error read_ldac gives (naming the file and line)
            raise _ldac_diagnose(line, path, i + 1)
        tokens = sum(_decimal(p.rsplit(":", 1)[1]) for p in m.group(2).split())
        if tokens > _MAX_TOKENS:
            raise FormatError(f"the counts add up to more than {_MAX_TOKENS} tokens (the most a "
                              "corpus holds)", path, i + 1)
        out.append(tokens)
    return np.asarray(out, dtype=np.int64)


def _check_total_tokens(token_end: np.ndarray, entry_end: np.ndarray, path: PathLike,
                        first_line: int = 1) -> None:
    """Refuse a file whose counts add up to more tokens than a corpus can index (int32), before
    the token array is allocated; names the line where the total passes the bound."""
    if token_end[-1] > _MAX_TOKENS:
        k = int(np.argmax(token_end > _MAX_TOKENS)) - 1          # the entry that crosses it
        line = int(np.searchsorted(entry_end, k, side="right")) + first_line
        raise FormatError(
            f"the counts add up to more than {_MAX_TOKENS} tokens (the most a corpus holds)",
            path, line,
        )


def write_ldac(path: PathLike, corpus: _TokenArrays) -> None:
    """Write a corpus as LDA-C (one line per document, pairs sorted by word id); atomic.

    Args:
        path: the file.
        corpus: anything with ``word_ids`` and ``doc_offsets``, e.g. a Corpus (its vocabulary
            goes to its own file: :func:`write_vocab`)."""
    offsets = corpus.doc_offsets
    out: list[str] = []
    for d in range(len(offsets) - 1):
        ids, counts = np.unique(corpus.word_ids[offsets[d] : offsets[d + 1]], return_counts=True)
        pairs = " ".join(f"{i}:{c}" for i, c in zip(ids.tolist(), counts.tolist()))
        out.append(f"{len(ids)} {pairs}".rstrip())
    atomic_write_bytes(path, ("\n".join(out) + "\n").encode("utf-8"))


# --------------------------------------------------------------------------------------------
# vocabularies, UCI bag-of-words


def read_vocab(path: PathLike) -> tuple[str, ...]:
    """Read a vocabulary, one word per line (surrounding whitespace stripped).

    Args:
        path: the file.

    Returns:
        The words; line i holds id i-1.

    Raises:
        FormatError: a blank entry."""
    words = tuple(ln.strip() for ln in _lines(_read_text(path)))
    for i, w in enumerate(words):
        if not w:
            raise FormatError("blank vocabulary entry", path, i + 1)
    return words


def write_vocab(path: PathLike, vocab: tuple[str, ...] | list[str]) -> None:
    """Write one word per line; atomic.

    Args:
        path: the file.
        vocab: the words (none empty, none with a line break or surrounding whitespace)."""
    for i, w in enumerate(vocab):
        if "\n" in w or "\r" in w or w != w.strip() or not w:
            raise FormatError(f"vocabulary entry {i} ({w!r}) cannot be written one per line")
    atomic_write_bytes(path, "".join(w + "\n" for w in vocab).encode("utf-8"))


def _uci_row(line: str, path: PathLike, lineno: int) -> tuple[int, int, int]:
    parts = line.split()
    if len(parts) != 3:
        raise FormatError(f"expected 'docID wordID count', got {line[:80]!r}", path, lineno)
    out = []
    for what, s in zip(("docID", "wordID", "count"), parts):
        if not _UCI_INT.fullmatch(s):          # int() would also read "1_0", "+1", "\u0661"
            raise FormatError(f"{what} {s!r} is not an integer", path, lineno)
        v = _decimal(s)
        if not -_INT32_MAX <= v <= _INT32_MAX:
            why = "is too large" if v > 0 else "is out of range"
            raise FormatError(f"{what} {_number_text(s)} {why}", path, lineno)
        out.append(v)
    return out[0], out[1], out[2]


def _decimal(s: str) -> int:
    """The value of a decimal string of ASCII digits (a leading "-" allowed); one of more
    digits than Python converts (4300) reads as +-10**30, beyond every bound checked after."""
    sign = -1 if s.startswith("-") else 1
    digits = s.lstrip("-").lstrip("0")          # leading zeros count in Python's limit too
    return sign * (10**30 if len(digits) > 30 else int(digits or "0"))


def _number_text(s: str) -> str:
    """A number for a message: a long one shortened, saying how many digits it has."""
    return s if len(s) <= 40 else f"{s[:20]}... ({len(s)} digits)"


_UCI_LINE = re.compile(r"^[ \t]*\d+[ \t]+\d+[ \t]+\d+[ \t]*$", re.ASCII | re.MULTILINE)
_UCI_INT = re.compile(r"-?[0-9]+")        # a negative one gets its own message


#: the most documents a UCI header may declare beyond the last docID of its entries (empty
#: documents cost 8 bytes each in the offsets, and a wrong header would allocate them all)
_MAX_TRAILING_EMPTY_DOCS = 2**24


def read_uci(
    docword_path: PathLike, vocab_path: PathLike
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Read UCI bag-of-words (``docword.*.txt`` + ``vocab.*.txt``).

    The docword file has a header of three lines (D, W, NNZ), then NNZ lines
    ``docID wordID count`` (1-based ids). Sizes from the header are bounded (int32) and checked
    against the file before anything of their size is allocated.

    Args:
        docword_path: the ``docword.*.txt`` file.
        vocab_path: the ``vocab.*.txt`` file.

    Returns:
        ``(word_ids, doc_offsets, vocab)``; documents with no entries are kept as empty
        documents."""
    lines = _lines(_read_text(docword_path))
    if len(lines) < 3:
        raise FormatError(
            "missing header (three lines: D, W, NNZ)", docword_path, len(lines) + 1
        )
    header = []
    for i, name in enumerate(("D (number of documents)", "W (vocabulary size)", "NNZ")):
        if not _UCI_INT.fullmatch(lines[i].strip()):
            raise FormatError(
                f"header {name} must be an integer, got {lines[i][:40]!r}", docword_path, i + 1
            )
        v = _decimal(lines[i].strip())
        if v < 0:
            raise FormatError(f"header {name} is negative ({_number_text(lines[i].strip())})",
                              docword_path, i + 1)
        if v > _INT32_MAX:
            raise FormatError(f"header {name} = {_number_text(lines[i].strip())} is too large",
                              docword_path, i + 1)
        header.append(v)
    num_docs, num_words, nnz = header
    body = lines[3:]
    while body and not body[-1].strip():
        body.pop()
    if len(body) != nnz:
        raise FormatError(
            f"header says NNZ = {nnz} but the file holds {len(body)} entry lines",
            docword_path,
            3,
        )
    vocab = read_vocab(vocab_path)
    if len(vocab) != num_words:
        raise FormatError(
            f"vocabulary has {len(vocab)} words but {os.fspath(docword_path)} declares "
            f"W = {num_words}",
            vocab_path,
        )
    rows = np.empty((nnz, 3), dtype=np.int64)
    text = "\n".join(body)
    fast_ok = _UCI_LINE.subn("", text)[1] == nnz   # three unsigned integers on every line
    if fast_ok:
        try:
            rows[:] = np.array(text.split(), dtype=np.int64).reshape(nnz, 3)
        except (ValueError, OverflowError):
            fast_ok = False
    if not fast_ok:  # slow path only to name the bad line
        for k, line in enumerate(body):
            rows[k] = _uci_row(line, docword_path, k + 4)
    doc, word, count = rows[:, 0], rows[:, 1], rows[:, 2]
    for what, col, hi in (("docID", doc, num_docs), ("wordID", word, num_words)):
        bad = np.flatnonzero((col < 1) | (col > hi))
        if bad.size:
            k = int(bad[0])
            raise FormatError(
                f"{what} {int(col[k])} is outside 1..{hi} (header)", docword_path, k + 4
            )
    bad = np.flatnonzero((count < 0) | (count > _INT32_MAX))
    if bad.size:
        k = int(bad[0])
        what = "negative count" if count[k] < 0 else "too large a count:"
        raise FormatError(f"{what} {int(count[k])}", docword_path, k + 4)
    _check_total_tokens(np.concatenate([[0], np.cumsum(count)]), np.arange(1, nnz + 1),
                        docword_path, first_line=4)
    last = int(doc.max()) if nnz else 0
    if num_docs - last > _MAX_TRAILING_EMPTY_DOCS:     # bound what the header alone allocates
        raise FormatError(
            f"header D = {num_docs} declares {num_docs - last} documents after the last docID "
            f"in the file ({last}); more than {_MAX_TRAILING_EMPTY_DOCS} empty documents is "
            f"taken for a wrong header", docword_path, 1)
    order = np.argsort(doc, kind="stable")
    doc, word, count = doc[order] - 1, word[order] - 1, count[order]
    word_ids = np.repeat(word.astype(np.int32), count)
    lengths = np.bincount(doc, weights=count, minlength=num_docs).astype(np.int64)
    doc_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return word_ids, doc_offsets, vocab


# --------------------------------------------------------------------------------------------
# raw text


def read_text_lines(path: PathLike) -> list[str]:
    """Read one document per line.

    Args:
        path: the text file (UTF-8).

    Returns:
        One text per line (a blank line is an empty document, kept)."""
    return _lines(_read_text(path))


def read_labelled_text_lines(path: PathLike) -> tuple[list[list[str]], list[str]]:
    """Read TopicModel4J's labelled text: one document per line, ``label1--label2<TAB>text``.

    Args:
        path: the text file.

    Returns:
        ``(label_sets, texts)``: the labels before the first tab, split at ``--`` and stripped
        (repeats kept; the corpus counts a label once), and the text after it.

    Raises:
        FormatError: a line without a tab, with no label, or with an empty label name
            (path:line)."""
    label_sets: list[list[str]] = []
    texts: list[str] = []
    for i, line in enumerate(_lines(_read_text(path))):
        head, tab, text = line.partition("\t")
        if not tab:
            raise FormatError("expected 'label1--label2<TAB>text' (no tab on this line)", path, i + 1)
        labels = [x.strip() for x in head.split("--")]
        if not head.strip():
            raise FormatError("empty label set before the tab (every document needs a label)",
                              path, i + 1)
        if any(not x for x in labels):
            raise FormatError(f"empty label name in {head!r} (labels are separated by '--')",
                              path, i + 1)
        label_sets.append(labels)
        texts.append(text)
    return label_sets, texts


def read_jsonl(
    path: PathLike, text_key: str = "text", label_key: str | None = None
) -> tuple[list[str], list[Any] | None]:
    """Read JSON lines, one object per document (blank lines are skipped).

    Args:
        path: the file.
        text_key: the key of each object's text (a string).
        label_key: the key of each object's label (an int or str); None: no labels.

    Returns:
        ``(texts, labels or None)``.

    Raises:
        FormatError: a line that is not such an object (path:line)."""
    texts: list[str] = []
    labels: list[Any] | None = [] if label_key is not None else None
    for i, line in enumerate(_lines(_read_text(path))):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise FormatError(f"malformed JSON: {e.msg} (column {e.colno})", path, i + 1) from None
        except RecursionError:
            raise FormatError("JSON nested too deeply to read (expected one flat object per "
                              "line)", path, i + 1) from None
        except ValueError as e:       # e.g. an integer of more digits than Python converts
            raise FormatError(f"unreadable JSON: {e}", path, i + 1) from None
        if not isinstance(obj, dict):
            raise FormatError(
                f"expected a JSON object, got {type(obj).__name__}", path, i + 1
            )
        if text_key not in obj:
            raise FormatError(f"missing key {text_key!r}", path, i + 1)
        text = obj[text_key]
        if not isinstance(text, str):
            raise FormatError(
                f"value of {text_key!r} must be a string, got {type(text).__name__}", path, i + 1
            )
        texts.append(text)
        if labels is not None:
            if label_key not in obj:
                raise FormatError(f"missing key {label_key!r}", path, i + 1)
            label = obj[label_key]
            if isinstance(label, bool) or not isinstance(label, (int, str)):
                sets = (" (one label per document; label sets, for DP-MRM, are read from "
                        "'label1--label2<TAB>text' lines: Corpus.from_text_file(path, "
                        "labelled=True), or passed as labels= lists)") if isinstance(label, list) else ""
                raise FormatError(
                    f"label {label_key!r} must be an integer or a string, got {label!r}{sets}",
                    path,
                    i + 1,
                )
            if isinstance(label, int) and not _INT64_MIN <= label <= _INT64_MAX:
                raise FormatError(
                    f"label {label_key!r} = {label} does not fit in int64", path, i + 1
                )
            labels.append(label)
    return texts, labels


# --------------------------------------------------------------------------------------------
# atomic writes


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_mode()


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """A context manager for an atomic write: write the temporary path it yields.

    Args:
        path: the file to write.

    Yields:
        A temporary path next to ``path``; when the block ends it is moved onto ``path``
        (os.replace). If the block raises, the temporary file is removed and ``path`` is left
        untouched.

    Example:
        >>> from jaxtopics.io import atomic_path
        >>> with atomic_path("notes.txt") as tmp:
        ...     _ = tmp.write_text("all or nothing")
        >>> open("notes.txt").read()
        'all or nothing'
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target}: is a directory, expected a file path")
    directory = target.parent
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:  # name the user's path, not the temporary file's
        raise OSError(e.errno, e.strerror, os.fspath(path)) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        try:
            mode = target.stat().st_mode & 0o777 if target.exists() else _FILE_MODE
            os.chmod(tmp, mode)
        except OSError:
            pass
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError) and e.filename in (None, tmp_name):
            # a full disk (ENOSPC from a write) names no file: name the user's path
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        raise


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write bytes to a file atomically (:func:`atomic_path`).

    Args:
        path: the file.
        data: its new content."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


# --------------------------------------------------------------------------------------------
# string tables (vocabularies, names) in npz files


def encode_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as two arrays for an npz file: their UTF-8 bytes concatenated, and offsets.

    Compact (a numpy unicode array costs 4 bytes x the longest string per entry) and lossless:
    a trailing ``"\\x00"``, which numpy strips from unicode arrays, survives, and so do lone
    surrogates (``surrogatepass``). Inverse: :func:`decode_strings`.

    Args:
        strings: the strings.

    Returns:
        ``(data uint8 [bytes], offsets int64 [n+1])``.

    Example:
        >>> from jaxtopics.io import decode_strings, encode_strings
        >>> data, offsets = encode_strings(["a", "éé"])
        >>> offsets.tolist(), decode_strings(data, offsets)
        ([0, 1, 5], ('a', 'éé'))
    """
    encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def decode_strings(data: np.ndarray, offsets: np.ndarray) -> tuple[str, ...]:
    """Inverse of :func:`encode_strings`.

    Args:
        data, offsets: what :func:`encode_strings` returned.

    Returns:
        The strings.

    Raises:
        ValueError: saying what is malformed."""
    data, offsets = np.asarray(data), np.asarray(offsets)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError(f"string bytes must be 1-D uint8, got {data.dtype}{list(data.shape)}")
    if offsets.dtype.kind not in "iu" or offsets.ndim != 1 or offsets.shape[0] < 1:
        raise ValueError(f"string offsets must be 1-D integers, got {offsets.dtype}"
                         f"{list(offsets.shape)}")
    if offsets[0] != 0 or offsets[-1] != data.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError(f"string offsets must rise from 0 to the {data.shape[0]} bytes")
    raw = data.tobytes()
    bounds = offsets.tolist()
    try:
        return tuple(raw[a:b].decode("utf-8", "surrogatepass") for a, b in zip(bounds, bounds[1:]))
    except UnicodeDecodeError as e:
        raise ValueError(f"string bytes are not valid UTF-8 ({e.reason})") from None


# --------------------------------------------------------------------------------------------
# model files


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"metadata value of type {type(obj).__name__} is not JSON-serialisable")


def save_model_file(path: PathLike, arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
    """Save arrays + JSON metadata as one uncompressed ``.npz`` file at ``path`` (atomic).

    No pickle is ever used: store string tables with :func:`encode_strings` (an object array
    of strings becomes a numpy unicode array, which strips trailing ``"\\x00"``).

    Args:
        path: the file.
        arrays: name -> array (no object arrays but of strings).
        meta: JSON-able metadata; the file's gets ``"format"``, ``"format_version"`` and the
            ``"checksum"`` (:func:`model_checksum`) added.

    Example:
        >>> import numpy as np
        >>> from jaxtopics.io import load_model_file, save_model_file
        >>> save_model_file("demo.npz", {"x": np.arange(3)}, {"model": "demo"})
        >>> arrays, meta = load_model_file("demo.npz")
        >>> arrays["x"].tolist(), meta["model"], meta["format"]
        ([0, 1, 2], 'demo', 'jaxtopics-model')
    """
    if Path(path).is_dir():
        raise IsADirectoryError(f"{os.fspath(path)}: is a directory, expected a file path")
    stored: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or name == _META_KEY:
            raise ValueError(f"invalid array name {name!r}")
        arr = np.asarray(value)
        if arr.dtype == object:
            if all(isinstance(v, str) for v in arr.ravel()):
                arr = arr.astype(str)
            else:
                raise ValueError(f"array {name!r} has dtype object; cannot store without pickle")
        stored[name] = arr
    full_meta = dict(meta)
    full_meta.pop(CHECKSUM_KEY, None)
    full_meta["format"] = MODEL_FORMAT
    full_meta["format_version"] = MODEL_FORMAT_VERSION
    full_meta = json.loads(json.dumps(full_meta, default=_json_default, allow_nan=True))
    full_meta[CHECKSUM_KEY] = model_checksum(stored, full_meta)
    meta_text = json.dumps(full_meta, sort_keys=True, allow_nan=True)
    stored[_META_KEY] = np.array(meta_text)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **stored)


#: what zipfile and numpy raise on a damaged archive: besides the obvious ones, a flipped flag
#: bit of a member's directory entry reads as "encrypted" (RuntimeError), a flipped compression
#: method as NotImplementedError, a damaged deflate stream as zlib.error
_DAMAGED_ARCHIVE = (ValueError, OSError, EOFError, zipfile.BadZipFile, RuntimeError,
                    NotImplementedError, zlib.error, KeyError, struct.error)


def load_model_file(path: PathLike, arrays: bool = True) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a file written by :func:`save_model_file`.

    Args:
        path: the file.
        arrays: read the arrays; False: the metadata only (the arrays come back as ``{}``).

    Returns:
        ``(arrays, meta)``.

    Raises:
        FormatError: the file is not a jaxtopics model, has a newer format version, or its
            checksum differs."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"{p}: is a directory, expected a jaxtopics model file")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    not_model = "not a jaxtopics model file"
    try:
        loaded = np.load(p, allow_pickle=False)
    except _DAMAGED_ARCHIVE as e:
        why = "not an .npz archive" if "pickle" in str(e) else f"{type(e).__name__}: {e}"
        raise FormatError(f"{not_model} ({why})", p) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise FormatError(f"{not_model} (a bare .npy array)", p)
    try:
        with loaded as npz:
            if _META_KEY not in npz.files:
                raise FormatError(f"{not_model} (an .npz archive without {_META_KEY!r})", p)
            arrays = {k: npz[k] for k in npz.files if k != _META_KEY} if arrays else {}
            meta_arr = npz[_META_KEY]
    except FormatError:
        raise
    except _DAMAGED_ARCHIVE as e:
        raise FormatError(f"{not_model} ({type(e).__name__}: {e})", p) from None
    try:
        meta = json.loads(str(meta_arr[()]))
    except (json.JSONDecodeError, TypeError, IndexError, RecursionError) as e:
        raise FormatError(f"{not_model} (unreadable metadata: {e})", p) from None
    if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise FormatError(f"{not_model} (format tag {fmt!r}, expected {MODEL_FORMAT!r})", p)
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise FormatError(f"invalid format_version {version!r}", p)
    if version > MODEL_FORMAT_VERSION:
        raise FormatError(
            f"model file format_version {version} is newer than this jaxtopics supports "
            f"(up to {MODEL_FORMAT_VERSION}); upgrade jaxtopics to read it",
            p,
        )
    if CHECKSUM_KEY not in meta and version >= CHECKSUMMED_SINCE:
        raise FormatError("the metadata lacks its 'checksum' (every file of format_version "
                          f"{CHECKSUMMED_SINCE} or later has one: the file was edited)", p)
    if arrays and CHECKSUM_KEY in meta:           # files of older versions have none
        if meta[CHECKSUM_KEY] != model_checksum(arrays, meta):
            raise FormatError("the arrays or metadata differ from what was saved (checksum "
                              "mismatch: the file is damaged or was edited)", p)
    return arrays, meta


#: metadata key of a model file's checksum (files saved before it existed have none)
CHECKSUM_KEY = "checksum"


def model_checksum(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """SHA-256 over a model file's arrays (name, dtype, shape, bytes; in name order) and its
    metadata (canonical JSON, without the checksum itself): ``load_model_file`` refuses a file
    whose stored checksum differs, so a damaged or hand-edited model file is one clear error
    rather than whatever its edited values would break later.

    Args:
        arrays: the file's arrays.
        meta: its metadata (a ``"checksum"`` entry is left out).

    Returns:
        ``"sha256:<hex digest>"``."""
    h = hashlib.sha256(b"jaxtopics-model-v1\0")
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    rest = {k: v for k, v in meta.items() if k != CHECKSUM_KEY}
    h.update(json.dumps(rest, sort_keys=True, allow_nan=True).encode())
    return "sha256:" + h.hexdigest()
