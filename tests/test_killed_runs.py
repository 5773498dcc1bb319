"""Runs that survive being killed (issue 36).

A fit of any of the seven models killed with SIGKILL right after a checkpoint, then continued
(``jaxtopics fit --resume``, or ``jt.load(path).resume``), ends bitwise equal to the same number
of sweeps run without a stop: every state array (assignments, counts, capacities grown on the
way, learned priors), every read-out and the trace. HDP, DP-MRM and DPMM are killed before their
state's last capacity growth. A checkpoint write cut off at any byte leaves the previous
checkpoint whole, loadable and resumable, and the partial temporary file a kill leaves beside it
breaks no later save, load or resume.

The kill is a real SIGKILL of a process in the middle of its fit: a small driver (``_DRIVER``)
runs the command line (or ``Estimator.fit``) with ``FittedModel.save`` wrapped so that the
process waits once the checkpoint at the chosen sweep is on disk; the test sees that checkpoint
appear, reads its sweep count, and kills the process. The wait only makes the moment of the kill
deterministic: the process holds nothing the file does not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jaxtopics as jt
import jaxtopics.io
from jaxtopics.estimators import MODELS
from jaxtopics.fitted import FittedModel
from jaxtopics.io import load_model_file

from cli_helpers import GROUPS

#: run as ``python -c _DRIVER cli ARGS...`` (``jaxtopics ARGS...``) or ``python -c _DRIVER fit
#: SPEC`` (``Estimator.fit`` with the JSON spec's settings); either waits, to be killed, once the
#: checkpoint of sweep $KILLED_RUN_PAUSE_AT is saved, or (with $KILLED_RUN_CUT_AT) once that many
#: bytes of it are written
_DRIVER = r"""
import json, os, sys, time
import jaxtopics.fitted, jaxtopics.io

_save, _pause_at = jaxtopics.fitted.FittedModel.save, int(os.environ["KILLED_RUN_PAUSE_AT"])
_cut = int(os.environ.get("KILLED_RUN_CUT_AT", -1))
_saving = [None]


def wait_for_the_kill():
    while True:
        time.sleep(1)


def save(self, path):
    _saving[0] = self.sweeps_done
    _save(self, path)
    if self.sweeps_done == _pause_at:      # the checkpoint is whole on disk: wait for the kill
        wait_for_the_kill()


class Cut:
    # the file of the checkpoint of sweep _pause_at: waits for the kill once _cut bytes long
    def __init__(self, f):
        self.f = f

    def write(self, data):
        data, at = bytes(data), self.f.tell()
        if at + len(data) >= _cut:
            self.f.write(data[:_cut - at])
            self.f.flush()
            wait_for_the_kill()
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.f.__exit__(*exc)


def cut_open(file, mode="r", *args, **kwargs):
    f = open(file, mode, *args, **kwargs)
    return Cut(f) if "w" in mode and _saving[0] == _pause_at else f


jaxtopics.fitted.FittedModel.save = save
if _cut >= 0:
    jaxtopics.io.open = cut_open           # shadows the builtin in jaxtopics.io
if sys.argv[1] == "cli":
    from jaxtopics.cli import main
    main(sys.argv[2:])
else:
    import jax
    jax.config.update("jax_num_cpu_devices", 4)     # as tests/conftest.py: its compilations reused
    import jaxtopics as jt
    from jaxtopics.estimators import MODELS
    spec = json.loads(sys.argv[2])
    cls = MODELS[spec["model"]]
    corpus = jt.Corpus.from_text_file(spec["input"], labelled=spec["labelled"],
                                      sentences=cls.needs_sentences)
    cls(**spec["kwargs"]).fit(corpus, spec["sweeps"], spec["seed"], eval_every=spec["eval_every"],
                              checkpoint_every=spec["checkpoint_every"],
                              checkpoint_path=spec["path"], progress=False)
sys.exit(3)                                # the fit ended: it was not killed
"""

#: the command line runs on 4 devices, as many as tests/conftest.py gives this process: the same
#: XLA devices, so the persistent compilation cache serves the test's and the command's programs
SEED, EVAL_EVERY, DEVICES_CLI = 5, 2, 4
GROWING = ("dpmm", "dpmrm", "hdp")

#: model -> (settings the command line can give, further Python-only settings, sweeps between
#: checkpoints, total sweeps). The growing models checkpoint every sweep and start with capacities
#: about as large as their chains need, so that they grow a few sweeps in: HDP and DP-MRM from
#: their default capacities (16 topics, 8 tables per document; DP-MRM's 2 topics per label,
#: and 8 tables), DPMM from 2 cluster slots (on the command line its default incremental start fills
#: them in the first sweep, so there the checkpoints hold a grown state; in Python it starts
#: from one cluster and grows later). LDA learns alpha, and HDP on the command line splits and
#: merges topics, across the kill too (in Python it does not: its compilation is the slowest).
CASES = {
    "lda": (dict(num_topics=3, optimize_alpha="symmetric", burn_in=2, optimize_every=2), {}, 2, 8),
    "slda": (dict(num_topics=3), {}, 2, 8),
    "ptm": (dict(num_topics=3, num_pseudo_docs=4), {}, 2, 8),
    "dmm": (dict(num_clusters=4), {}, 2, 8),
    "dpmm": (dict(alpha=4.0, capacity=2), dict(init="one"), 1, 8),
    "dpmrm": (dict(alpha=4.0, gamma=2.0, initial_topics=1, table_capacity=8), {}, 1, 8),
    # the default direct-assignment kernel from 2 topic slots (from 16 these chains never grow)
    "hdp": (dict(alpha=4.0, gamma=2.0, topic_capacity=2), dict(split_merge_steps=0), 1, 8),
}


def _texts(labelled: bool) -> list[str]:
    """16 documents of three sentences drawn from one or two of GROUPS' word groups (as
    ``label1--label2<TAB>text`` lines when `labelled`)."""
    rng = np.random.default_rng(0)
    names = ("fruit", "animal", "water")
    lines = []
    for _ in range(16):
        labels = sorted({str(n) for n in rng.choice(names, size=rng.integers(1, 3))})
        text = " ".join(" ".join(rng.choice(GROUPS[names.index(labels[s % len(labels)])], 5)) + "."
                        for s in range(3))
        lines.append("--".join(labels) + "\t" + text if labelled else text)
    return lines


def _input(tmp_path: Path, name: str) -> tuple[Path, jt.Corpus]:
    """The model's corpus file and the Corpus the command line reads from it."""
    labelled = getattr(MODELS[name], "needs_labels", False)
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(_texts(labelled)) + "\n")
    return path, jt.Corpus.from_text_file(path, labelled=labelled,
                                          sentences=MODELS[name].needs_sentences)


def _flags(settings: dict) -> list[str]:
    out = []
    for key, value in settings.items():
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _sweeps_saved(path: Path) -> int | None:
    """The sweep count of the checkpoint at `path` (None while there is none)."""
    if not path.is_file():
        return None
    return load_model_file(path, arrays=False)[1]["sweeps_done"]


def _kill_when(ready, how: str, args: list[str], logs: Path, **env: int) -> None:
    """Run the driver (`env`: its KILLED_RUN_* settings); SIGKILL it once ``ready()``."""
    env = dict(os.environ, **{f"KILLED_RUN_{k.upper()}": str(v) for k, v in env.items()})
    with open(logs / "stdout", "w") as out, open(logs / "stderr", "w") as err:
        p = subprocess.Popen([sys.executable, "-c", _DRIVER, how, *args], env=env, stdout=out,
                             stderr=err)
        try:
            deadline = time.monotonic() + 300
            while p.poll() is None and not ready() and time.monotonic() < deadline:
                time.sleep(0.05)
            alive = p.poll() is None
            if alive:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert alive and p.returncode == -signal.SIGKILL, (
        alive, p.returncode, (logs / "stdout").read_text(), (logs / "stderr").read_text())


def _kill_after_checkpoint(how: str, args: list[str], ckpt: Path, pause_at: int,
                           logs: Path) -> None:
    """Run the driver; once the checkpoint of sweep `pause_at` is at `ckpt`, SIGKILL it."""
    _kill_when(lambda: _sweeps_saved(ckpt) == pause_at, how, args, logs, pause_at=pause_at)
    assert _sweeps_saved(ckpt) == pause_at


def _assert_same_chain(resumed: jt.FittedModel, straight: jt.FittedModel) -> None:
    """Bitwise the same chain: every state array (shape, dtype, bytes), every read-out and
    every trace point (but its wall time)."""
    assert resumed.model == straight.model and resumed.params == straight.params
    assert resumed.sweeps_done == straight.sweeps_done
    for name, a, b in zip(straight.state._fields, resumed.state, straight.state):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), name
        assert a.tobytes() == b.tobytes(), name
    mine, theirs = resumed._estimates(), straight._estimates()
    assert sorted(mine) == sorted(theirs)
    for key in theirs:
        a, b = np.asarray(mine[key]), np.asarray(theirs[key])
        assert (a.shape, a.dtype) == (b.shape, b.dtype) and a.tobytes() == b.tobytes(), key
    for a, b in (("topic_word", "phi"), ("doc_topic", "theta")):
        assert np.asarray(getattr(resumed, a)).tobytes() == np.asarray(theirs[b]).tobytes()
    np.testing.assert_array_equal(resumed.assignments, straight.assignments)

    def points(m):
        return [(p.sweep, p.log_joint_per_token, p.changed_fraction, p.priors) for p in m.trace]
    assert points(resumed) == points(straight)


def _shapes(model: jt.FittedModel) -> dict[str, tuple[int, ...]]:
    return {name: np.shape(a) for name, a in zip(model.state._fields, model.state)}


def _uninterrupted(monkeypatch, name: str, settings: dict, corpus: jt.Corpus, devices, every: int,
                   total: int, path: Path) -> tuple[jt.FittedModel, dict[int, dict]]:
    """The uninterrupted fit, with the same checkpoints as the killed run (saved to `path`), and
    its state's shapes at each checkpoint."""
    shapes, save = {}, FittedModel.save

    def recording_save(self, to):
        save(self, to)
        shapes[self.sweeps_done] = _shapes(self)
    with monkeypatch.context() as m:
        m.setattr(FittedModel, "save", recording_save)
        straight = MODELS[name](**settings).fit(corpus, total, SEED, eval_every=EVAL_EVERY,
                                                checkpoint_every=every, checkpoint_path=path,
                                                devices=devices, progress=False)
    straight.summary()          # compiles the read-outs here first: the command's are then cached
    return straight, shapes


def _kill_point(name: str, shapes: dict[int, dict], total: int, grows_after: bool) -> int:
    """The checkpoint after which to kill the run: for a model that grows, the last before its
    state's final growth (where `grows_after`); else the one in the middle."""
    points = sorted(s for s in shapes if s < total)
    if name in GROWING and grows_after:
        before = [s for s in points if shapes[s] != shapes[total]]
        assert before, f"{name}: the state never grows after a checkpoint: {shapes}"
        return before[-1]
    return points[len(points) // 2]


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_line_fit_killed_after_a_checkpoint_resumes_bitwise(name, tmp_path, monkeypatch):
    """`jaxtopics fit --checkpoint-every C --out DIR` SIGKILLed right after a checkpoint, then
    `jaxtopics fit --resume --out DIR --sweeps REST` (the saved run's 4 devices, parameters and
    seed), writes the model file of the uninterrupted fit."""
    settings, _, every, total = CASES[name]
    src, corpus = _input(tmp_path, name)
    straight, shapes = _uninterrupted(monkeypatch, name, settings, corpus, DEVICES_CLI, every,
                                      total, tmp_path / "straight.jtm")
    kill_at = _kill_point(name, shapes, total, grows_after=name != "dpmm")
    out = tmp_path / "run"
    common = ["--input", str(src), "--out", str(out), "--checkpoint-every", str(every),
              "--eval-every", str(EVAL_EVERY), "--no-progress"]
    _kill_after_checkpoint("cli", ["fit", "--model", name, *_flags(settings), "--seed", str(SEED),
                                   "--sweeps", str(total), "--devices", str(DEVICES_CLI), *common],
                           out / "model.jtm", kill_at, tmp_path)
    at_kill = jt.load(out / "model.jtm")
    assert at_kill.shards == DEVICES_CLI and _shapes(at_kill) == shapes[kill_at]
    assert not (out / "topics.txt").exists()           # the killed run never reached its end
    r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--resume",
                        "--sweeps", str(total - kill_at), *common],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    resumed = jt.load(out / "model.jtm")
    _assert_same_chain(resumed, jt.load(tmp_path / "straight.jtm"))
    _assert_same_chain(resumed, straight)
    if name in ("hdp", "dpmrm"):
        assert _shapes(resumed) != shapes[kill_at]     # grew after the kill
    if name == "dpmm":                                 # grown in the first sweep, before the kill
        assert at_kill.state.cluster_docs.shape[0] > settings["capacity"]
    assert sorted(p.name for p in out.iterdir()) == ["doc_topics.csv", "model.jtm", "topics.png",
                                                     "topics.txt", "trace.csv", "trace.png"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_fit_killed_after_a_checkpoint_resumes_bitwise(name, tmp_path, monkeypatch):
    """``Estimator.fit(corpus, n, seed, checkpoint_every=C, checkpoint_path=p)`` SIGKILLed right
    after a checkpoint; ``jt.load(p).resume(corpus, rest)`` is the uninterrupted fit."""
    settings, more, every, total = CASES[name]
    settings = {**settings, **more}
    src, corpus = _input(tmp_path, name)
    straight, shapes = _uninterrupted(monkeypatch, name, settings, corpus, None, every, total,
                                      tmp_path / "straight.jtm")
    kill_at = _kill_point(name, shapes, total, grows_after=True)
    ckpt = tmp_path / "run" / "ckpt.jtm"
    ckpt.parent.mkdir()
    spec = dict(model=name, kwargs=settings, input=str(src),
                labelled=getattr(MODELS[name], "needs_labels", False), sweeps=total, seed=SEED,
                eval_every=EVAL_EVERY, checkpoint_every=every, path=str(ckpt))
    _kill_after_checkpoint("fit", [json.dumps(spec)], ckpt, kill_at, tmp_path)
    resumed = jt.load(ckpt)
    assert _shapes(resumed) == shapes[kill_at]
    resumed.resume(corpus, total - kill_at, eval_every=EVAL_EVERY, progress=False)
    _assert_same_chain(resumed, straight)
    if name in GROWING:
        assert _shapes(resumed) != shapes[kill_at]     # grew after the kill
    assert [p.name for p in ckpt.parent.iterdir()] == ["ckpt.jtm"]


class _Killed(BaseException):
    """The process stops here: a simulated kill in the middle of writing a file."""


class _CutFile:
    """A file being written that stops after `limit` bytes, as a killed process's does: what
    was written stays on disk (flushed, and kept under `keep`: a killed process removes nothing,
    while ``atomic_path`` removes its temporary file on the way out of this simulation), and
    _Killed is raised. `limit` None: no limit, the bytes counted."""

    def __init__(self, f, limit: int | None, keep: Path | None):
        self.f, self.limit, self.keep, self.written, self.killed = f, limit, keep, 0, False

    def write(self, data) -> int:
        data = bytes(data)
        if self.killed:           # the zip writer's clean-up on the way out: a dead process's has none
            raise _Killed
        if self.limit is not None and self.written + len(data) > self.limit:
            self.f.write(data[:self.limit - self.written])
            self.f.flush()
            os.link(self.f.name, self.keep)
            self.killed = True
            raise _Killed
        self.written += len(data)
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.f.__exit__(*exc)


def test_a_checkpoint_write_cut_at_any_byte_leaves_the_previous_checkpoint_whole(tmp_path,
                                                                                 monkeypatch):
    """A save killed after k bytes (k over every byte of the zip headers, the first array and the
    file's end, and every 7th byte between), or in its fsync or rename, leaves the previous
    checkpoint byte for byte; it loads and resumes to the uninterrupted chain, and the partial
    temporary files such kills leave beside it (hidden ``.ckpt.jtm.*.tmp``) are never read:
    later checkpoints are written over them and load."""
    _, corpus = _input(tmp_path, "lda")
    settings = dict(num_topics=3, optimize_alpha="symmetric", burn_in=2, optimize_every=2)
    run = tmp_path / "run"
    run.mkdir()
    ckpt = run / "ckpt.jtm"
    model = jt.LDA(**settings).fit(corpus, 4, SEED, eval_every=EVAL_EVERY, checkpoint_every=2,
                                   checkpoint_path=ckpt, progress=False)
    before = ckpt.read_bytes()
    model.resume(corpus, 2, eval_every=EVAL_EVERY, progress=False)   # the next checkpoint's state
    writing: list[_CutFile] = []
    limit: list[int | None] = [None]

    def cut_open(file, mode="r", *args, **kwargs):     # jaxtopics.io's open, for this test
        f = open(file, mode, *args, **kwargs)
        if "w" not in mode:
            return f
        keep = Path(file).with_name(f"{Path(file).name[:-4]}-{limit[0]}.tmp")
        writing[:] = [_CutFile(f, limit[0], keep)]
        return writing[0]

    def killed(*args):
        raise _Killed
    with monkeypatch.context() as m:
        m.setattr(jaxtopics.io, "open", cut_open, raising=False)
        model.save(tmp_path / "whole.jtm")             # how many bytes a whole save writes
        total = writing[0].written
        size = (tmp_path / "whole.jtm").stat().st_size
        assert size <= total < 2 * size and size > 5000
        cuts = sorted({*range(0, 1400), *range(1400, total - 200, 7), *range(total - 200, total)})
        for k in cuts:
            limit[0] = k
            with pytest.raises(_Killed):
                model.save(ckpt)
            assert ckpt.read_bytes() == before, f"a save cut after {k} bytes changed the checkpoint"
    for where in ("fsync", "replace"):                 # killed after the last byte
        with monkeypatch.context() as m:
            m.setattr(os, where, killed)
            with pytest.raises(_Killed):
                model.save(ckpt)
        assert ckpt.read_bytes() == before
    left = sorted(run.glob(".ckpt.jtm.*.tmp"))
    assert len(left) == len(cuts), "a kill leaves its partial temporary file"
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == ["ckpt.jtm"]

    resumed = jt.load(ckpt)
    assert resumed.sweeps_done == 4
    resumed.resume(corpus, 4, eval_every=EVAL_EVERY, checkpoint_every=2, checkpoint_path=ckpt,
                   progress=False)
    straight = jt.LDA(**settings).fit(corpus, 8, SEED, eval_every=EVAL_EVERY, progress=False)
    _assert_same_chain(resumed, straight)
    _assert_same_chain(jt.load(ckpt), straight)        # written beside the partial files
    assert sorted(run.glob(".ckpt.jtm.*.tmp")) == left


def test_command_line_fit_killed_while_writing_a_checkpoint_resumes_from_the_one_before(
        tmp_path, monkeypatch):
    """`jaxtopics fit --checkpoint-every 2` SIGKILLed in the middle of writing its checkpoint of
    sweep 6 (3,000 bytes in): model.jtm is still the checkpoint of sweep 4, the partial
    temporary file stays beside it, and `jaxtopics fit --resume --sweeps 4` continues from sweep
    4 to the uninterrupted fit's model."""
    settings, _, every, total = CASES["lda"]
    src, corpus = _input(tmp_path, "lda")
    straight, _ = _uninterrupted(monkeypatch, "lda", settings, corpus, DEVICES_CLI, every, total,
                                 tmp_path / "straight.jtm")
    out = tmp_path / "run"
    common = ["--input", str(src), "--out", str(out), "--checkpoint-every", str(every),
              "--eval-every", str(EVAL_EVERY), "--no-progress"]

    def partial() -> list[Path]:
        return [p for p in out.glob(".model.jtm.*.tmp") if p.stat().st_size >= 3000]
    # the checkpoint of sweep 6 stops, and waits, 3,000 bytes in (a temporary file of 3,000
    # bytes beside the checkpoint of sweep 4: the earlier checkpoints' writes are renamed whole)
    _kill_when(lambda: _sweeps_saved(out / "model.jtm") == 4 and len(partial()) == 1, "cli",
               ["fit", "--model", "lda", *_flags(settings), "--seed", str(SEED), "--sweeps",
                str(total), "--devices", str(DEVICES_CLI), *common], tmp_path, pause_at=6,
               cut_at=3000)
    left = partial()
    assert _sweeps_saved(out / "model.jtm") == 4 and [p.stat().st_size for p in left] == [3000]
    r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--resume", "--sweeps", "4",
                        *common], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    _assert_same_chain(jt.load(out / "model.jtm"), straight)
    assert sorted(out.iterdir()) == sorted([out / "model.jtm", out / "topics.txt",
                                            out / "trace.csv", out / "doc_topics.csv",
                                            out / "trace.png", out / "topics.png", *left])
