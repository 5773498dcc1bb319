"""Multi-process fits: 2 processes on localhost (``jax.distributed`` with gloo), through the CLI.

Each process reads its own documents of Reuters, holds its shards, and exchanges word-topic
moves with the other process every ``--sync-every`` blocks; process 0 writes the model.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxtopics as jt

REFERENCE = -7.841          # exact collapsed Gibbs, Reuters, K=20, 500 sweeps (DESIGN.md)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    """The environment of the processes: they make their own CPU devices (--devices), so of
    XLA_FLAGS they keep only the suite's compile-speed flag (tests/conftest.py)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "JAX_PLATFORMS": "cpu"}
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "fusion_emitters" in f)
    return env


def _fit(tmp: Path, reuters_dir: Path, *extra: str, processes: int = 2, devices: int = 1,
         timeout: int = 900, source: Path | None = None, status: int = 0,
         each: tuple[tuple[str, ...], ...] = (), env_each: tuple[dict, ...] = ()) -> list[str]:
    """Run `jaxtopics fit` in `processes` processes (on `source`, default Reuters), each of
    which must exit with `status`; returns each one's output. `each[i]`: more arguments for
    process i only; `env_each[i]`: more environment variables for process i only."""
    port = _free_port()
    env = _child_env()
    source = reuters_dir / "reuters.ldac" if source is None else source
    vocab = ["--vocab", str(reuters_dir / "reuters.tokens")] if source.suffix == ".ldac" else []
    cmd = [sys.executable, "-m", "jaxtopics.cli", "fit", "--input", str(source), *vocab,
           "--out", str(tmp), "--no-progress",
           "--coordinator", f"localhost:{port}", "--num-processes", str(processes),
           "--devices", str(devices), *extra]
    own = list(each) + [()] * (processes - len(each))
    envs = [{**env, **e} for e in env_each] + [env] * (processes - len(env_each))
    procs = [subprocess.Popen(cmd + ["--process-id", str(i), *own[i]], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=envs[i]) for i in range(processes)]
    streams = []
    try:
        for p in procs:
            streams.append(p.communicate(timeout=timeout))
    finally:
        for p in procs:
            p.kill()
    for i, (p, (out, err)) in enumerate(zip(procs, streams)):
        assert p.returncode == status, f"process {i} exited with {p.returncode}:\n{(out + err)[-3000:]}"
        assert "[Gloo]" not in out, f"process {i}: gloo's lines reached stdout"
    return [out + err for out, err in streams]


def _check_counts(model: jt.FittedModel, corpus: jt.Corpus) -> None:
    """The saved global tables are exactly the counts of the saved topics."""
    st = model.state
    z = np.asarray(model.assignments)
    assert z.shape == (corpus.num_tokens,)
    np.testing.assert_array_equal(np.asarray(st.topic), np.bincount(z, minlength=model.num_topics))
    wt = np.zeros_like(np.asarray(st.word_topic))
    np.add.at(wt, (corpus.word_ids, z), 1)
    np.testing.assert_array_equal(np.asarray(st.word_topic), wt)
    dt = np.zeros_like(np.asarray(st.doc_topic))
    np.add.at(dt, (corpus.doc_index, z), 1)
    np.testing.assert_array_equal(np.asarray(st.doc_topic), dt)


@pytest.fixture(scope="module")
def reuters_dir(reuters):
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "reuters"


SEEDS = (0, 1, 2)
CHAIN_SD = 0.015            # sd of single chains' log joint per token at 500 sweeps (docs/benchmarks.md, quality)
REFERENCE_CHAINS = 3        # REFERENCE is the mean of 3 exact chains (DESIGN.md)


@pytest.mark.slow
def test_two_processes_reach_exact_gibbs_quality_on_reuters(tmp_path, reuters, reuters_dir):
    """A smoke test of quality over 2 processes (500 sweeps from random starts, word rotation):
    the mean of 3 two-process chains lies within 4 standard errors of the difference from the
    exact-Gibbs reference (two-sided), se = sqrt(sd^2 / 3 + CHAIN_SD^2 / 3) with sd the chains'
    spread, at least CHAIN_SD (single chains from random starts scatter by about +-0.015 at 500
    sweeps, with occasional stragglers): a bar of about +-0.05 nats/token, ~0.6 % of the log
    joint. It catches a broken exchange, not a small bias: the two-sided check of the sharded
    kernel against exact chains from a common start, with a bar of ~0.1-0.2 %, is
    tests/test_kernel_quality.py (4 devices of one process, the facade's default exchange).
    Measured over 16 seeds of this
    run: mean -7.8485, 0.10 % from -7.841; seed 0 alone -7.894."""
    finals = []
    for seed in SEEDS:
        out = tmp_path / f"seed{seed}"
        outs = _fit(out, reuters_dir, "--sweeps", "500", "--eval-every", "500", "--seed", str(seed))
        assert "over 2 processes" in outs[0] and "wrote" in outs[0]
        assert outs[1].count("\n") < outs[0].count("\n")      # process 1 prints (almost) nothing
        model = jt.load(out / "model.jtm")
        assert model.sweeps_done == 500
        _check_counts(model, reuters)
        finals.append(model.trace[-1].log_joint_per_token)
    mean = float(np.mean(finals))
    sd = max(float(np.std(finals, ddof=1)), CHAIN_SD)
    se = float(np.sqrt(sd ** 2 / len(finals) + CHAIN_SD ** 2 / REFERENCE_CHAINS))
    gap = mean - REFERENCE
    assert abs(gap) < 4 * se, (finals, f"gap {gap:+.4f} = {gap / se:+.1f} se ({gap / abs(REFERENCE):+.3%})")


@pytest.mark.parametrize("exchange", [["--exchange", "rotate"],
                                      ["--exchange", "moves", "--sync-every", "2"]])
def test_two_processes_two_devices_each_resume_bitwise(tmp_path, reuters, reuters_dir, exchange):
    """2 processes x 2 devices: word groups rotate over the 4 devices of both processes (or the
    devices exchange their moves); 8 sweeps + a resumed 4 are the 12 straight ones, bitwise."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    _fit(straight, reuters_dir, "--sweeps", "12", "--eval-every", "4", *exchange, devices=2)
    _fit(split, reuters_dir, "--sweeps", "8", "--eval-every", "4", *exchange, devices=2)
    outs = _fit(split, reuters_dir, "--sweeps", "4", "--eval-every", "4", "--resume", devices=2)
    assert "4 cpu devices over 2 processes" in outs[0] and "(process 0 of 2)" in outs[0]
    a, b = jt.load(straight / "model.jtm"), jt.load(split / "model.jtm")
    assert a.sweeps_done == b.sweeps_done == 12
    _check_counts(b, reuters)
    np.testing.assert_array_equal(a.assignments, b.assignments)
    assert a.trace[-1].log_joint_per_token == b.trace[-1].log_joint_per_token
    # the saved fingerprint is the whole corpus's, so the chain continues in one process too
    # (another layout: a warning, not a refusal)
    assert a.corpus_fingerprint == reuters.fingerprint(version=2)
    assert a.processes == 2 and a.params.exchange == exchange[1]
    if len(jax.devices()) >= 4:     # 4 devices of one process split the documents otherwise
        with pytest.warns(jt.ShardLayoutWarning, match="4 devices of 2 process"):
            four = jt.load(straight / "model.jtm").resume(reuters, 1, progress=False, devices=4)
        _check_counts(four, reuters)
    with pytest.warns(jt.ShardLayoutWarning, match="ran on 4 device"):
        one = a.resume(reuters, 1, eval_every=1, progress=False, devices=1)
    assert one.sweeps_done == 13 and one.shards is None
    _check_counts(one, reuters)


@pytest.mark.parametrize("model, options", [
    ("dmm", ["--num-clusters", "20"]),
    ("ptm", ["--num-topics", "10", "--num-pseudo-docs", "40"]),
])
def test_other_models_over_two_processes_resume_bitwise(tmp_path, reuters, reuters_dir, model, options):
    """The generic sharding over processes, for models other than LDA (global tables of their
    own: cluster-word counts; pseudo-document tables): a 2-process run saves tables that are the
    counts of its latents, and resuming it gives the straight run bitwise. Its --coherence is
    that of the whole corpus."""
    from jaxtopics.estimators import MODELS

    straight, split = tmp_path / "straight", tmp_path / "split"
    args = ["--model", model, *options, "--eval-every", "2"]
    _fit(straight, reuters_dir, *args, "--sweeps", "6", "--coherence", "c_npmi")
    _fit(split, reuters_dir, *args, "--sweeps", "4")
    outs = _fit(split, reuters_dir, "--sweeps", "2", "--eval-every", "2", "--resume")
    assert "over 2 processes" in outs[0]
    a, b = jt.load(straight / "model.jtm"), jt.load(split / "model.jtm")
    assert a.model == b.model == model and a.sweeps_done == b.sweeps_done == 6 and a.shards == 2
    np.testing.assert_array_equal(a.assignments, b.assignments)
    module = MODELS[model].module
    recount = module.rebuild(b.state, module.prepare(reuters, b.params), b.params)
    for name, saved, counted in zip(b.state._fields, b.state, recount):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(counted), err_msg=name)
    # coherence: the two processes' window counts add up to the whole corpus's
    rows = [line.split(",")[1] for line in (straight / "coherence.csv").read_text().splitlines()[1:]]
    np.testing.assert_allclose([float(r) if r else np.nan for r in rows],
                               a.coherence(reuters, "c_npmi"), rtol=1e-12)


def test_dpmrm_over_two_processes_reads_labelled_text_and_resumes_bitwise(tmp_path, reuters_dir):
    """Label sets over processes: each process reads its own lines of a labelled text file
    (``label1--label2<TAB>text``) with the label ids of the whole file; process 0 saves tables
    that are the counts of the saved latents and the whole corpus's label names and text
    options; resuming gives the straight run bitwise, and the saved chain continues in one
    process on the one-process reading of the file (same corpus fingerprint). Review: a label
    on one process's lines only stopped the other process ("label has no documents") while
    this one waited for it forever; every label need only be on some process's lines. Review:
    with JAX's x64 mode on in one process only, the vocabulary merge aborted both inside gloo
    (8-byte against 4-byte sizes); the straight run below has it on in process 0."""
    from jaxtopics.models import dpmrm

    rng = np.random.default_rng(0)
    lines = []
    for _ in range(60):                 # label l's words are "l<l>w<i>"; 1-2 labels a line
        own = np.sort(rng.choice(4, size=int(rng.integers(1, 3)), replace=False))
        words = [f"l{x}w{rng.integers(6)}" for x in rng.choice(own, size=int(rng.integers(8, 30)))]
        lines.append("--".join(f"L{x}" for x in own) + "\t" + " ".join(words))
    lines[-1] = "L0--late\t" + lines[-1].split("\t")[1]     # a label of process 1's lines only
    source = tmp_path / "labelled.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = jt.Corpus.from_text_file(source, labelled=True)
    straight, split = tmp_path / "straight", tmp_path / "split"
    args = ["--model", "dpmrm", "--eval-every", "2"]
    _fit(straight, reuters_dir, *args, "--sweeps", "6", source=source,
         env_each=({"JAX_ENABLE_X64": "1"},))
    _fit(split, reuters_dir, *args, "--sweeps", "4", source=source)
    outs = _fit(split, reuters_dir, *args, "--sweeps", "2", "--resume", source=source)
    assert "over 2 processes" in outs[0]
    a, b = jt.load(straight / "model.jtm"), jt.load(split / "model.jtm")
    assert a.sweeps_done == b.sweeps_done == 6 and a.shards == 2
    np.testing.assert_array_equal(a.assignments, b.assignments)
    assert b.label_names == corpus.label_names and b.vocab == corpus.vocab
    assert b.text_options == corpus.text_options
    recount = dpmrm.rebuild(b.state, dpmrm.prepare(corpus, b.params), b.params)
    for name, saved, counted in zip(b.state._fields, b.state, recount):
        np.testing.assert_array_equal(np.asarray(saved), np.asarray(counted), err_msg=name)
    with pytest.warns(jt.ShardLayoutWarning):
        one = b.resume(corpus, 1, eval_every=1, progress=False, devices=1)
    assert one.sweeps_done == 7


def test_an_error_on_one_process_ends_every_process(tmp_path, reuters_dir):
    """Review: with 3 documents over 2 processes x 2 devices, process 1 (1 document) stopped with
    an error while process 0 waited forever in the next collective. Both now exit with the
    one-line error and status 2, promptly."""
    small = tmp_path / "three.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:3]))
    outs = _fit(tmp_path / "out", reuters_dir, "--sweeps", "1", devices=2, source=small,
                timeout=120, status=2)
    assert "are more than process 1's share of the corpus: 1 document" in outs[1]
    assert "process(es) [1] could not lay out their documents" in outs[0]


def test_processes_started_with_different_options_stop_with_one_message(tmp_path, reuters_dir):
    """Review: processes given different --sweeps waited for each other forever, different
    --num-topics aborted both inside a gloo collective, and different --seed saved process 0's
    seed for a chain it does not give. Now every process names the options that differ and
    exits with status 2, before reading the corpus."""
    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    outs = _fit(tmp_path / "out", reuters_dir, "--num-topics", "3", source=small, timeout=120,
                status=2, each=(("--sweeps", "2", "--seed", "0"), ("--sweeps", "3", "--seed", "1")))
    for i, out in enumerate(outs):
        assert ("were given different --seed, --sweeps on the command line (process(es) [1] "
                f"differ from process 0; this one is process {i})") in out, out
        assert "corpus:" not in out
    assert not (tmp_path / "out").exists()


def test_resume_on_some_processes_only_is_named_alone(tmp_path, reuters_dir):
    """Review: --resume given to process 0 only was reported as different --alpha, --beta,
    --num-topics, ... as well (a resumed chain takes them from its file, a new one from the
    options): now --resume alone is named."""
    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    outs = _fit(tmp_path / "out", reuters_dir, "--sweeps", "2", source=small, timeout=120,
                status=2, each=(("--resume",), ("--num-topics", "3")))
    for out in outs:
        assert "were given different --resume on the command line (process(es) [1]" in out, out


def test_fit_refuses_different_settings_on_the_processes(tmp_path):
    """The same check in the Python API: `fit` with a different num_sweeps on each process."""
    script = tmp_path / "fit.py"
    script.write_text(
        "import sys, jaxtopics as jt\n"
        "jt.distributed.initialize(sys.argv[1], 2, int(sys.argv[2]))\n"
        "corpus = jt.Corpus.from_token_lists([['a', 'b'], ['b', 'c']] * 4)\n"
        "try:\n"
        "    jt.LDA(num_topics=2).fit(corpus, num_sweeps=2 + int(sys.argv[2]), devices=2)\n"
        "except jt.errors.ParameterError as e:\n"
        "    print('ERROR', e)\n")
    port = _free_port()
    env = _child_env()
    procs = [subprocess.Popen([sys.executable, str(script), f"localhost:{port}", str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    try:
        outs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for out in outs:
        assert "ERROR the processes of this multi-process run were given different num_sweeps " in out, out


def test_options_written_differently_but_equal_are_the_same_settings(tmp_path, reuters_dir):
    """Review: --alpha 0.1 / --sampler parallel / --seed 0 written out on one process only (the
    defaults the other resolves to) were refused as different settings."""
    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    outs = _fit(tmp_path / "out", reuters_dir, "--num-topics", "3", "--sweeps", "2", source=small,
                timeout=120, each=((), ("--alpha", "0.10", "--sampler", "parallel", "--seed", "0",
                                        "--format", "ldac", "--sweeps", "02")))
    assert "wrote" in outs[0]


@pytest.mark.parametrize("each, own, others", [
    # process 1's input does not exist on its host: it could not read its documents
    (((), ("--vocab", "/nonexistent/vocab.txt")), "/nonexistent/vocab.txt",
     "process(es) [1] could not read their documents"),
    # process 1 split into 2 CPU devices, process 0 into 1: uneven processes
    ((("--devices", "1"), ("--devices", "2")), "have [1, 2] devices", "have [1, 2] devices"),
])
def test_a_process_that_cannot_go_on_ends_every_process(tmp_path, reuters_dir, each, own, others):
    """Review: a bad path on one process (the paths may differ per host) left both processes
    waiting until killed, and uneven --devices crashed inside the settings check's gather. Now
    every process exits with status 2 and one line, promptly."""
    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    outs = _fit(tmp_path / "out", reuters_dir, "--num-topics", "3", "--sweeps", "2", source=small,
                timeout=120, status=2, each=each)
    assert own in outs[1] and others in outs[0], outs
    assert all("Traceback" not in out for out in outs)


def test_a_process_without_the_memory_ends_every_process(tmp_path, reuters_dir):
    """Process 1 has 16 GiB of address space (``ulimit -v``, set by a sitecustomize on its path;
    less leaves gloo no room for its threads) and the tables need ~34 GB a process: it refuses
    before allocating them, and process 0 (whatever its own memory) stops with it instead of
    waiting in the first collective."""
    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    site = tmp_path / "capped"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))\n")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    outs = _fit(tmp_path / "out", reuters_dir, "--num-topics", "2000000", "--sweeps", "2",
                source=small, timeout=120, status=2, env_each=({}, {"PYTHONPATH": path}))
    refusal = "LDA's state, with its initialisation and read-outs, needs"
    assert refusal in outs[1] and "lower --num-topics=2000000" in outs[1], outs
    assert ("process(es) [1] could not fit the state in memory" in outs[0]
            or refusal in outs[0]), outs
    assert all("Traceback" not in out for out in outs)


def test_ctrl_c_while_waiting_for_the_others_ends_the_process(tmp_path):
    """Review: a process whose peers never start waited in jax.distributed's native connect,
    deaf to Ctrl-C, until its 300 s timeout and then aborted. The wait runs in a helper thread
    now: SIGINT ends the process at once with status 130 and one line."""
    import signal

    src = tmp_path / "d.txt"
    src.write_text("apples pears fruit\ncats dogs mice\n")
    # Ctrl-C's own handler, also where this test runs as a background job (SIGINT ignored)
    python = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
              "runpy.run_module('jaxtopics.cli', run_name='__main__')")
    cmd = [sys.executable, "-c", python, "fit", "--input", str(src), "--out",
           str(tmp_path / "o"), "--no-progress", "--coordinator", f"localhost:{_free_port()}",
           "--num-processes", "2", "--process-id", "0"]
    p = subprocess.Popen(cmd, env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert "joining the others" in p.stderr.readline()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert "jaxtopics: interrupted" in err and "Traceback" not in err


def test_a_process_killed_mid_fit_ends_the_others_with_one_line(tmp_path, reuters_dir):
    """Review: with process 1 killed (SIGKILL) in the middle of the sweeps, process 0's next
    collective failed at once, but it printed the JaxRuntimeError's traceback, then waited ~90 s
    in jax.distributed's shutdown barrier and aborted (SIGABRT, a C++ stack dump). Now it ends
    promptly with one line naming its last checkpoint, status 2."""
    import signal
    import time

    small = tmp_path / "sixty.ldac"
    small.write_text("".join((reuters_dir / "reuters.ldac").read_text().splitlines(True)[:60]))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "jaxtopics.cli", "fit", "--input", str(small), "--vocab",
           str(reuters_dir / "reuters.tokens"), "--out", str(out), "--no-progress",
           "--num-topics", "3", "--sweeps", "1000000", "--checkpoint-every", "20",
           "--coordinator", f"localhost:{_free_port()}", "--num-processes", "2", "--devices", "1"]
    procs = [subprocess.Popen(cmd + ["--process-id", str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_child_env()) for i in range(2)]
    try:
        deadline = time.monotonic() + 300
        while not (out / "model.jtm").exists():           # the sweeps have begun
            assert time.monotonic() < deadline and procs[0].poll() is None, procs[0].communicate()
            time.sleep(0.2)
        procs[1].send_signal(signal.SIGKILL)
        started = time.monotonic()
        try:
            stdout, stderr = procs[0].communicate(timeout=60)     # the heartbeat timeout is 100 s
        except subprocess.TimeoutExpired:       # say what it printed (seen once in CI, 1 of 9)
            procs[0].kill()
            stdout, stderr = procs[0].communicate()
            pytest.fail(f"process 0 did not end within 60 s of process 1's kill; its stderr: "
                        f"{stderr[-4000:]}")
        waited = time.monotonic() - started
    finally:
        for p in procs:
            p.kill()
    assert procs[0].returncode == 2, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("jaxtopics: error:")]
    assert "Traceback" not in stderr and len(lines) == 1, stderr[-3000:]
    assert "process 0: the sweeps failed (" in lines[0]
    assert "another process of the run may have stopped" in lines[0]
    assert f"the last checkpoint is {out / 'model.jtm'} (continue with --resume)" in lines[0]
    assert waited < 60 and jt.load(out / "model.jtm").sweeps_done % 20 == 0
