"""Tests for jaxtopics.io: file readers, atomic writes, model files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import io
from jaxtopics.corpus import Corpus
from jaxtopics.errors import FormatError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


# ------------------------------------------------------------------------------------------
# FormatError


def test_format_error_str():
    assert str(FormatError("bad", "f.txt", 3)) == "f.txt:3: bad"
    assert str(FormatError("bad", "f.txt")) == "f.txt: bad"
    assert str(FormatError("bad")) == "bad"
    e = FormatError("bad", Path("f.txt"), 3)
    assert (e.message, e.path, e.line) == ("bad", "f.txt", 3)


# ------------------------------------------------------------------------------------------
# LDA-C


def test_read_ldac(tmp_path: Path):
    p = write(tmp_path / "a.ldac", "2 3:2 0:1\n0\n1 1:1\n")
    ids, offsets = io.read_ldac(p)
    assert ids.dtype == np.int32 and offsets.dtype == np.int64
    assert ids.tolist() == [3, 3, 0, 1]
    assert offsets.tolist() == [0, 3, 3, 4]
    # CRLF line ends, no trailing newline, zero counts, extra spaces
    p = write(tmp_path / "b.ldac", "2  3:2\t0:0 \r\n1 1:1")
    ids, offsets = io.read_ldac(p)
    assert ids.tolist() == [3, 3, 1] and offsets.tolist() == [0, 2, 3]


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("1 0:1\n2 1:1 x:2\n", r"bad.ldac:2: pair 2 \('x:2'\): word id 'x' is not an integer"),
        ("1 0:1\n1 1 2\n", r"bad.ldac:2: pair 1 \('1'\): expected word_id:count"),
        ("1 0:1\n1 1:2:3\n", r"bad.ldac:2: pair 1 \('1:2:3'\): expected word_id:count"),
        ("1 0:1\n1 0:1\n1 -1:2\n", r"bad.ldac:3: pair 1 \('-1:2'\): negative word id -1"),
        ("1 0:-2\n", r"bad.ldac:1: pair 1 \('0:-2'\): negative count -2"),
        ("1 0:1.5\n", r"bad.ldac:1: .*count '1.5' is not an integer"),
        ("x 0:1\n", r"bad.ldac:1: expected the number of distinct words"),
        ("1 0:1\n\n1 0:1\n", r"bad.ldac:2: blank line"),
        ("1 0:1\n3 0:1 1:1\n", r"bad.ldac:2: line declares 3 distinct words but holds 2"),
        ("1 0:99999999999\n", r"bad.ldac:1: count 99999999999 is too large"),
    ],
)
def test_read_ldac_malformed(tmp_path: Path, text: str, pattern: str):
    p = write(tmp_path / "bad.ldac", text)
    with pytest.raises(FormatError, match=pattern) as info:
        io.read_ldac(p)
    assert info.value.line is not None


def test_write_ldac_round_trip(tmp_path: Path):
    c = Corpus.from_arrays([2, 0, 2, 1, 1], [0, 3, 3, 5], ["a", "b", "c"])
    p = tmp_path / "out.ldac"
    io.write_ldac(p, c)
    assert p.read_text() == "2 0:1 2:2\n0\n1 1:2\n"
    ids, offsets = io.read_ldac(p)
    assert offsets.tolist() == c.doc_offsets.tolist()
    assert np.bincount(ids, minlength=3).tolist() == c.word_counts().tolist()


def test_read_ldac_large_is_fast_enough(tmp_path: Path):
    rng = np.random.default_rng(0)
    lines, total = [], 0
    for _ in range(2000):
        k = int(rng.integers(0, 100))
        ids = np.sort(rng.choice(5000, size=k, replace=False))
        cnt = rng.integers(1, 4, size=k)
        total += int(cnt.sum())
        lines.append(f"{k} " + " ".join(f"{i}:{c}" for i, c in zip(ids, cnt)))
    p = write(tmp_path / "big.ldac", "\n".join(lines) + "\n")
    ids, offsets = io.read_ldac(p)
    assert ids.shape[0] == total == offsets[-1] and offsets.shape[0] == 2001


# ------------------------------------------------------------------------------------------
# vocab, UCI, text, jsonl


def test_read_vocab(tmp_path: Path):
    p = write(tmp_path / "v.txt", "alpha\nbeta  \r\ngamma")
    assert io.read_vocab(p) == ("alpha", "beta", "gamma")
    with pytest.raises(FormatError, match=r"v2.txt:2: blank vocabulary entry"):
        io.read_vocab(write(tmp_path / "v2.txt", "a\n\nb\n"))
    io.write_vocab(tmp_path / "v3.txt", ("x", "y"))
    assert io.read_vocab(tmp_path / "v3.txt") == ("x", "y")


def test_read_uci(tmp_path: Path):
    dw = write(tmp_path / "docword.txt", "3\n4\n4\n1 2 2\n1 4 1\n3 1 1\n3 3 2\n")
    vocab = write(tmp_path / "vocab.txt", "a\nb\nc\nd\n")
    ids, offsets, v = io.read_uci(dw, vocab)
    assert v == ("a", "b", "c", "d")
    assert ids.tolist() == [1, 1, 3, 0, 2, 2]
    assert offsets.tolist() == [0, 3, 3, 6]
    c = Corpus.from_uci(dw, vocab)
    assert c.words(0) == ["b", "b", "d"]


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("3\n4\n5\n1 2 2\n", r"docword.txt:3: header says NNZ = 5 but the file holds 1"),
        ("3\nx\n1\n1 2 2\n", r"docword.txt:2: header W .* must be an integer"),
        ("3\n4\n2\n1 2 2\n4 1 1\n", r"docword.txt:5: docID 4 is outside 1..3"),
        ("3\n4\n2\n1 2 2\n1 5 1\n", r"docword.txt:5: wordID 5 is outside 1..4"),
        ("3\n4\n2\n1 2 2\n1 3 -1\n", r"docword.txt:5: negative count -1"),
        ("3\n4\n2\n1 2 2\n1 3\n", r"docword.txt:5: expected 'docID wordID count'"),
        ("3\n4\n2\n1 2 2\n1 3 q\n", r"docword.txt:5: count 'q' is not an integer"),
    ],
)
def test_read_uci_malformed(tmp_path: Path, text: str, pattern: str):
    dw = write(tmp_path / "docword.txt", text)
    vocab = write(tmp_path / "vocab.txt", "a\nb\nc\nd\n")
    with pytest.raises(FormatError, match=pattern):
        io.read_uci(dw, vocab)


def test_read_uci_vocab_size_mismatch(tmp_path: Path):
    dw = write(tmp_path / "docword.txt", "1\n4\n1\n1 2 2\n")
    vocab = write(tmp_path / "vocab.txt", "a\nb\n")
    with pytest.raises(FormatError, match=r"vocab.txt: vocabulary has 2 words .* W = 4"):
        io.read_uci(dw, vocab)


def test_read_text_lines(tmp_path: Path):
    p = write(tmp_path / "t.txt", "first doc\n\nthird \u2028 doc\r\n")
    assert io.read_text_lines(p) == ["first doc", "", "third \u2028 doc"]
    p = write(tmp_path / "bom.txt", "\ufeffhello\n")
    assert io.read_text_lines(p) == ["hello"]


def test_non_utf8_file(tmp_path: Path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"fine line\n\xff\xfe bad\n")
    for reader in (io.read_text_lines, io.read_vocab, io.read_ldac, io.read_jsonl):
        with pytest.raises(FormatError, match=r"bad.txt:2: file is not valid UTF-8.*offset 10"):
            reader(p)
    with pytest.raises(FormatError, match=r"bad.txt:2: .*UTF-8"):
        Corpus.from_text_file(p)


def test_read_jsonl(tmp_path: Path):
    p = write(
        tmp_path / "d.jsonl",
        '{"text": "a b", "cluster": 3}\n\n{"text": "c", "cluster": 1, "x": null}\n',
    )
    texts, labels = io.read_jsonl(p, label_key="cluster")
    assert texts == ["a b", "c"] and labels == [3, 1]
    texts, labels = io.read_jsonl(p)
    assert labels is None


@pytest.mark.parametrize(
    "text, kwargs, pattern",
    [
        ('{"text": "a"}\n{"text": "b"\n', {}, r"d.jsonl:2: malformed JSON"),
        ('{"text": "a"}\n{"body": "b"}\n', {}, r"d.jsonl:2: missing key 'text'"),
        (
            '{"text": "a", "y": 1}\n{"text": "b"}\n',
            {"label_key": "y"},
            r"d.jsonl:2: missing key 'y'",
        ),
        ('{"text": 5}\n', {}, r"d.jsonl:1: value of 'text' must be a string"),
        ('["a"]\n', {}, r"d.jsonl:1: expected a JSON object"),
        ('{"text": "a", "y": 1.5}\n', {"label_key": "y"}, r"d.jsonl:1: label 'y'"),
        ('{"text": "a"}\n' + "[" * 100_000 + "\n", {}, r"d.jsonl:2: JSON nested too deeply"),
    ],
)
def test_read_jsonl_malformed(tmp_path: Path, text: str, kwargs: dict, pattern: str):
    p = write(tmp_path / "d.jsonl", text)
    with pytest.raises(FormatError, match=pattern):
        io.read_jsonl(p, **kwargs)


# ------------------------------------------------------------------------------------------
# real data


def test_real_reuters_files():
    ldac, tokens = DATA / "reuters" / "reuters.ldac", DATA / "reuters" / "reuters.tokens"
    if not ldac.exists() or not tokens.exists():
        pytest.skip("shared Reuters data not found")
    ids, offsets = io.read_ldac(ldac)
    vocab = io.read_vocab(tokens)
    total = 0
    for line in ldac.read_text(encoding="utf-8").splitlines():
        total += sum(int(pair.split(":")[1]) for pair in line.split()[1:])
    assert offsets.shape[0] - 1 == 395
    assert ids.shape[0] == total == offsets[-1]
    num_lines = len(tokens.read_text(encoding="utf-8").splitlines())
    assert len(vocab) == num_lines == 4258
    assert int(ids.max()) < len(vocab)


def test_real_tweet_jsonl():
    path = DATA / "gsdmm" / "Tweet.jsonl"
    if not path.exists():
        pytest.skip("shared GSDMM data not found")
    texts, labels = io.read_jsonl(path, label_key="cluster")
    assert len(texts) == len(labels) == 2472
    assert len(set(labels)) == 89
    assert all(isinstance(t, str) for t in texts)


# ------------------------------------------------------------------------------------------
# atomic writes


def test_atomic_write_bytes(tmp_path: Path):
    p = tmp_path / "f.bin"
    io.atomic_write_bytes(p, b"one")
    io.atomic_write_bytes(p, b"two")
    assert p.read_bytes() == b"two"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_atomic_path_failure_leaves_original(tmp_path: Path):
    p = tmp_path / "model.jtm"
    p.write_bytes(b"original")
    seen = []
    with pytest.raises(RuntimeError, match="disk on fire"):
        with io.atomic_path(p) as tmp:
            seen.append(tmp)
            assert tmp.parent == tmp_path and tmp != p
            tmp.write_bytes(b"half-written")
            raise RuntimeError("disk on fire")
    assert p.read_bytes() == b"original"
    assert not seen[0].exists()
    assert os.listdir(tmp_path) == ["model.jtm"]


def test_atomic_path_directory_is_error(tmp_path: Path):
    with pytest.raises(IsADirectoryError):
        with io.atomic_path(tmp_path):
            pass


# ------------------------------------------------------------------------------------------
# model files


def test_model_file_round_trip(tmp_path: Path):
    vocab = np.array(["alpha", "béta", "γ"])
    arrays = {
        "n_kw": np.arange(6, dtype=np.int32).reshape(2, 3),
        "phi": np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3),
        "vocab": vocab,
        "names": ["x", "y"],
    }
    meta = {"model": "lda", "num_topics": np.int64(2), "alpha": 0.1, "seed": 0, "sweeps": [1, 2]}
    p = tmp_path / "m.jtm"
    io.save_model_file(p, arrays, meta)
    assert sorted(os.listdir(tmp_path)) == ["m.jtm"]  # exactly the given name, no temp left
    got, got_meta = io.load_model_file(p)
    assert set(got) == {"n_kw", "phi", "vocab", "names"}
    assert got["n_kw"].dtype == np.int32 and np.array_equal(got["n_kw"], arrays["n_kw"])
    assert got["phi"].dtype == np.float32 and np.array_equal(got["phi"], arrays["phi"])
    assert got["vocab"].tolist() == ["alpha", "béta", "γ"]
    assert got["names"].tolist() == ["x", "y"]
    assert got_meta["format"] == "jaxtopics-model"
    assert got_meta["format_version"] == io.MODEL_FORMAT_VERSION
    assert got_meta["num_topics"] == 2 and got_meta["alpha"] == 0.1
    assert got_meta["sweeps"] == [1, 2]
    io.save_model_file(p, {"a": np.zeros(2)}, {})  # overwrite in place
    assert set(io.load_model_file(p)[0]) == {"a"}


def test_model_file_rejects_objects_and_dirs(tmp_path: Path):
    with pytest.raises(ValueError, match="dtype object"):
        io.save_model_file(tmp_path / "m.jtm", {"x": np.array([1, "a", None], dtype=object)}, {})
    with pytest.raises(ValueError, match="invalid array name"):
        io.save_model_file(tmp_path / "m.jtm", {"__meta__": np.zeros(1)}, {})
    with pytest.raises(IsADirectoryError):
        io.save_model_file(tmp_path, {"x": np.zeros(1)}, {})
    assert os.listdir(tmp_path) == []


def test_load_model_file_wrong_format(tmp_path: Path):
    text = write(tmp_path / "notes.txt", "hello, not a model\n")
    with pytest.raises(FormatError, match=r"notes.txt: not a jaxtopics model file"):
        io.load_model_file(text)
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.zeros(3))
    with pytest.raises(FormatError, match=r"plain.npz: not a jaxtopics model file .*__meta__"):
        io.load_model_file(plain)
    npy = tmp_path / "arr.npy"
    np.save(npy, np.zeros(3))
    with pytest.raises(FormatError, match="not a jaxtopics model file"):
        io.load_model_file(npy)
    other = tmp_path / "other.npz"
    np.savez(other, __meta__=np.array(json.dumps({"format": "something-else"})))
    with pytest.raises(FormatError, match="format tag 'something-else'"):
        io.load_model_file(other)
    with pytest.raises(FileNotFoundError):
        io.load_model_file(tmp_path / "missing.jtm")


def test_load_model_file_newer_version(tmp_path: Path):
    newer = tmp_path / "newer.jtm"
    meta = {"format": "jaxtopics-model", "format_version": 99}
    with open(newer, "wb") as f:  # a file object: savez must not append ".npz"
        np.savez(f, __meta__=np.array(json.dumps(meta)), x=np.zeros(1))
    with pytest.raises(FormatError, match=r"format_version 99 is newer .* \(up to 3\)"):
        io.load_model_file(newer)


# ------------------------------------------------------------------------------------------
# issue #9


def test_read_uci_line_with_wrong_field_count(tmp_path: Path):
    """#2: "1 1 2 1" then "1 3" (NNZ=2) has 3 x NNZ fields in all; it was read as 5 tokens of
    word 1 by joining the lines. Each line must hold three integers."""
    dw = write(tmp_path / "docword.txt", "1\n4\n2\n1 1 2 1\n1 3\n")
    vocab = write(tmp_path / "vocab.txt", "a\nb\nc\nd\n")
    with pytest.raises(FormatError, match=r"docword.txt:4: expected 'docID wordID count'"):
        io.read_uci(dw, vocab)
    dw = write(tmp_path / "docword.txt", "1\n4\n2\n1 1\n2 1 3\n")
    with pytest.raises(FormatError, match=r"docword.txt:4: expected"):
        io.read_uci(dw, vocab)
    dw = write(tmp_path / "docword.txt", "1\n4\n2\n 1\t1 2 \n1 3 1\r\n")   # odd spacing is fine
    assert io.read_uci(dw, vocab)[0].tolist() == [0, 0, 2]


@pytest.mark.parametrize("text, pattern", [
    ("1\n4\n1\n1 1 1099511627776\n", r"docword.txt:4: .*count.* 1099511627776"),     # 2**40
    ("1\n4\n1\n1 1 4611686018427387904\n", r"docword.txt:4: .*count.* 4611686018427387904"),
    ("1\n4\n1\n1 1 99999999999999999999999\n", r"docword.txt:4: count 9+ is too large"),
    ("1\n4\n2\n1 1 2000000000\n1 2 2000000000\n", r"docword.txt:5: the counts add up to more"),
    ("10000000000000\n4\n1\n1 1 1\n", r"docword.txt:1: header D .* = 10000000000000 is too large"),
    ("1\n10000000000000\n1\n1 1 1\n", r"docword.txt:2: header W .* is too large"),
    ("1\n4\n10000000000000\n1 1 1\n", r"docword.txt:3: header NNZ = 10000000000000 is too large"),
])
def test_read_uci_huge_numbers_are_format_errors(tmp_path: Path, text: str, pattern: str):
    """#7: a count of 2**40 or D = 10**13 tried to allocate TiB (MemoryError); 2**62 gave
    "array is too big" without file or line. Every header size is bounded before allocating."""
    dw = write(tmp_path / "docword.txt", text)
    vocab = write(tmp_path / "vocab.txt", "a\nb\nc\nd\n")
    with pytest.raises(FormatError, match=pattern):
        io.read_uci(dw, vocab)


def test_read_ldac_total_tokens_are_bounded(tmp_path: Path):
    """#7 sibling: LDA-C counts within int32 each but beyond it in total are refused by line."""
    p = write(tmp_path / "huge.ldac", "1 0:5\n1 0:2147483647\n")
    with pytest.raises(FormatError, match=r"huge.ldac:2: the counts add up to more"):
        io.read_ldac(p)


def test_string_tables_round_trip():
    """#11: vocabularies as UTF-8 bytes + offsets: compact and lossless ("\\x00", surrogates)."""
    words = ("a", "", "nul\x00", "béta", "x" * 2000, "sur\udcff", "😀")
    data, offsets = io.encode_strings(words)
    assert data.dtype == np.uint8 and data.nbytes < 2100 and offsets.tolist()[:3] == [0, 1, 1]
    assert io.decode_strings(data, offsets) == words
    assert np.asarray(words).nbytes > 7 * 2000 * 4 - 1        # what the unicode array cost
    for bad_offsets in ([0, 2, 1, data.size], [1, data.size], [0, data.size + 1]):
        with pytest.raises(ValueError, match="offsets"):
            io.decode_strings(data, np.asarray(bad_offsets))
    with pytest.raises(ValueError, match="UTF-8"):
        io.decode_strings(np.array([0xFF], np.uint8), np.array([0, 1]))


def test_atomic_write_names_the_target_not_the_temp_file(tmp_path: Path):
    """#3 sibling: a missing directory was reported with the temporary file's name."""
    target = tmp_path / "missing" / "m.jtm"
    with pytest.raises(FileNotFoundError) as e:
        io.atomic_write_bytes(target, b"x")
    assert e.value.filename == str(target) and ".tmp" not in str(e.value)


def test_a_full_disk_names_the_file_and_leaves_nothing(tmp_path: Path, monkeypatch):
    """Review: a full disk was `jaxtopics: error: No space left on device`, naming no file (a
    write's ENOSPC carries none); it names the file being written, and neither the old file
    nor a temporary one is touched or left."""
    import errno
    target = tmp_path / "m.jtm"
    target.write_bytes(b"old")

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(OSError) as e:
        io.atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert target.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [target]


def test_uci_header_cannot_allocate_what_the_file_does_not_hold(tmp_path):
    (tmp_path / "dw.txt").write_text("2000000000\n3\n1\n1 1 1\n")
    (tmp_path / "v.txt").write_text("a\nb\nc\n")
    with pytest.raises(FormatError, match="header D = 2000000000"):
        jt.Corpus.from_uci(tmp_path / "dw.txt", tmp_path / "v.txt")


def test_old_mac_line_endings_separate_documents(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"hello world foo\rbar baz qux\r")
    assert jt.Corpus.from_text_file(tmp_path / "t.txt").num_docs == 2


def test_an_ldac_line_that_repeats_a_word_is_refused(tmp_path):
    """Review: `2 0:1 0:3` (two distinct words declared, one word twice) became 4 tokens."""
    (tmp_path / "d.ldac").write_text("2 0:1 1:3\n2 1:1 0:3\n3 2:1 0:1 2:3\n")
    with pytest.raises(FormatError, match=r"d.ldac:3: word id 2 appears twice"):
        jt.Corpus.from_ldac(tmp_path / "d.ldac")
    (tmp_path / "e.ldac").write_text("2 0:1 1:3\n2 1:1 0:3\n")        # unsorted ids are fine
    assert jt.Corpus.from_ldac(tmp_path / "e.ldac").num_tokens == 8
