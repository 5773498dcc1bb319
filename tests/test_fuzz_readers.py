"""Hostile input to every reader and constructor of ``jaxtopics.Corpus`` and ``jaxtopics.io``,
property-based (hypothesis; issue 36): random structured inputs, random bytes and random edits
of valid files give either a Corpus whose content is exactly the input's (the documents, each
document's words in order, sentences and labels where given, the vocabulary), or an exception
that is a ``JaxTopicsError`` (a ``FormatError`` naming the file and line for files) - never
another type.

Each test holds a small independent model (``_expect_*``) of what the reader promises, taken
from its code and docstring: None where the input must be refused, else the corpus it must
give. Both directions are checked: a refused input is refused, an accepted one gives exactly
that corpus. The promises:

- token lists: tokens are non-empty strings without a line break, NFC-normalised; the
  vocabulary in first-seen order, or the given one (NFC; no repeats, also once normalised);
  unknown tokens are an error or dropped (``unknown=``); empty documents are kept, empty
  sentences dropped; a corpus needs a document and a token.
- texts: the tokenizer's tokens of the NFC text, each NFC, filtered by min_df / max_df; the
  vocabulary by descending frequency, then alphabetically; no error but "no tokens".
- arrays, bag-of-words: integers (integral floats too), ids within the vocabulary, offsets
  from 0 rising to N; each (id, count) pair is `count` tokens.
- files, all strict UTF-8 with an optional BOM, lines ending in \\n, \\r\\n or \\r: LDA-C
  (``N id:count ...``, ASCII digits, N the number of pairs, each id once, ``0`` an empty
  document, no blank line); UCI (a D, W, NNZ header, NNZ lines ``doc word count`` of ASCII
  digits, 1-based ids within the header's sizes, trailing blank lines ignored); a vocabulary
  (one word per line, stripped, none blank); one text per line (a blank line an empty
  document); ``label1--label2<TAB>text`` lines; JSON lines (blank lines skipped, one object a
  line with a string text and an int64 or string label).

Hypothesis runs derandomised, without a database, sized so this file takes well under a
minute on 2 cores.
"""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.extra import numpy as hnp

import jaxtopics as jt
from jaxtopics import io
from jaxtopics.errors import FormatError, JaxTopicsError

Corpus = jt.Corpus
INT32_MAX = 2**31 - 1
MAX_TOKENS = INT32_MAX - 1

#: hypothesis keeps its caches in ./.hypothesis unless told otherwise: outside the repository
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "jaxtopics-hypothesis")

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEW = settings(FUZZ, max_examples=60)


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _outcome(build):
    """The Corpus `build()` returns, or None for a JaxTopicsError; any other exception fails
    the test (it propagates)."""
    try:
        corpus = build()
    except JaxTopicsError as e:
        assert str(e)                              # a message saying what is wrong
        event(f"refused: {type(e).__name__}")
        return None
    event("accepted")
    return corpus


def _docs(corpus: Corpus) -> list[list[str]]:
    return [corpus.words(d) for d in range(corpus.num_docs)]


def _check(got, expected) -> None:
    """`got` (a Corpus or None) against `expected` (None: refused; else (docs, vocab))."""
    if expected is None:
        assert got is None, f"accepted what must be refused: {got!r}"
        return
    assert got is not None, "refused a valid input"
    docs, vocab = expected
    assert got.vocab == tuple(vocab)
    assert _docs(got) == docs
    assert got.num_docs == len(docs) and got.num_tokens == sum(map(len, docs))


@pytest.fixture(scope="module")
def put(tmp_path_factory):
    """put(name, data) -> a file holding `data` (bytes or str as UTF-8)."""
    root = tmp_path_factory.mktemp("fuzz")

    def put(name: str, data: bytes | str) -> Path:
        path = root / name
        path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        return path

    return put


# --------------------------------------------------------------------------------------------
# strategies

#: characters that matter to readers: separators, line breaks, NUL, a BOM, digits and colons,
#: precomposed and decomposed letters (also pairs that lowercasing denormalises), a lone
#: surrogate, Unicode line separators
SPECIAL = ["a", "b", "A", " ", "\t", "\n", "\r", "\x00", "\ufeff", "0", "1", ":", "-", "é",
           "e\u0301", "J\u030c", "\u01f0", "\u0130", "\u00df", "\ud800", "\u2028", "\x85", "\x0b"]
chars = st.one_of(st.sampled_from(SPECIAL), st.characters(exclude_categories=()))


def strings(pieces=chars, min_size=0, max_size=4):
    """Strings of `pieces` (which may be several characters: "e" and a combining mark)."""
    return st.lists(pieces, min_size=min_size, max_size=max_size).map("".join)


tokens = strings()
#: words that often repeat, in both normal forms
words = strings(st.sampled_from(["a", "b", "c", "é", "e\u0301", "\u01f0", "J\u030c"]), 1, 3)
word_lists = st.lists(st.one_of(words, tokens), max_size=6)


def _edits(data: bytes, draw) -> bytes:
    """`data` after 1-3 random edits: overwrite, insert, delete, truncate."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["overwrite", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, len(out)))
        byte = draw(st.sampled_from([b" ", b"\t", b"\n", b"\r", b":", b"0", b"9", b"-", b"\xff",
                                     b"\xc3", b"{", b'"', b"\x00", b"\xe2\x80\xa8"])
                    | st.binary(min_size=1, max_size=2))
        if kind == "overwrite" and at < len(out):
            out[at:at + len(byte)] = byte
        elif kind == "insert":
            out[at:at] = byte
        elif kind == "delete" and at < len(out):
            del out[at]
        elif kind == "truncate":
            del out[at:]
    return bytes(out)


def _file_bytes(text: str, draw) -> bytes:
    """`text` encoded as a file: maybe a BOM, maybe another line ending, maybe edited."""
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    data = ("\ufeff" if draw(st.booleans()) else "") + text.replace("\n", ending)
    raw = data.encode("utf-8", "surrogatepass")
    return _edits(raw, draw) if draw(st.integers(0, 3)) == 0 else raw


# --------------------------------------------------------------------------------------------
# what the readers promise: the models of the tests


def _valid_word(w: str) -> bool:
    return bool(w) and "\n" not in w and "\r" not in w


def _expect_vocab(vocab) -> tuple[str, ...] | None:
    """A given vocabulary: NFC, no repeats (also once normalised), every word valid."""
    if len(set(vocab)) != len(vocab):
        return None
    out = tuple(_nfc(w) for w in vocab)
    if len(set(out)) != len(out) or not all(map(_valid_word, out)):
        return None
    return out


def _expect_token_lists(docs, vocab=None, unknown="error"):
    """from_token_lists: (words per document, vocab), or None."""
    if any(not _valid_word(t) for doc in docs for t in doc):
        return None
    if vocab is None:
        out = [[_nfc(t) for t in doc] for doc in docs]
        voc = tuple(dict.fromkeys(w for doc in out for w in doc))
    else:
        voc = _expect_vocab(vocab)
        if voc is None:
            return None
        known = set(voc)
        out = []
        for doc in docs:
            kept = [_nfc(t) for t in doc if _nfc(t) in known]
            if len(kept) < len(doc) and unknown == "error":
                return None
            out.append(kept)
    if not out or not any(out):
        return None
    return out, voc


def _expect_texts(texts, min_df=1, max_df=1.0):
    """from_texts with tokenizer=str.split and no other filter: every token NFC, words kept
    by document frequency, the vocabulary by (-frequency, word)."""
    docs = [[_nfc(t) for t in _nfc(text).split()] for text in texts]
    if not docs:
        return None
    tf = Counter(w for doc in docs for w in doc)
    df = Counter(w for doc in docs for w in set(doc))
    lo = min_df * len(docs) if isinstance(min_df, float) else min_df
    hi = max_df * len(docs) if isinstance(max_df, float) else max_df
    kept = sorted((w for w in tf if lo <= df[w] <= hi), key=lambda w: (-tf[w], w))
    if not kept:
        return None
    keep = set(kept)
    return [[w for w in doc if w in keep] for doc in docs], tuple(kept)


SPLIT = dict(tokenizer=str.split, lowercase=False, stop_words=None, min_length=1)


def _as_int(v):
    """An int, or an integral finite float, as an int; else None (as the constructors read
    word ids, counts and labels)."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
        return int(v)
    return None


def _decode(data: bytes) -> list[str] | None:
    """The lines of a text file: strict UTF-8, a leading BOM dropped, split at \\n, \\r\\n or
    \\r, no empty last line; None if not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text:
        return []
    lines = re.split("\r\n|\r|\n", text)
    return lines[:-1] if lines[-1] == "" else lines


def _digits(s: str) -> int | None:
    """ASCII digits as a number (beyond 2**100 as 2**100: Python refuses to convert more than
    4300 digits); else None."""
    if not (s.isascii() and s.isdigit()):
        return None
    significant = s.lstrip("0")
    return int(significant or "0") if len(significant) < 30 else 2**100


def _expect_vocab_file(data: bytes):
    lines = _decode(data)
    if lines is None:
        return None
    out = tuple(ln.strip() for ln in lines)
    return None if not all(out) else out


def _expect_ldac(data: bytes, vocab=None):
    """LDA-C: (words per document as ids, V) or None; `vocab` a word count or None."""
    lines = _decode(data)
    if lines is None or not lines:
        return None
    docs = []
    for line in lines:
        fields = re.split("[ \t]+", line.strip(" \t"))
        if fields == [""] or _digits(fields[0]) is None:
            return None
        pairs = []
        for f in fields[1:]:
            m = re.fullmatch("([0-9]+):([0-9]+)", f)
            if m is None:
                return None
            pairs.append((_digits(m[1]), _digits(m[2])))
        ids = [i for i, _ in pairs]
        if _digits(fields[0]) != len(pairs) or len(set(ids)) != len(ids):
            return None
        if any(i > INT32_MAX or c > INT32_MAX or (vocab is not None and i >= vocab)
               for i, c in pairs):
            return None
        docs.append(pairs)
    if sum(c for doc in docs for _, c in doc) > MAX_TOKENS:
        return None
    out = [[i for i, c in doc for _ in range(c)] for doc in docs]
    if not any(out):
        return None
    return out, vocab if vocab is not None else max(i for doc in out for i in doc) + 1


# --------------------------------------------------------------------------------------------
# token lists, texts


@FUZZ
@given(docs=st.lists(word_lists, max_size=5),
       vocab=st.none() | st.lists(st.one_of(words, tokens), max_size=6),
       unknown=st.sampled_from(["error", "drop"]))
def test_token_lists_give_their_tokens_or_a_corpus_error(docs, vocab, unknown):
    got = _outcome(lambda: Corpus.from_token_lists(docs, vocab=vocab, unknown=unknown))
    _check(got, _expect_token_lists(docs, vocab, unknown))


@FUZZ
@given(docs=st.lists(st.lists(word_lists, max_size=3), max_size=4))
def test_token_lists_of_sentences_keep_their_sentences(docs):
    got = _outcome(lambda: Corpus.from_token_lists(docs, sentences=True))
    flat = [[t for sent in doc for t in sent] for doc in docs]
    expected = _expect_token_lists(flat)
    _check(got, expected)
    if got is not None:
        sents = np.split(got.word_ids, got.sentence_offsets[1:-1])
        want = [[_nfc(t) for t in sent] for doc in docs for sent in doc if sent]
        assert [[got.vocab[i] for i in s] for s in sents] == want


label_values = st.one_of(st.integers(-3, 3), st.integers(-2**70, 2**70), strings(max_size=2),
                         st.floats(allow_nan=True), st.sampled_from([True, None, 2.0, "1", " "]))


def _expect_gold_labels(labels, num_docs):
    """One label per document: ints (integral floats too) in int64 kept exactly; labels not all
    integers get ids in first-seen order."""
    if len(labels) != num_docs:
        return None
    if not all(isinstance(v, str) or _as_int(v) is not None for v in labels):
        return None
    if any(isinstance(v, str) for v in labels):
        ids: dict = {}
        return [ids.setdefault(v, len(ids)) for v in labels]
    values = [_as_int(v) for v in labels]
    return values if all(-2**63 <= v < 2**63 for v in values) else None


def _expect_label_sets(sets, num_docs, names):
    """Label sets: each a label or an iterable of labels (str, non-blank, NFC; or int), repeats
    counted once, never empty; with `names`, every label among them."""
    if len(sets) != num_docs:
        return None
    out = []
    for entry in sets:
        items = [entry] if isinstance(entry, (str, int)) and not isinstance(entry, bool) else entry
        if not isinstance(items, (list, tuple)):
            return None
        keys: dict[str, None] = {}
        for x in items:
            if isinstance(x, bool) or not isinstance(x, (str, int)):
                return None
            if isinstance(x, str) and not x.strip():
                return None
            keys.setdefault(_nfc(x) if isinstance(x, str) else str(x))
        if not keys:
            return None
        out.append(tuple(keys))
    if names is not None:
        if isinstance(names, str):
            return None
        normal = [_nfc(n) for n in names]
        if len(set(names)) != len(names) or len(set(normal)) != len(normal):
            return None
        if any(label not in normal for labels in out for label in labels):
            return None
    return out


@FUZZ
@given(labels=st.lists(label_values, max_size=4) | st.lists(
           st.lists(label_values, max_size=3) | label_values, min_size=1, max_size=4).filter(
           lambda sets: any(isinstance(s, list) for s in sets)),
       names=st.none() | st.lists(st.sampled_from(["a", "b", "1", "é", "e\u0301", "-1", "3"]),
                                  max_size=4) | st.just("ab"))
@example(labels=[2**62 + 1, 1.0], names=None)        # float labels once rounded the int ones
@example(labels=[["a"], ["b"]], names="ab")          # names as one string: not two names
def test_labels_are_kept_exactly_or_refused(labels, names):
    docs = [["x", "y"], ["y"], [], ["x"]][:max(len(labels), 1)]
    is_sets = any(isinstance(s, list) for s in labels)
    got = _outcome(lambda: Corpus.from_token_lists(docs, labels=labels, label_names=names))
    if is_sets:
        expected = _expect_label_sets(labels, len(docs), names)
        if expected is None:
            assert got is None
        else:
            assert got is not None and got.label_sets == expected
    else:
        expected = None if names is not None else _expect_gold_labels(labels, len(docs))
        if expected is None:
            assert got is None
        else:
            assert got is not None and got.labels.tolist() == expected


@FUZZ
@given(texts=st.lists(strings(max_size=12), max_size=5),
       min_df=st.sampled_from([1, 2, 0.5]), max_df=st.sampled_from([1.0, 0.6, 3]),
       sentences=st.booleans())
@example(texts=["J\u030cx ab", "\u01f0x ab"], min_df=1, max_df=1.0, sentences=False)
def test_texts_give_their_tokens_or_no_tokens(texts, min_df, max_df, sentences):
    """str.split tokens of the NFC texts, filtered by document frequency; the only error is a
    corpus left without tokens (or documents)."""
    got = _outcome(lambda: Corpus.from_texts(texts, min_df=min_df, max_df=max_df,
                                             sentences=sentences, **SPLIT))
    if sentences:   # sentences split at . ! ? + space and at line breaks: the same tokens
        texts = [" ".join(jt.text.split_sentences(t)) for t in texts]
    _check(got, _expect_texts(texts, min_df, max_df))


@FUZZ
@given(texts=st.lists(strings(max_size=16), max_size=5))
@example(texts=["J\u030cx ab", "\u01f0x ab"])        # lowercasing once left "ǰx" twice in the vocab
def test_default_tokenizer_gives_normalised_words(texts):
    """The default pipeline (NFC, words, lowercase, length >= 2, English stop words): its
    tokens are the corpus's, each NFC; transform of the same texts drops none of them."""
    got = _outcome(lambda: Corpus.from_texts(texts))
    options = jt.text.TextOptions.make()
    tokenised = options.tokenize(texts)
    assert all(t == _nfc(t) for doc in tokenised for t in doc)
    expected = None if not texts or not any(tokenised) else (
        tokenised, tuple(sorted(set(t for d in tokenised for t in d),
                                key=lambda w: (-sum(d.count(w) for d in tokenised), w))))
    _check(got, expected)


# --------------------------------------------------------------------------------------------
# arrays, bag-of-words

int_like = st.one_of(st.integers(-2, 8), st.floats(-2, 8), st.sampled_from([True, 2.0, 2**40]))
arrays = st.one_of(
    st.lists(int_like, max_size=8),
    hnp.arrays(st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float32,
                                np.float64, np.bool_]),
               st.integers(0, 8) | st.tuples(st.integers(1, 3), st.integers(1, 3))),
)


def _ints(x, lo, hi):
    a = np.asarray(x)
    if a.ndim != 1 or a.dtype.kind not in "iuf":
        return None
    if a.dtype.kind == "f" and (not np.all(np.isfinite(a)) or np.any(a != np.floor(a))):
        return None
    values = [int(v) for v in a.tolist()]
    return values if all(lo <= v <= hi for v in values) else None


@st.composite
def corpus_arrays(draw):
    """Arrays of a valid corpus, in one of the dtypes a caller may hold them in, maybe with one
    entry changed."""
    vocab = draw(st.lists(st.sampled_from(["a", "b", "c", "é", "d"]), min_size=1, max_size=5,
                          unique=True))
    lengths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    ids = draw(st.lists(st.integers(0, len(vocab) - 1), min_size=sum(lengths),
                        max_size=sum(lengths)))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    kinds = st.sampled_from([list, np.int8, np.uint16, np.int64, np.uint64, np.float32, np.float64])
    out = []
    for values in (list(ids), offsets.tolist()):
        if draw(st.integers(0, 2)) == 0 and values:
            values[draw(st.integers(0, len(values) - 1))] = draw(int_like)
        kind = draw(kinds)
        if kind is not list:
            with np.errstate(all="ignore"):                 # casts may wrap: the test sees them
                values = np.asarray(values).astype(kind)
        out.append(values)
    return out[0], out[1], vocab


@FUZZ
@given(arrays=corpus_arrays() | st.tuples(arrays, arrays, st.lists(st.one_of(words, tokens),
                                                                  max_size=6)))
def test_arrays_are_kept_exactly_or_refused(arrays):
    word_ids, doc_offsets, vocab = arrays
    got = _outcome(lambda: Corpus.from_arrays(word_ids, doc_offsets, vocab))
    ids = _ints(word_ids, -2**31, INT32_MAX)
    offs = _ints(doc_offsets, -2**63, 2**63 - 1)
    voc = _expect_vocab(vocab)
    ok = (ids is not None and offs is not None and voc is not None and len(offs) >= 2
          and offs[0] == 0 and all(a <= b for a, b in zip(offs, offs[1:]))
          and offs[-1] == len(ids) and ids and all(0 <= i < len(voc) for i in ids))
    if not ok:
        assert got is None
        return
    assert got is not None and got.word_ids.tolist() == ids and got.doc_offsets.tolist() == offs
    assert got.vocab == voc


bow_values = st.one_of(st.integers(-1, 6), st.floats(-1, 6), st.sampled_from(
    [True, None, "1", 2**31, 2**40, float("inf"), np.int64(2), np.float32(1.0)]))
bow_entry = st.one_of(st.tuples(bow_values, bow_values), st.tuples(st.integers(0, 4), st.integers(0, 3)),
                      st.sampled_from([(1,), (1, 2, 3), "ab", 5, None]))


@FUZZ
@given(docs=st.lists(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=4),
                    min_size=1, max_size=4)
       | st.lists(st.lists(bow_entry, max_size=4) | st.sampled_from([None, 3]), max_size=4),
       vocab=st.none() | st.just(["a", "b", "c", "d", "e"]) | st.lists(words, max_size=6)
       | st.dictionaries(st.one_of(st.integers(-1, 5), st.sampled_from([1.0, True, "0"])), words,
                         max_size=5),
       num_words=st.none() | st.none() | st.integers(-1, 7) | st.just(True))
def test_bag_of_words_gives_its_counts_or_a_corpus_error(docs, vocab, num_words):
    got = _outcome(lambda: Corpus.from_bow(docs, vocab=vocab, num_words=num_words))

    def expected():
        if num_words is not None and (isinstance(num_words, bool) or num_words < 0):
            return None
        voc = None
        if isinstance(vocab, dict):
            if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in vocab):
                return None
            if set(vocab) != set(range(len(vocab))):
                return None
            voc = [vocab[i] for i in range(len(vocab))]
        elif vocab is not None:
            voc = vocab
        if voc is not None and num_words is not None and num_words != len(voc):
            return None
        limit = len(voc) if voc is not None else num_words
        out, seen = [], []
        for doc in docs:
            if not isinstance(doc, list):
                return None
            tokens = []
            for entry in doc:
                if not isinstance(entry, (tuple, list, str)) or len(entry) != 2:
                    return None
                w, c = _as_int(entry[0]), _as_int(entry[1])
                if w is None or w < 0 or (limit is not None and w >= limit) or w > INT32_MAX:
                    return None
                if c is None or c < 0 or c > INT32_MAX:
                    return None
                seen.append(w)
                tokens += [w] * c
            out.append(tokens)
        if voc is None:
            voc = [str(i) for i in range(limit if limit is not None else max(seen, default=-1) + 1)]
        voc = _expect_vocab(voc)
        if not out or not any(out) or voc is None:
            return None
        return [[voc[i] for i in doc] for doc in out], voc

    _check(got, expected())


# --------------------------------------------------------------------------------------------
# LDA-C, vocabularies


ldac_docs = st.lists(st.dictionaries(st.integers(0, 6), st.integers(0, 3), max_size=4),
                     min_size=0, max_size=5)


@st.composite
def ldac_files(draw):
    """An LDA-C file (maybe edited), its documents as written."""
    docs = draw(ldac_docs)
    sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
    lines = []
    for doc in docs:
        pairs = list(doc.items())
        lines.append(sep.join([str(len(pairs))] + [f"{i}:{c}" for i, c in pairs])
                     + draw(st.sampled_from(["", " ", "\t"])))
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    return _file_bytes(text, draw)


@FUZZ
@given(data=ldac_files() | st.binary(max_size=40), vocab=st.none() | st.integers(0, 8),
       vocab_as=st.sampled_from(["file", "list"]))
@example(data=b"1 " + b"0" * 30 + b"1:2\n", vocab=None, vocab_as="list")
@example(data=b"1 0:" + b"0" * 5000 + b"2\n", vocab=None, vocab_as="list")   # a ValueError of int()
@example(data=b"1 0:" + b"9" * 5000 + b"\n", vocab=None, vocab_as="list")
@example(data=b"1" * 5000 + b" 0:1\n", vocab=None, vocab_as="list")
def test_ldac_gives_its_counts_or_a_format_error(put, data, vocab, vocab_as):
    path = put("c.ldac", data)
    voc = None if vocab is None else [f"w{i}" for i in range(vocab)]
    if voc is not None and vocab_as == "file":
        voc = put("c.vocab", "".join(w + "\n" for w in voc))
    got = _outcome(lambda: Corpus.from_ldac(path, vocab=voc))
    expected = _expect_ldac(data, vocab)
    if expected is None:
        assert got is None
        return
    docs, size = expected
    names = [f"w{i}" for i in range(size)] if vocab is not None else [str(i) for i in range(size)]
    _check(got, ([[names[i] for i in doc] for doc in docs], names))


@FUZZ
@given(data=ldac_files() | st.binary(max_size=40))
@example(data=b"1 0:x\n")                           # once a ValueError (int('x'))
@example(data=b"1 0:" + b"9" * 5000 + b"\n")
def test_ldac_token_counts_are_a_format_error_or_right(put, data):
    """``io.ldac_doc_tokens`` (how a multi-process fit balances its documents) reads the same
    files: the tokens per line, or a FormatError."""
    path = put("t.ldac", data)
    try:
        counts = io.ldac_doc_tokens(path)
    except FormatError as e:
        assert str(e).startswith(str(path))
        return
    lines = _decode(data)
    expected = _expect_ldac(data)
    if expected is not None:
        assert counts.tolist() == [len(doc) for doc in expected[0]]
    else:
        assert lines is not None and counts.shape == (len(lines),)


@FEW
@given(data=st.binary(max_size=30) | st.builds(lambda ws: "\n".join(ws).encode("utf-8", "surrogatepass"),
                                                 st.lists(st.one_of(words, tokens), max_size=5)))
def test_vocabulary_files_give_their_words_or_a_format_error(put, data):
    path = put("v.txt", data)
    got = _outcome(lambda: Corpus.from_ldac(put("one.ldac", "1 0:1\n"), vocab=path))
    words_ = _expect_vocab_file(data)
    voc = None if words_ is None else _expect_vocab(words_)
    if voc is None or not voc:
        assert got is None
    else:
        assert got is not None and got.vocab == voc


# --------------------------------------------------------------------------------------------
# UCI bag-of-words


@st.composite
def uci_files(draw):
    """A UCI docword file (maybe edited), with W words in its vocabulary file."""
    d, w = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(st.integers(1, max(d, 1)), st.integers(1, w), st.integers(0, 3)),
                         max_size=6))
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    text = "\n".join([str(d), str(w), str(len(rows))] + [sep.join(map(str, r)) for r in rows])
    text += draw(st.sampled_from(["", "\n", "\n\n", "\n \n"]))
    return _file_bytes(text, draw), w


def _expect_uci(data: bytes, num_words: int):
    lines = _decode(data)
    if lines is None or len(lines) < 3:
        return None
    header = [_digits(ln.strip()) for ln in lines[:3]]
    if any(v is None or v > INT32_MAX for v in header):
        return None
    d, w, nnz = header
    body = lines[3:]
    while body and not body[-1].strip():
        body.pop()
    if len(body) != nnz or w != num_words:
        return None
    rows = []
    for line in body:
        fields = [_digits(f) for f in line.split()]
        if len(fields) != 3 or None in fields or max(fields) > INT32_MAX:
            return None
        rows.append(fields)
    if any(not (1 <= r[0] <= d and 1 <= r[1] <= w) for r in rows):
        return None
    if sum(r[2] for r in rows) > MAX_TOKENS or d - max((r[0] for r in rows), default=0) > 2**24:
        return None
    docs = [[] for _ in range(d)]
    for doc, word, count in rows:
        docs[doc - 1] += [word - 1] * count
    return (docs, w) if docs and any(docs) else None


@FUZZ
@given(file=uci_files() | st.tuples(st.binary(max_size=30), st.integers(1, 3)))
@example(file=(b"3\n2\n1\n1_0 1 1\n", 2))          # int() read "1_0" as 10
@example(file=(b"1_0\n2\n1\n1 1 1\n", 2))
@example(file=(b"2\n2\n1\n+1 1 1\n", 2))
@example(file=(b"2\n2\n1\n1 1 -" + b"1" * 25 + b"\n", 2))  # an OverflowError into int64 rows
@example(file=(b"2\n2\n1\n1 1 " + b"1" * 5000 + b"\n", 2))  # a ValueError of int()
@example(file=(b"1" * 5000 + b"\n2\n1\n1 1 1\n", 2))
def test_uci_gives_its_counts_or_a_format_error(put, file):
    data, num_words = file
    names = [f"w{i}" for i in range(num_words)]
    docword = put("docword.txt", data)
    vocab = put("vocab.txt", "".join(n + "\n" for n in names))
    got = _outcome(lambda: Corpus.from_uci(docword, vocab))
    expected = _expect_uci(data, num_words)
    if expected is None:
        assert got is None
        return
    docs, _ = expected
    _check(got, ([[names[i] for i in doc] for doc in docs], names))


# --------------------------------------------------------------------------------------------
# one text per line, labelled lines, JSON lines


no_break = chars.filter(lambda c: "\n" not in c and "\r" not in c)
text_lines = st.lists(strings(no_break, max_size=10), max_size=5)


@st.composite
def text_files(draw):
    return _file_bytes("\n".join(draw(text_lines)) + ("\n" if draw(st.booleans()) else ""), draw)


@FUZZ
@given(data=text_files() | st.binary(max_size=30))
def test_text_lines_give_one_document_a_line_or_a_format_error(put, data):
    path = put("docs.txt", data)
    got = _outcome(lambda: Corpus.from_text_file(path, **SPLIT))
    lines = _decode(data)
    _check(got, None if lines is None else _expect_texts(lines))


@st.composite
def labelled_files(draw):
    label = strings(st.sampled_from(["a", "b", "é", "e\u0301", "1", "a", "b", " ", "-", "\t"]),
                    min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=3)
    lines = [draw(st.lists(label, min_size=1, max_size=3)) for _ in range(draw(st.integers(0, 4)))]
    text = "\n".join("--".join(ls) + draw(st.sampled_from(["\t", "\t", "\t", " "]))
                     + draw(strings(no_break, max_size=8))
                     for ls in lines)
    return _file_bytes(text, draw)


@FUZZ
@given(data=labelled_files() | st.binary(max_size=30))
def test_labelled_lines_give_their_label_sets_or_a_format_error(put, data):
    path = put("labelled.txt", data)
    got = _outcome(lambda: Corpus.from_text_file(path, labelled=True, **SPLIT))
    lines = _decode(data)
    expected, sets = None, []
    if lines is not None:
        texts = []
        for line in lines:
            head, tab, text = line.partition("\t")
            labels = [x.strip() for x in head.split("--")]
            if not tab or not head.strip() or not all(labels):
                break
            sets.append(tuple(dict.fromkeys(_nfc(x) for x in labels)))
            texts.append(text)
        else:
            expected = _expect_texts(texts)
    _check(got, expected)
    if got is not None:
        assert got.label_sets == sets


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | strings(max_size=6),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=4)


@st.composite
def jsonl_files(draw):
    lines = []
    odd = st.integers(0, 7).map(lambda i: i == 0)          # one in eight: something unusual
    for _ in range(draw(st.integers(0, 4))):
        obj = {}
        if not draw(odd):
            obj["text"] = draw(json_values if draw(odd) else strings(max_size=10))
        if not draw(odd):
            obj["label"] = draw(json_values if draw(odd) else st.integers(-2, 2) | strings(max_size=2))
        if draw(odd):
            obj.update(draw(st.dictionaries(st.sampled_from(["x", "text"]), json_values, max_size=1)))
        line = json.dumps(obj, ensure_ascii=draw(st.booleans()))
        lines.append(draw(st.sampled_from(["", "  ", json.dumps([1]), "{"])) if draw(odd) else line)
    return _file_bytes("\n".join(lines), draw)


def _expect_jsonl(data: bytes, label_key):
    lines = _decode(data)
    if lines is None:
        return None
    texts, labels = [], []
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            return None
        texts.append(obj["text"])
        if label_key is not None:
            label = obj.get(label_key, None)
            if isinstance(label, bool) or not isinstance(label, (int, str)) or label_key not in obj:
                return None
            if isinstance(label, int) and not -2**63 <= label < 2**63:
                return None
            labels.append(label)
    return texts, labels


@FUZZ
@given(data=jsonl_files() | st.binary(max_size=30), label_key=st.sampled_from([None, "label"]))
@example(data=b'{"text": "a b", "label": ' + b"1" * 5000 + b"}\n", label_key="label")
@example(data=b'{"text": "a b", "x": ' + b"1" * 5000 + b"}\n", label_key=None)
def test_jsonl_gives_its_texts_and_labels_or_a_format_error(put, data, label_key):
    path = put("docs.jsonl", data)
    got = _outcome(lambda: Corpus.from_jsonl(path, label_key=label_key, **SPLIT))
    read = _expect_jsonl(data, label_key)
    texts, labels = read if read is not None else (None, None)
    _check(got, None if read is None or not texts else _expect_texts(texts))
    if got is not None and label_key is not None:
        if all(isinstance(v, int) for v in labels):
            assert got.labels.tolist() == labels
        else:
            ids: dict = {}
            assert got.labels.tolist() == [ids.setdefault(v, len(ids)) for v in labels]


# --------------------------------------------------------------------------------------------
# regressions found by the properties above (each also an @example)


def test_an_ldac_line_balanced_before_reading_names_its_bad_pair(tmp_path):
    path = tmp_path / "c.ldac"
    path.write_text("2 0:1 1:2\n1 0:x\n")
    with pytest.raises(FormatError, match=r"c\.ldac:2: pair 1 \('0:x'\): count 'x' is not an integer"):
        io.ldac_doc_tokens(path)
    path.write_text("2 0:1 1:2\n0\n")
    assert io.ldac_doc_tokens(path).tolist() == [3, 0]


def test_a_json_number_too_long_to_read_is_a_format_error(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a b"}\n{"text": "c", "n": ' + "9" * 5000 + "}\n")
    with pytest.raises(FormatError, match=r"d\.jsonl:2: .*digits"):
        Corpus.from_jsonl(path)


@pytest.mark.parametrize("text, match", [
    ("3\n2\n1\n1_0 1 1\n", r":4: docID '1_0' is not an integer"),
    ("1_0\n2\n1\n1 1 1\n", r":1: header D \(number of documents\) must be an integer, got '1_0'"),
    ("2\n2\n1\n+1 1 1\n", r":4: docID '\+1' is not an integer"),
    ("2\n2\n1\n1 \u0661 1\n", r":4: wordID '\u0661' is not an integer"),
])
def test_uci_numbers_are_ascii_digits(tmp_path, text, match):
    """int() also reads "1_0" (as 10), "+1" and other scripts' digits."""
    (tmp_path / "v.txt").write_text("a\nb\n")
    (tmp_path / "d.txt").write_text(text)
    with pytest.raises(FormatError, match=match):
        Corpus.from_uci(tmp_path / "d.txt", tmp_path / "v.txt")


@pytest.mark.parametrize("build", [
    lambda: Corpus.from_token_lists(None), lambda: Corpus.from_token_lists(5),
    lambda: Corpus.from_texts(None), lambda: Corpus.from_bow(None), lambda: Corpus.from_bow(7),
])
def test_documents_that_are_not_iterable_are_a_corpus_error(build):
    with pytest.raises(jt.CorpusError, match="got (NoneType|int)"):
        build()


def test_label_names_given_as_one_string_are_refused():
    with pytest.raises(jt.CorpusError, match="label_names must be a sequence of strings"):
        Corpus.from_token_lists([["x"], ["y"]], labels=[["a"], ["b"]], label_names="ab")
    with pytest.raises(jt.CorpusError, match="label_names must be a sequence of strings"):
        Corpus.from_arrays([0, 0], [0, 1, 2], ["x"], labels=[["a"], ["b"]], label_names="ab")


def test_integer_labels_are_not_rounded_through_floats():
    corpus = Corpus.from_token_lists([["x"], ["y"]], labels=[2**62 + 1, 1.0])
    assert corpus.labels.tolist() == [2**62 + 1, 1]


def test_lowercased_words_stay_normalised():
    """Lowercasing can undo NFC ("J\\u030c" lowercases to "j\\u030c", whose NFC is "\\u01f0"):
    the words of two spellings were two vocabulary entries, refused as the same word, and
    transform (which tokenises new texts with the corpus's options) dropped the decomposed one
    as an unknown word."""
    corpus = Corpus.from_texts(["J\u030cx ab", "\u01f0x ab"])
    assert corpus.vocab == ("ab", "\u01f0x") and corpus.num_tokens == 4
    assert corpus.text_options.tokenize(["J\u030cx ab"]) == [["\u01f0x", "ab"]]
