"""Damaged model files, property-based (hypothesis; issue 36): random byte edits of a saved
model file of each model - a flipped bit, an overwritten, inserted or deleted byte, the file
cut short, bytes appended - are refused with one ``FormatError`` naming the file, or load as
exactly the model saved; never another exception, never a silently different model.

Why an edit can load at all (docs/model-files.md, jaxtopics/io.py): a model file is an
uncompressed zip of ``.npy`` members (numpy's npz) whose metadata member carries a SHA-256 of
every array (name, dtype, shape, bytes) and of the metadata. An edit inside a member's bytes
fails the zip's CRC-32 of that member, or (a shape in an ``.npy`` header, a value of the
metadata) the checksum; an edit of the zip's own bookkeeping either breaks the archive or
touches what reading ignores: timestamps, "version made by", file attributes, the
end record's comment length, bytes after the end. Those load the same model, and the test
checks that they do, entry for entry.

Offsets are drawn anywhere in the file and, more often, in the zip's local headers, its
central directory and the start of each ``.npy`` member (the header numpy parses).
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

import jaxtopics as jt
from jaxtopics import io
from jaxtopics.errors import FormatError
from jaxtopics.estimators import MODELS

from old_model_fixtures import FIXTURES

#: hypothesis keeps its caches in ./.hypothesis unless told otherwise: outside the repository
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "jaxtopics-hypothesis")

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: model -> its corpus and estimator (those of the old-format fixtures; fitted here for 2 sweeps)
SETUPS = {entry[0]: (entry[2], entry[3]) for entry in FIXTURES.values()}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """saved(name) -> (the bytes of a model file saved by today's code, its arrays and
    metadata as read back, the model loaded from it); fitted once per model."""
    root, cache = tmp_path_factory.mktemp("saved"), {}

    def get(name: str):
        if name not in cache:
            corpus, make = SETUPS[name]
            path = root / f"{name}.jtm"
            make(jt).fit(corpus(), 2, seed=0, progress=False).save(path)
            cache[name] = (path.read_bytes(), io.load_model_file(path), jt.load(path))
        return cache[name]

    return get


def _regions(data: bytes) -> list[tuple[int, int]]:
    """[start, stop) byte ranges of the zip's bookkeeping: each member's local header and the
    first 128 bytes of its data (the .npy header), and the central directory with the end
    record."""
    import io as _pyio
    with zipfile.ZipFile(_pyio.BytesIO(data)) as z:
        out = [(z.start_dir, len(data))]
        for info in z.infolist():
            start = info.header_offset
            data_start = start + 30 + len(info.filename.encode()) + len(info.extra)
            out.append((start, data_start + min(info.compress_size, 128)))
    return out


@st.composite
def edits(draw, data: bytes):
    """1-3 edits of `data`, each at an offset anywhere or (twice as often) in the regions."""
    regions = _regions(data)
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 2)) == 0 or not out:
            at = draw(st.integers(0, max(len(out) - 1, 0)))
        else:
            lo, hi = draw(st.sampled_from(regions))
            at = min(draw(st.integers(lo, max(hi - 1, lo))), max(len(out) - 1, 0))
        kind = draw(st.sampled_from(["flip", "overwrite", "insert", "delete", "truncate", "append"]))
        if kind == "flip" and out:
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "overwrite" and out:
            out[at] = draw(st.integers(0, 255).filter(lambda b: b != out[at]))
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete" and out:
            del out[at:at + draw(st.integers(1, 4))]
        elif kind == "truncate":
            del out[at:]
        elif kind == "append":
            out += draw(st.binary(min_size=1, max_size=64))
    return bytes(out)


def _same_model(a, b) -> None:
    assert (a.model, a.params, a.vocab, a.seed, a.sweeps_done, a.num_tokens) == \
        (b.model, b.params, b.vocab, b.seed, b.sweeps_done, b.num_tokens)
    assert (a.corpus_fingerprint, a.trace, a.text_options, a.shards, a.processes) == \
        (b.corpus_fingerprint, b.trace, b.text_options, b.shards, b.processes)
    assert getattr(a, "label_names", None) == getattr(b, "label_names", None)
    for field, x, y in zip(a.state._fields, a.state, b.state):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), field


@pytest.mark.parametrize("name", sorted(MODELS))
@FUZZ
@given(data=st.data())
def test_a_damaged_model_file_is_refused_or_loads_the_same_model(saved, tmp_path_factory, name,
                                                                   data):
    original, (arrays, meta), model = saved(name)
    damaged = data.draw(edits(original), label="damaged")
    path = tmp_path_factory.getbasetemp() / f"damaged_{name}.jtm"
    path.write_bytes(damaged)
    try:
        loaded = jt.load(path)
    except FormatError as e:
        assert str(e).startswith(str(path)), e          # names the file
        event("refused")
        return
    event("loaded" if damaged != original else "unchanged")
    got_arrays, got_meta = io.load_model_file(path)
    assert got_meta == meta and sorted(got_arrays) == sorted(arrays)
    for key, value in arrays.items():
        assert got_arrays[key].dtype == value.dtype and np.array_equal(got_arrays[key], value,
                                                                        equal_nan=True), key
    _same_model(loaded, model)


def test_bytes_that_reading_ignores_load_the_same_model(saved, tmp_path):
    """The edits the property above allows, made on purpose: a member's timestamp in the
    central directory, and bytes appended after the end record."""
    original, _, model = saved("lda")
    start = _regions(original)[0][0]
    assert original[start:start + 4] == b"PK\x01\x02"
    for damaged in (original[:start + 12] + bytes([original[start + 12] ^ 0x01])
                    + original[start + 13:],                     # modification time
                    original + b"trailing bytes"):
        (tmp_path / "m.jtm").write_bytes(damaged)
        _same_model(jt.load(tmp_path / "m.jtm"), model)
