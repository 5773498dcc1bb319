"""The README's examples run as written: the Quickstart python block end to end (on a small
corpus, with new raw texts and a new Corpus of its own vocabulary for `transform`), and the
command-line examples (fit on ../shared/data/reuters with few sweeps, then show)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import jaxtopics as jt
from conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

TRAIN = [
    "apple banana cherry apple banana", "cherry apple fruit salad", "car engine wheel car",
    "engine wheel tire road car", "apple fruit banana", "road tire car engine",
] * 5
NEW_TEXTS = ["Car car ENGINE road tire wheel", "apple banana fruit cherry salad zebra"]


def _block(heading: str, lang: str) -> str:
    """The first ```lang fenced block after the `heading` line."""
    section = README[README.index(heading):]
    m = re.search(rf"```{lang}\n(.*?)```", section, re.S)
    assert m, f"no {lang} block after {heading!r}"
    return m.group(1)


def test_quickstart_block_runs(tmp_path, monkeypatch):
    code = _block("## Quickstart", "python")
    assert "model.transform(new_texts)" in code and "model.transform(new_corpus)" in code
    assert 'model.coherence(corpus, "c_v")' in code
    monkeypatch.chdir(tmp_path)                     # model.save("lda.jtm") writes here
    new_corpus = jt.Corpus.from_texts(NEW_TEXTS)    # its own vocabulary, in its own order
    assert new_corpus.vocab != jt.Corpus.from_texts(TRAIN).vocab[:new_corpus.num_words]
    env = {"texts": TRAIN, "new_texts": NEW_TEXTS, "new_corpus": new_corpus}
    # the block as written, only with fewer sweeps for speed and 2 topics for this corpus
    code = re.sub(r"num_sweeps=\d+", "num_sweeps=60", code)
    code = code.replace("num_topics=20", "num_topics=2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jt.UnknownWordsWarning)     # 'zebra' is unknown
        exec(compile(code, "README.md:Quickstart", "exec"), env)
    model, theta_new = env["model"], env["theta_new"]
    assert (tmp_path / "lda.jtm").exists() and model.sweeps_done == 120
    assert theta_new.shape == (2, 2)
    np.testing.assert_allclose(theta_new.sum(1), 1, rtol=1e-5)
    # the two new documents land on different topics, each the one of its training twins
    theta_train = model.doc_topic
    assert theta_new[0].argmax() == theta_train[2].argmax() != theta_new[1].argmax()
    assert theta_new[1].argmax() == theta_train[0].argmax()
    assert theta_new.max(1).min() > 0.8
    # raw texts and the Corpus give the same fold-in (same tokens, mapped by word)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jt.UnknownWordsWarning)
        np.testing.assert_allclose(model.transform(NEW_TEXTS), theta_new, atol=0.05)
    assert model.last_transform.unknown_words == ("zebra",)


def _cli_commands() -> list[list[str]]:
    block = _block("## Command line", "bash").replace("\\\n", " ")
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_cli_examples_run(tmp_path):
    if not (SHARED_DATA / "reuters" / "reuters.ldac").exists():
        pytest.skip("../shared/data not present")
    commands = _cli_commands()
    assert [c[:2] for c in commands] == [["jaxtopics", "fit"], ["jaxtopics", "show"]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for argv in commands:
        argv = [str(SHARED_DATA) + a[len("../shared/data"):] if a.startswith("../shared/data") else a
                for a in argv]
        if "--sweeps" in argv:                      # few sweeps, evaluated every 5
            argv[argv.index("--sweeps") + 1] = "10"
            argv += ["--eval-every", "5", "--no-progress"]
        r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", *argv[1:]], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        assert "K=20" in r.stdout and "share of tokens" in r.stdout
    assert (tmp_path / "runs" / "reuters" / "model.jtm").exists()
    assert jt.load(tmp_path / "runs" / "reuters" / "model.jtm").sweeps_done == 10


def test_models_block_runs(tmp_path):
    """The Models section's python block as written (fewer sweeps, smaller data)."""
    tweet = SHARED_DATA / "gsdmm" / "Tweet.jsonl"
    lee = SHARED_DATA / "lee" / "lee_background.cor"
    if not (tweet.exists() and lee.exists()):
        pytest.skip("../shared/data not present")
    code = _block("## Models", "python")
    code = re.sub(r"num_sweeps=\d+", "num_sweeps=4", code).replace('"Tweet.jsonl"', repr(str(tweet)))
    texts = lee.read_text(encoding="utf-8").splitlines()[:40]
    train = tmp_path / "train.txt"             # the DP-MRM lines: label1--label2<TAB>text
    train.write_text("".join(f"{'sports--health' if i % 3 else 'health'}\t{t}\n"
                             for i, t in enumerate(texts[:30])), encoding="utf-8")
    code = code.replace('"train.txt"', repr(str(train)))
    env = {"texts": texts, "jt": jt}
    env["held_out"] = jt.Corpus.from_texts(texts[30:40], labels=[["health"]] * 10,
                                           label_names=("health", "sports"))
    with warnings.catch_warnings():     # held_out's words the 30 training texts lack: dropped
        warnings.simplefilter("ignore", jt.UnknownWordsWarning)
        exec(compile(code, "README.md:Models", "exec"), env)
    short, d, m = env["short"], env["d"], env["m"]
    assert d.labels.shape == (short.num_docs,) and d.num_active_clusters == d.cluster_sizes.shape[0]
    assert m.pseudo_doc_topic.shape == (short.num_docs // 10, 90)
    assert m.pseudo_labels.shape == (short.num_docs,)
    r = env["r"]
    with pytest.warns(jt.UnknownWordsWarning, match="perplexity: .* is of the other"):
        ppl = r.perplexity(env["held_out"])
    assert r.topic_label.shape == (r.num_active_topics,) and np.isfinite(ppl)
    h, lda_model = env["h"], env["lda_model"]
    assert h.topic_sizes.shape == (h.num_active_topics,) and h.topic_sizes.sum() == env["corpus"].num_tokens
    assert lda_model.model == "lda" and lda_model.num_topics == h.num_active_topics
    assert lda_model.sweeps_done == 4             # a new LDA chain, started from the HDP state


def test_devices_auto_block_runs(tmp_path):
    """The Quickstart's `devices="auto"` lines as written, in a fresh process (the CPU split
    must come before any computation): the fit is sharded over every CPU device it made."""
    section = README[README.index("## Quickstart"):README.index("## Models")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    code = next(b for b in blocks if 'devices="auto"' in b)
    code = re.sub(r"num_sweeps=\d+", "num_sweeps=3", code)
    script = ("import os, jax, jaxtopics as jt\n"
              "os.cpu_count = lambda: 2                 # as on a 2-core machine, wherever this runs\n"
              f"corpus = jt.Corpus.from_texts({TRAIN!r})\n" + code +
              "print('DEVICES', jax.device_count(), model.sweeps_done)\n"
              "two = jt.LDA(num_topics=50).fit(corpus, num_sweeps=3, devices=2).assignments\n"
              "one = jt.LDA(num_topics=50).fit(corpus, num_sweeps=3).assignments\n"
              "print('SHARDED', (model.assignments == two).all(), (model.assignments == one).all())\n")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "DEVICES 2 3" in r.stdout and "SHARDED True False" in r.stdout


NOTEBOOKS = ROOT / "notebooks"
#: every notebook and the test that executes it (a new notebook needs one)
NOTEBOOK_TESTS = {"quickstart.ipynb": "test_quickstart_notebook_runs",
                  "models_tour.ipynb": "test_models_tour_notebook_runs",
                  "research.ipynb": "test_research_notebook_runs"}


def _notebook_code(name: str) -> list[str]:
    """The code cells of notebooks/`name`, in order."""
    import json
    cells = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def _run_notebook(name: str, code: list[str], monkeypatch, tmp_path) -> dict:
    """Execute `code` (a notebook's cells) in order in one namespace, as a kernel would, in
    `tmp_path`, with matplotlib on the Agg backend and ``JAXTOPICS_NOTEBOOK_QUICK=1`` (the
    notebooks' own knob: few sweeps, small data); returns the namespace."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    monkeypatch.setenv("JAXTOPICS_NOTEBOOK_QUICK", "1")
    monkeypatch.chdir(tmp_path)
    env: dict = {}
    try:
        for i, cell in enumerate(code):
            exec(compile(cell, f"notebooks/{name}:cell {i}", "exec"), env)
        assert plt.get_fignums(), f"{name} drew no picture"
    finally:
        plt.close("all")
    return env


def test_every_notebook_is_executed_and_stripped():
    """Each notebook has a test below that runs it, and none is stored with outputs or
    execution counts (they are stripped before committing)."""
    import json
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == sorted(NOTEBOOK_TESTS), found
    for name, test in NOTEBOOK_TESTS.items():
        assert test in globals(), test
        nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                    f"{name}: cell {i} holds outputs; strip them (jupyter nbconvert "
                    "--clear-output --inplace)")


def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    """notebooks/quickstart.ipynb's code cells in order, as written (fewer sweeps): the fit on the
    embedded corpus, its trace plotted, save + resume (bitwise the same chain as one longer
    fit), new texts folded in, and 4 chains of the functional core under jit + vmap, each a
    finite log joint that improved on its start."""
    code = _notebook_code("quickstart.ipynb")
    assert len(code) == 7 and "jax.vmap(chain)(keys)" in code[-1]
    assert any("plot.log_joint(model)" in c for c in code)
    assert any("more.transform(new_texts)" in c for c in code)
    code = [re.sub(r"num_sweeps=\d+", "num_sweeps=6", c).replace("fori_loop(0, 100,", "fori_loop(0, 6,")
            for c in code]
    env = _run_notebook("quickstart.ipynb", code, monkeypatch, tmp_path)
    model, more = env["model"], env["more"]
    assert model.sweeps_done == 6 and more.sweeps_done == 12 and (tmp_path / "demo.jtm").exists()
    straight = jt.LDA(num_topics=20, alpha=0.1, beta=0.01).fit(env["corpus"], num_sweeps=12, seed=0)
    np.testing.assert_array_equal(more.assignments, straight.assignments)
    assert env["theta"].shape == (2, 20) and more.last_transform.num_docs == 2
    chains = np.asarray(env["run"](env["keys"]))
    assert chains.shape == (4,) and np.isfinite(chains).all() and len(set(chains.tolist())) == 4
    jax, lda, data, p = env["jax"], env["lda"], env["data"], env["p"]
    start = lda.init(jax.random.split(env["keys"][0])[0], data, p)  # chain 0 before its sweeps
    assert chains[0] > float(lda.log_joint(start, data, p)) / env["corpus"].num_tokens + 0.1


def test_models_tour_notebook_runs(tmp_path, monkeypatch):
    """notebooks/models_tour.ipynb, quick: every model on its data, with its read-outs,
    pictures and metrics."""
    if not all((SHARED_DATA / f).exists() for f in ("reuters/reuters.ldac", "gsdmm/Tweet.jsonl",
                                                   "lee/lee_background.cor")):
        pytest.skip("../shared/data not present")
    monkeypatch.setenv("JAXTOPICS_SHARED_DATA", str(SHARED_DATA))
    code = _notebook_code("models_tour.ipynb")
    for model in ("LDA", "HDP", "SentenceLDA", "DMM", "DPMM", "PTM", "DPMRM"):
        assert any(f"jt.{model}(" in c for c in code), model
    env = _run_notebook("models_tour.ipynb", code, monkeypatch, tmp_path)
    assert [c.sweeps_done for c in env["chains"]] == [env["SWEEPS"]] * 3
    assert env["hdp"].num_active_topics == env["history"][-1][1] >= 1
    assert env["slda"].sentence_topics.shape[0] == env["lee"].num_sentences
    assert env["dmm"].labels.shape == (env["tweets"].num_docs,)
    assert env["dpmm"].num_active_clusters == env["clusters"][-1][1]
    assert env["r"].topics_per_label.shape == (len(env["lab_train"].label_names),)
    assert np.isfinite(env["coherence"]).any()


def test_research_notebook_runs(tmp_path, monkeypatch):
    """notebooks/research.ipynb, quick: vmapped chains, a custom kernel on jaxtopics.ops, split
    R-hat, reproducible seeds, held-out evaluation and learned priors."""
    code = _notebook_code("research.ipynb")
    env = _run_notebook("research.ipynb", code, monkeypatch, tmp_path)
    lj, sweeps = np.asarray(env["lj"]), env["SWEEPS"]
    assert lj.shape == (4, sweeps) and np.isfinite(lj).all()
    rhat, rng = env["split_rhat"], np.random.default_rng(0)
    assert np.isfinite(rhat(lj)) and rhat(rng.normal(size=(4, 2000))) < 1.01    # agreeing chains
    assert rhat(rng.normal(size=(4, 2000)) + np.arange(4)[:, None]) > 1.5       # chains apart
    my_lj = np.asarray(env["my_lj"])
    assert my_lj.shape == (sweeps,) and my_lj[-1] > my_lj[0]               # the custom kernel climbs
    n_dk, n_k, z = (np.asarray(env[k]) for k in ("n_dk", "n_k", "z"))
    assert n_dk.sum() == n_k.sum() == env["N"] and (np.bincount(z, minlength=n_k.size) == n_k).all()
    assert (env["a"].assignments == env["b"].assignments).all()
    assert np.isfinite(env["ll"]).all() and env["ll"].shape == (env["test"].num_docs,)
    assert np.asarray(env["learned"].alpha).shape == (15,)


def test_interop_block_runs():
    """The scikit-learn / pyLDAvis / pandas block as written (fewer sweeps and topics)."""
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    code = _block("## scikit-learn, pyLDAvis, pandas", "python")
    code = (code.replace("max_iter=300", "max_iter=20").replace("n_components=20", "n_components=2")
            .replace("jt.LDA(20)", "jt.LDA(2)").replace(", 500,", ", 60,").replace("< 200", "< 30"))
    env = {"texts": TRAIN, "jt": jt}
    exec(compile(code, "README.md:interop", "exec"), env)
    assert env["theta"].shape == (len(TRAIN), 2) and env["model"].sweeps_done == 30
    assert env["kwargs"]["doc_topic_dists"].shape == (len(TRAIN), 2)
