"""The console entry point, run in a subprocess as a user would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jaxtopics as jt
from cli_helpers import run_cli as _cli
from conftest import SHARED_DATA
from jaxtopics.errors import ParameterError
from small_texts import TEXTS


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
             str(tmp_path / "o"), "--no-progress", "--num-blocks", "16")
    assert r.returncode == 0, r.stderr
    assert "corpus: 4 documents" in r.stdout      # the empty line is kept as an empty document
    assert jt.load(tmp_path / "o" / "model.jtm").params.num_blocks == 16


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
    # review: the resume's warning showed cli.py's path and source line; now one line
    r = _run("fit", "--sweeps", "2", "--input", str(src), "--devices", "1", "--resume",
             "--out", str(tmp_path / "o"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "jaxtopics: warning: ShardLayoutWarning: this chain ran on 2 device(s)" in r.stderr
    assert "cli.py" not in r.stderr and "model.resume" not in r.stderr


def test_devices_auto_is_the_default(tmp_path):
    """With no --devices, a shardable fit uses one XLA CPU device per core; a kernel that cannot
    be sharded (sequential) runs on one device."""
    import os

    import jax

    if jax.default_backend() != "cpu":
        pytest.skip("auto on a GPU host uses its GPUs")
    cores = len(os.sched_getaffinity(0))
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(["apples pears fruit juice", "cat mat sat hat"] * 10), encoding="utf-8")
    common = ("--sweeps", "2", "--input", str(src), "--no-progress")
    r = _run("fit", "--num-topics", "2", *common, "--out", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    assert (f"{cores} cpu devices" if cores > 1 else "(jax ") in r.stdout
    r = _run("fit", "--sampler", "sequential", "--num-topics", "2", *common, "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    assert "cpu devices" not in r.stdout
    # --resume continues on the saved run's devices (here 2), the same chain as a straight run
    r = _run("fit", "--num-topics", "2", "--devices", "2", *common, "--out", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    r = _run("fit", "--resume", *common, "--out", str(tmp_path / "r"))
    assert r.returncode == 0 and "2 cpu devices" in r.stdout, r.stderr
    # review: a resume showed `model: FittedModel(model='lda', ...)`, a new fit `model: LDA(...)`
    assert "model: LDA(num_topics=2, " in r.stdout and "resumed after 2 sweeps of seed 0" in r.stdout
    r = _run("fit", "--num-topics", "2", "--devices", "2", "--sweeps", "4", *common[2:],
             "--out", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r" / "topics.txt").read_text() == (tmp_path / "s" / "topics.txt").read_text()
    r = _run("fit", "--devices", "two", *common, "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--devices" in r.stderr and "'auto'" in r.stderr


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


def test_demo_offers_only_what_it_can_do():
    """The demo fits the embedded corpus in one process: no --resume and no multi-process flags
    in its help, and such a flag is refused."""
    from jaxtopics.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    demo_help, fit_help = sub["demo"].format_help(), sub["fit"].format_help()
    for flag in ("--resume", "--coordinator", "--num-processes", "--process-id"):
        assert flag not in demo_help and flag in fit_help
    r = _run("demo", "--resume", "--coordinator", "localhost:1234")
    assert r.returncode == 2 and r.stderr == (
        "jaxtopics: error: unrecognized arguments: --resume --coordinator localhost:1234 "
        "(`jaxtopics demo --help` lists the options)\n")


@pytest.mark.parametrize("argv, message", [
    (("fit", "--input", "x", "--out", "y", "--num-topics", "2.5"),
     "argument --num-topics: invalid int value: '2.5' (`jaxtopics fit --help` lists the options)"),
    (("fit", "--input", "x", "--out", "y", "--seed", "abc"), "argument --seed: invalid int value"),
    (("fit", "--out", "y"), "the following arguments are required: --input/-i"),
    (("show",), "the following arguments are required: path"),
    ((), "the following arguments are required: command (`jaxtopics --help` lists the options)"),
])
def test_argument_errors_are_one_line(argv, message):
    """Review: argparse's own errors (a value of the wrong type, a missing argument) printed
    the whole usage, 18 lines, before the error; they are one `jaxtopics: error:` line too."""
    r = _run(*argv)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("jaxtopics: error: ") and r.stderr.count("\n") == 1
    assert message in r.stderr


# -- issue #9 ---------------------------------------------------------------------------------

def _docs(tmp_path):
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(["apples pears fruit juice", "cat mat sat hat"] * 5), encoding="utf-8")
    return src


def _one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr
    assert "log-likelihood trace" not in r.stdout           # refused before fitting


def test_fit_checks_out_before_fitting(tmp_path):
    """#3: --out a regular file, below a file, or somewhere unwritable was found only after the
    fit (traceback, model lost): now one line naming the path, exit 2, nothing fitted."""
    src = _docs(tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "x"):
        r = _run("fit", "--num-topics", "2", "--sweeps", "2", "--input", str(src), "--out", str(out),
                 "--no-progress")
        _one_line_error(r, str(out))
    (tmp_path / "o" / "model.jtm").mkdir(parents=True)
    r = _run("fit", "--num-topics", "2", "--sweeps", "2", "--input", str(src), "--out",
             str(tmp_path / "o"), "--no-progress")
    _one_line_error(r, "model.jtm is a directory")


def test_fit_out_unwritable_system_path(tmp_path):
    """#3: --out /sys/jt (PermissionError) is one line naming the path, exit 2."""
    import os

    if not os.path.isdir("/sys") or os.access("/sys", os.W_OK) and _sys_writable():
        pytest.skip("no read-only /sys here")
    r = _run("fit", "--num-topics", "2", "--sweeps", "2", "--input", str(_docs(tmp_path)),
             "--out", "/sys/jt", "--no-progress")
    _one_line_error(r, "/sys/jt")


def _sys_writable() -> bool:
    import os

    try:
        os.mkdir("/sys/jt-probe")
    except OSError:
        return False
    os.rmdir("/sys/jt-probe")
    return True


def test_fit_fresh_out_with_checkpoints_and_a_huge_seed(tmp_path):
    """#3: --out fresh/run --checkpoint-every failed at the first checkpoint (directory made only
    after the fit); #12: --seed 2**63 raised OverflowError."""
    out = tmp_path / "fresh" / "run"
    r = _run("fit", "--num-topics", "2", "--sweeps", "4", "--checkpoint-every", "2", "--seed",
             str(2**63), "--input", str(_docs(tmp_path)), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "share of tokens" in r.stdout                    # #10: the label says what is printed
    for name in ("model.jtm", "topics.txt", "trace.csv"):
        assert (out / name).exists()
    assert not list(out.glob(".*"))                         # no probe or temporary file left
    import jaxtopics as jt

    assert jt.load(out / "model.jtm").seed == 2**63


@pytest.mark.parametrize("args, needle", [
    (["--top-words", "-3"], "--top-words"),                 # #15
    (["--alpha", "1e-40"], "alpha"),                        # #9
    (["--beta", "1e39"], "beta"),                           # #9
    (["--num-topics", str(2**31)], "--num-topics"),           # #14
    (["--text-key", "body"], "--text-key only applies to --format jsonl"),   # was ignored
])
def test_fit_refuses_bad_options_before_fitting(tmp_path, args, needle):
    r = _run("fit", "--sweeps", "2", "--input", str(_docs(tmp_path)), "--out", str(tmp_path / "o"),
             "--no-progress", *args)
    _one_line_error(r, needle)


def test_show_reports_a_bad_model_file_in_one_line(tmp_path):
    """#4: `jaxtopics show` printed the traceback of a KeyError on a model file without 'seed'."""
    import json

    import numpy as np

    import jaxtopics as jt
    from jaxtopics.datasets import synthetic_lda

    corpus = synthetic_lda(num_docs=5, num_words=10, num_topics=2, mean_doc_length=5, seed=0).corpus
    jt.LDA(2).fit(corpus, num_sweeps=1, progress=False).save(tmp_path / "m.jtm")
    with np.load(tmp_path / "m.jtm") as z:
        stored = {k: z[k] for k in z.files}
    meta = json.loads(str(stored["__meta__"][()]))
    del meta["seed"]
    meta.pop("checksum")             # as a file of a version before checksums: checked in full
    meta["format_version"] = 2
    stored["__meta__"] = np.array(json.dumps(meta))
    with open(tmp_path / "bad.jtm", "wb") as f:
        np.savez(f, **stored)
    r = _run("show", str(tmp_path / "bad.jtm"))
    _one_line_error(r, "bad.jtm", "'seed'")
    r = _run("show", str(tmp_path / "m.jtm"), "--top-words", "0")
    _one_line_error(r, "--top-words")
    if os.path.exists("/dev/full"):  # review: a full disk under `show > file` named no file
        with open("/dev/full", "w") as full:
            r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "show",
                                str(tmp_path / "m.jtm")], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=300)
        assert r.returncode == 2 and r.stderr.strip() == (
            "jaxtopics: error: standard output: No space left on device"), r.stderr


def test_devices_beyond_int32_is_one_line(tmp_path):
    """#12 sibling: --devices 2**70 reached jax's config as an overflowing int."""
    r = _run("fit", "--sweeps", "1", "--input", str(_docs(tmp_path)), "--out", str(tmp_path / "o"),
             "--devices", str(2**70))
    _one_line_error(r, "--devices")


def test_auto_reads_json_and_ndjson_files_as_json_lines(tmp_path):
    """Review: a .json file of JSON lines was read as text, its keys becoming words."""
    import json

    lines = ["apples pears fruit juice", "cat mat sat hat"] * 5
    for ext in ("json", "ndjson"):
        src = tmp_path / f"docs.{ext}"
        src.write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(lines)))
        r = _run("fit", "--num-topics", "2", "--sweeps", "2", "--input", str(src), "--devices", "1",
                 "--out", str(tmp_path / ext), "--no-progress")
        assert r.returncode == 0, r.stderr
        vocab = jt.load(tmp_path / ext / "model.jtm").vocab
        assert set(vocab) == {w for t in lines for w in t.split()}


def test_ctrl_c_ends_with_status_130_and_names_the_checkpoint(tmp_path):
    """Review: Ctrl-C printed a 29-line traceback. Now one line naming the last checkpoint."""
    import signal
    import time

    out = tmp_path / "o"
    # Ctrl-C as in a terminal (a background job of a script may start with SIGINT ignored)
    entry = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from jaxtopics.cli import main; sys.exit(main(sys.argv[1:]))")
    p = subprocess.Popen([sys.executable, "-c", entry, "fit", "--num-topics", "2",
                          "--sweeps", "1000000", "--checkpoint-every", "5", "--eval-every", "5",
                          "--input", str(_docs(tmp_path)), "--out", str(out), "--no-progress",
                          "--devices", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / "model.jtm").exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert f"jaxtopics: interrupted; the last checkpoint is {out / 'model.jtm'}" in err
    assert jt.load(out / "model.jtm").sweeps_done % 5 == 0


def test_ctrl_c_inside_a_garbage_collector_callback_still_ends_the_fit(tmp_path):
    """Review: a Ctrl-C whose KeyboardInterrupt landed in JAX's garbage-collector callback was
    discarded by Python ("Exception ignored in: <function _xla_gc_callback>") and the fit ran
    on. Here a callback raises it the way the signal handler would, once the sweeps have
    written a checkpoint: the command must still end with status 130 and its one line."""
    out = tmp_path / "o"
    entry = ("import gc, os, signal, sys; "
             "signal.signal(signal.SIGINT, signal.default_int_handler); "
             f"ckpt = {str(out / 'model.jtm')!r}; fired = []\n"
             "def cb(phase, info):\n"
             "    if phase == 'start' and not fired and os.path.exists(ckpt):\n"
             "        fired.append(1); raise KeyboardInterrupt\n"
             "gc.callbacks.insert(0, cb)\n"
             "from jaxtopics.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", entry, "fit", "--num-topics", "2",
                        "--sweeps", "1000000", "--checkpoint-every", "5", "--eval-every", "5",
                        "--input", str(_docs(tmp_path)), "--out", str(out), "--no-progress",
                        "--devices", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 130, r.stderr
    assert f"jaxtopics: interrupted; the last checkpoint is {out / 'model.jtm'}" in r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


def test_ctrl_c_while_jax_loads_ends_with_status_130(tmp_path):
    """Review: Ctrl-C in the first second (while `import jax` runs) printed a traceback.
    `import jaxtopics.cli` no longer imports JAX (the package's JAX parts load on first use),
    and an interrupt while the parser loads them ends with one line."""
    entry = ("import os, signal, sys, threading; "
             "signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from jaxtopics.cli import main; assert 'jax' not in sys.modules, 'jax imported'; "
             "threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start(); "
             "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", entry, "fit", "--num-topics", "2", "--input",
                        str(_docs(tmp_path)), "--out", str(tmp_path / "o"), "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "jaxtopics: interrupted" in r.stderr


@pytest.mark.parametrize("command", ["show", "fit"])
def test_ctrl_c_while_numpy_or_jax_loads_ends_with_status_130(tmp_path, command):
    """Review: Ctrl-C in the first ~0.3 s (numpy loading with `import jaxtopics`) printed a
    traceback, and `show` interrupted while jaxlib loaded aborted (SIGABRT, SIGSEGV). Now
    `import jaxtopics.cli` loads neither, and main() loads them with Ctrl-C held. An import hook
    sends SIGINT at the moment each one starts loading."""
    model = tmp_path / "m" / "model.jtm"
    if command == "show":
        assert _run("fit", "--num-topics", "2", "--sweeps", "2", "--input", str(_docs(tmp_path)),
                    "--out", str(model.parent), "--no-progress", "--devices", "1").returncode == 0
        argv = ["show", str(model)]
    else:
        argv = ["fit", "--num-topics", "2", "--input", str(_docs(tmp_path)), "--out",
                str(tmp_path / "o"), "--no-progress", "--devices", "1"]
    for module in ("numpy", "jax"):
        entry = ("import os, signal, sys\n"
                 "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                 "class Hook:\n"
                 "    def find_spec(self, name, path=None, target=None):\n"
                 f"        if name == {module!r}:\n"
                 "            sys.meta_path.remove(self); os.kill(os.getpid(), signal.SIGINT)\n"
                 "sys.meta_path.insert(0, Hook())\n"
                 "from jaxtopics.cli import main\n"
                 "assert 'numpy' not in sys.modules, 'numpy imported with the command'\n"
                 "sys.exit(main())")
        r = subprocess.run([sys.executable, "-c", entry, *argv], capture_output=True, text=True,
                           timeout=120)
        assert (r.returncode, r.stdout) == (130, ""), (module, r.returncode, r.stderr)
        assert r.stderr.strip() == "jaxtopics: interrupted", (module, r.stderr)


def test_fit_into_a_pipe_that_closes_early_still_writes_out(tmp_path):
    """Review: `jaxtopics fit ... | head -c 10` ended the fit with status 141 and wrote nothing;
    the reader leaving now only silences the rest of the output. The status is still 141 (a later
    review: it was 0, so a script could not tell that its report was cut off)."""
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "jaxtopics.cli", "fit", "--num-topics", "2",
                          "--sweeps", "20", "--input", str(_docs(tmp_path)), "--out", str(out),
                          "--no-progress", "--devices", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.read(10) == b"corpus: 10"          # the first line, before the fit
        p.stdout.close()                                    # the trace then meets a closed pipe
        err = p.stderr.read().decode()
        p.wait(timeout=300)
    finally:
        p.kill()
    assert p.returncode == 141, err
    assert "Traceback" not in err
    assert jt.load(out / "model.jtm").sweeps_done == 20
    assert (out / "topics.txt").exists() and (out / "trace.csv").exists()


def test_count_tables_beyond_the_memory_are_one_line(tmp_path):
    """Review: --num-topics 2000000000 passed the size checks and ended in a RESOURCE_EXHAUSTED
    traceback (or, uncapped, the kernel's OOM killer); now the tables are sized before they are
    allocated and refused in one line naming the flag, status 2 (address space capped at 8 GiB
    here, so the refusal does not depend on this machine's memory)."""
    (tmp_path / "tiny.ldac").write_text("2 0:1 1:2\n1 0:3\n")
    (tmp_path / "v.txt").write_text("a\nb\n")
    capped = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (8 << 30, "
              "8 << 30)); runpy.run_module('jaxtopics.cli', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", capped, "fit", "--input",
                        str(tmp_path / "tiny.ldac"), "--vocab", str(tmp_path / "v.txt"), "--out",
                        str(tmp_path / "o"), "--sweeps", "1", "--num-topics", "2000000000",
                        "--no-progress", "--devices", "1"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2, r.stderr
    assert ("jaxtopics: error: LDA's state, with its initialisation and read-outs, needs 112.0 GB of "
            "memory and the host has") in r.stderr
    assert "word_topic [2, 2000000000] int32 (16.0 GB)" in r.stderr
    assert "lower --num-topics=2000000000" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--num-topics", "0"], "--num-topics must be a positive integer, got 0"),
    (["--alpha", "-1"], "--alpha must be a finite number > 0"),
    (["--sync-every", "0"], "--sync-every must be an integer >= 1"),
    (["--exchange", "sideways"], "--exchange must be one of ('rotate', 'moves'), got 'sideways'"),
    (["--sync-every", "8"], "--sync-every applies to --exchange='moves' only (rotating word "
                            "groups exchanges no moves), got --sync-every=8 with --exchange='rotate'"),
    (["--devices", "4"], "4 devices (shards, --devices=4) are more than the corpus's 2 "
                         "documents"),                                       # conftest: 4
    (["--model", "ptm", "--num-pseudo-docs", "0"], "--num-pseudo-docs must be a positive integer"),
    (["--model", "hdp", "--initial-topics", "0"], "--initial-topics must be an integer >= 1"),
    (["--model", "dmm", "--num-clusters", "0"], "--num-clusters must be an integer >= 1"),
    (["--model", "ptm", "--num-pseudo-docs", "99999999999"], "--num-pseudo-docs must be an integer <= "),
    (["--sweeps", "99999999999"], "--sweeps must be an integer <= 2147483647"),
    (["--eval-every", "99999999999"], "--eval-every must be an integer <= 2147483647"),
    (["--model", "dmm", "--num-clusters", "400000000"], "--num-clusters=400000000 with 6 words"),
    (["--sampler", "sequential", "--devices", "4"], "got --sampler='sequential'"),   # conftest: 4
    # only the parameter named, not a word of the sentence or a value the user typed
    (["--sampler", "alpha"], "--sampler must be one of ('parallel', 'sequential', "
                             "'uncollapsed'), got 'alpha'"),
    (["--model", "slda", "--alpha", "1e40"], "--alpha = 1e+40 is outside the float32 range the "
                                             "sampler computes in"),
    (["--num-topics", "100", "--alpha", "1e37"], "too large for --num-topics = 100: K * alpha overflows"),
])
def test_a_bad_model_option_is_named_by_its_flag(args, message, tmp_path, capsys):
    """The estimator's check names the parameter (num_topics); the CLI names the flag the user
    typed (--num-topics), and leaves the rest of the sentence alone."""
    from jaxtopics.cli import main

    src = tmp_path / "docs.txt"
    src.write_text("apples pears fruit\ncat mat hat\n", encoding="utf-8")
    devices = [] if "--devices" in args else ["--devices", "1"]     # this process has its devices
    status = main(["fit", "--input", str(src), "--out", str(tmp_path / "o"), "--no-progress",
                   *devices, *args])
    err = capsys.readouterr().err
    assert status == 2 and message in err, err


def test_memory_running_out_after_the_sweeps_is_one_line(tmp_path, capsys, monkeypatch):
    """Review: near the memory limit a run that passed the up-front check could fail writing
    topics.txt (a numpy MemoryError) with a traceback and status 1. Now: one line, status 2, and
    the model file written before it is complete."""
    from jaxtopics.cli import main
    from jaxtopics.estimators import FittedModel

    def short(self, *args, **kwargs):
        raise MemoryError("Unable to allocate 32.0 MiB for an array with shape (25731, 163)")
    monkeypatch.setattr(FittedModel, "top_word_ids", short)
    monkeypatch.setattr(FittedModel, "summary", lambda self, n=8: "")
    src = tmp_path / "docs.txt"
    src.write_text("apples pears fruit\ncat mat hat\n", encoding="utf-8")
    status = main(["fit", "--input", str(src), "--out", str(tmp_path / "o"), "--no-progress",
                   "--devices", "1", "--sweeps", "2"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("jaxtopics: error: the host ran out of memory (Unable to allocate 32.0 "
                          "MiB") and "Traceback" not in err, err
    assert jt.load(tmp_path / "o" / "model.jtm").sweeps_done == 2
    assert not (tmp_path / "o" / "topics.txt").exists()


def test_help_and_argument_errors_answer_without_jax():
    """`jaxtopics --help` took ~1.5 s importing JAX for the models' options; they are declared in
    jaxtopics.options, and each is a keyword of its model's constructor."""
    import inspect

    entry = ("import sys; from jaxtopics.cli import build_parser; "
             "build_parser().parse_args(['fit', '-i', 'x', '-o', 'y', '--model', 'hdp', "
             "'--split-merge-steps', '2']); assert 'jax' not in sys.modules, 'jax imported'")
    r = subprocess.run([sys.executable, "-c", entry], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from jaxtopics.estimators import MODELS
    from jaxtopics.options import MODEL_OPTIONS, SHARED_OPTIONS
    assert set(MODEL_OPTIONS) == set(MODELS)
    for name, cls in MODELS.items():
        assert cls.options is MODEL_OPTIONS[name]
        keywords = inspect.signature(cls.__init__).parameters
        assert all(o.arg in keywords for o in SHARED_OPTIONS + cls.options), name


def test_topics_file_lists_no_words_for_empty_clusters(tmp_path):
    """Review: topics.txt and coherence.csv gave every empty DMM cluster the same top words (the
    prior's alone, in word-id order); now such a line holds the id and no words, as `summary()`
    leaves empty clusters out and their coherence is blank."""
    src = _docs(tmp_path)
    r = _run("fit", "--model", "dmm", "--num-clusters", "6", "--sweeps", "10", "--input", str(src),
             "--out", str(tmp_path / "o"), "--no-progress", "--devices", "1", "--coherence", "u_mass")
    assert r.returncode == 0, r.stderr
    model = jt.load(tmp_path / "o" / "model.jtm")
    sizes = model.cluster_sizes
    assert (sizes == 0).any() and (sizes > 0).any()
    lines = (tmp_path / "o" / "topics.txt").read_text(encoding="utf-8").splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == list(range(6))
    for k, line in enumerate(lines):
        words = line.split("\t")[1].split()
        assert (len(words) == 0) == (sizes[k] == 0), (k, line)
    rows = (tmp_path / "o" / "coherence.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert [row.endswith(",,") for row in rows] == [s == 0 for s in sizes]


def test_cli_refuses_what_it_would_ignore_or_crash_on(tmp_path, reuters):
    from pathlib import Path
    r = Path(__file__).resolve().parents[2] / "shared" / "data" / "reuters"
    base = ["fit", "--input", str(r / "reuters.ldac"), "--vocab", str(r / "reuters.tokens")]
    out = tmp_path / "r1"
    assert _cli(*base, "--out", str(out), "--sweeps", "2", "--no-progress").returncode == 0
    cases = [
        (["--out", str(out), "--resume", "--num-topics", "7"], "drop --num-topics"),
        (["--out", str(out), "--resume", "--seed", "3"], "drop --seed"),
        (["--out", "o", "--coordinator", "localhost:1", "--num-processes", "2", "--process-id", "5"],
         "--process-id must be in"),
        (["--out", "o", "--coordinator", "bogus", "--num-processes", "1", "--process-id", "0"],
         "HOST:PORT"),
        (["--out", "o", "--num-processes", "2", "--process-id", "1"], "need --coordinator"),
        (["--out", ""], "empty string"),
        (["--out", str(tmp_path / "never"), "--sweeps", "-1"], "--sweeps must be >= 0"),
    ]
    for extra, message in cases:
        res = _cli(*base, *extra)
        assert res.returncode == 2 and message in res.stderr, (extra, res.stderr[-500:])
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "never").exists()              # refused before --out was created
    res = _cli("show", str(r / "reuters.ldac"))
    assert res.returncode == 2 and "not a jaxtopics model file" in res.stderr
    assert "pickle" not in res.stderr
    res = _cli("demo", "--model", "slda")
    assert res.returncode == 2 and "sentence boundaries" in res.stderr
    res = _cli(*base, "--out", str(out), "--resume", "--sweeps", "2", "--no-progress")
    assert res.returncode == 0 and "M tokens/s" not in res.stderr


def test_show_prints_words_with_lone_surrogates(tmp_path):
    c = jt.Corpus.from_token_lists([["a", "\ud800"], ["a", "b"]])
    jt.LDA(2).fit(c, num_sweeps=1).save(tmp_path / "sp.jtm")
    res = _cli("show", str(tmp_path / "sp.jtm"))
    assert res.returncode == 0, res.stderr


def test_ptm_refuses_strings_and_cli_refuses_labelled_for_other_models(tmp_path):
    with pytest.raises(ParameterError, match="alpha"):
        jt.PTM(alpha="1")
    (tmp_path / "lab.txt").write_text("a--b\tapple banana fruit\nb\tcar engine road\n")
    res = _cli("fit", "--model", "dmm", "--labelled", "--input", str(tmp_path / "lab.txt"),
               "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "--labelled does not apply" in res.stderr


def test_show_into_a_closed_pipe_exits_quietly(tmp_path):
    """`jaxtopics show ... | head`: the reader is gone before the summary is written."""
    c = jt.Corpus.from_token_lists([[f"w{i}" for i in range(30)]] * 4)
    jt.LDA(num_topics=3).fit(c, num_sweeps=1).save(tmp_path / "m.jtm")
    proc = subprocess.Popen([sys.executable, "-m", "jaxtopics.cli", "show", str(tmp_path / "m.jtm")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                         # closed before the child writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


@pytest.mark.parametrize("command", ["evaluate", "infer"])
def test_a_buffered_report_into_a_closed_pipe_is_status_141(tmp_path, command):
    """Review: `jaxtopics evaluate ... | true` exited 0 (its report, still buffered when the
    command ended, was lost without a sign); it is 141 as `show`'s."""
    c = jt.Corpus.from_texts(["apple banana cherry grape lemon", "melon peach plum apple"] * 3)
    jt.LDA(num_topics=3).fit(c, num_sweeps=1).save(tmp_path / "m.jtm")
    held = tmp_path / "held.txt"
    held.write_text("apple banana plum\nmelon cherry\n", encoding="utf-8")
    args = (["evaluate", str(tmp_path / "m.jtm"), "--held-out", str(held)] if command == "evaluate"
            else ["infer", str(tmp_path / "m.jtm"), "--input", str(held), "--out",
                  str(tmp_path / "theta.csv")])
    proc = subprocess.Popen([sys.executable, "-m", "jaxtopics.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                         # closed before the child writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err


def test_cli_offers_every_model_its_sampler_settings(tmp_path):
    """Review: `--sentences` was accepted (and ignored) by models without sentences, `demo
    --max-docs 0` named the Python parameter, and DP-MRM's `initial_topics` (HDP's flag) and
    most models' `num_blocks` (DMM's flag) had no flag of their own."""
    lab = tmp_path / "lab.txt"
    lab.write_text("a--b\tapple banana fruit\nb\tcar engine road\na\tapple fruit juice\n")
    r = _cli("fit", "--model", "dpmrm", "--initial-topics", "2", "--num-blocks", "2", "--input",
             str(lab), "--out", str(tmp_path / "o"), "--sweeps", "0", "--no-progress")
    assert r.returncode == 0, r.stderr
    params = jt.load(tmp_path / "o" / "model.jtm").params
    assert (params.initial_topics, params.num_blocks) == (2, 2)
    docs = tmp_path / "docs.txt"
    docs.write_text("apple banana fruit\ncar engine road\n")
    for args, message in [
            (("fit", "--model", "dmm", "--sentences", "--input", str(docs)),
             "--sentences does not apply to --model dmm"),
            (("fit", "--model", "dmm", "--split-merge-steps", "3", "--input", str(docs)),
             "--split-merge-steps does not apply to --model dmm"),
            (("demo", "--max-docs", "0"), "--max-docs must be a positive integer, got 0")]:
        r = _cli(*args, "--out", str(tmp_path / "x"))
        assert r.returncode == 2 and f"jaxtopics: error: {message}" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_demo_refuses_a_labelled_model_before_loading_the_corpus():
    out = _cli("demo", "--model", "dpmrm")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "jaxtopics: error: the demo corpus (docstrings) has no label sets, which --model dpmrm "
        "needs: use `jaxtopics fit --model dpmrm` on a text file of 'label1--label2<TAB>text' lines"]
    assert out.stdout == ""


def test_cli_counts_one_device_in_the_singular(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS * 4) + "\n")
    out = _cli("fit", "-i", str(tmp_path / "t.txt"), "--model", "lda", "--num-topics", "2", "--sweeps", "2",
               "--devices", "1", "-o", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    assert "1 cpu devices" not in out.stdout + out.stderr


@pytest.mark.parametrize("sampler", ["parallel", "crf"])
def test_hdp_kernels_on_the_command_line(sampler, tmp_path):
    """``jaxtopics fit --model hdp --sampler ...``: the default direct-assignment kernel and the
    CRF's, sharded over 2 devices (--devices 2), then resumed; the saved model keeps its kernel."""
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(["apples pears fruit juice", "cat mat sat hat", "mice rats cats chase",
                              "fruit salad apples"] * 10), encoding="utf-8")
    out = tmp_path / "o"
    r = _run("fit", "--model", "hdp", "--sampler", sampler, "--split-merge-every", "2",
             "--sweeps", "4", "--input", str(src), "--devices", "2", "--out", str(out),
             "--no-progress")
    assert r.returncode == 0, r.stderr
    r = _run("fit", "--sweeps", "2", "--input", str(src), "--devices", "2", "--resume",
             "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    model = jt.load(out / "model.jtm")
    assert model.params.sampler == sampler and model.sweeps_done == 6
    assert model.params.split_merge_every == 2
