"""The console entry point, run in a subprocess as a user would."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import SHARED_DATA


def _run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_fit_ldac_writes_model_and_reports(tmp_path):
    ldac = SHARED_DATA / "reuters" / "reuters.ldac"
    if not ldac.exists():
        pytest.skip("../shared/data not present")
    out = tmp_path / "run"
    r = _run("fit", "--model", "lda", "--num-topics", "5", "--sweeps", "20", "--seed", "1",
             "--input", str(ldac), "--vocab", str(ldac.with_suffix(".tokens")), "--out", str(out),
             "--eval-every", "5", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "log-likelihood trace" in r.stdout and "throughput" in r.stdout and "#0" in r.stdout
    assert "corpus: 395 documents" in r.stdout
    for name in ("model.jtm", "topics.txt", "trace.csv"):
        assert (out / name).exists()
    assert len((out / "topics.txt").read_text().splitlines()) == 5
    assert len((out / "trace.csv").read_text().splitlines()) == 1 + 4
    shown = _run("show", str(out / "model.jtm"))
    assert shown.returncode == 0 and "K=5" in shown.stdout


def test_fit_text_file(tmp_path):
    src = tmp_path / "docs.txt"
    src.write_text("apples and pears are fruit\nthe cat sat on the mat\n\ncats chase mice and rats\n",
                   encoding="utf-8")
    r = _run("fit", "--num-topics", "2", "--sweeps", "5", "--input", str(src), "--out",
             str(tmp_path / "o"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "corpus: 4 documents" in r.stdout      # the empty line is kept as an empty document


def test_fit_sharded_over_two_cpu_devices(tmp_path):
    """--devices 2 splits the CPU into two XLA devices and shards the documents over them."""
    import jax

    if jax.default_backend() != "cpu":
        pytest.skip("--devices splits the CPU; this machine's default backend has its own devices")
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(["apples pears fruit juice", "cat mat sat hat", "mice rats cats chase",
                              "fruit salad apples"] * 10), encoding="utf-8")
    r = _run("fit", "--num-topics", "2", "--sweeps", "10", "--input", str(src), "--devices", "2",
             "--out", str(tmp_path / "o"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "corpus: 40 documents" in r.stdout and (tmp_path / "o" / "model.jtm").exists()
    assert "2 cpu devices" in r.stdout
    r = _run("fit", "--num-topics", "2", "--sweeps", "1", "--input", str(src), "--devices", "2",
             "--sampler", "sequential", "--out", str(tmp_path / "o2"), "--no-progress")
    assert r.returncode == 2 and "parallel" in r.stderr and "Traceback" not in r.stderr


def test_bad_input_gives_a_clear_error(tmp_path):
    bad = tmp_path / "bad.ldac"
    bad.write_text("2 0:1 1:x\n", encoding="utf-8")
    r = _run("fit", "--input", str(bad), "--out", str(tmp_path / "o"), "--sweeps", "1")
    assert r.returncode == 2
    assert "bad.ldac:1" in r.stderr and "Traceback" not in r.stderr
    r = _run("fit", "--input", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "missing.txt" in r.stderr


def test_demo_runs_on_the_embedded_corpus(tmp_path):
    r = _run("demo", "--max-docs", "300", "--sweeps", "10", "--num-topics", "5", "--no-progress",
             "--out", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stderr
    assert "standard library" in r.stdout and "#4" in r.stdout
    assert (tmp_path / "demo" / "model.jtm").exists()
