"""jt.DMM and jt.DPMM through the facade and the CLI: read-outs, reproducibility, save/load/resume,
fold-in, and every bad input with its specific error."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import CorpusError, ParameterError
from jaxtopics.datasets import synthetic_dmm


@pytest.fixture(scope="module")
def planted():
    return synthetic_dmm(num_docs=200, num_words=300, num_clusters=5, mean_doc_length=10, seed=3)


def _same_state(a, b) -> None:
    assert type(a) is type(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


MODELS = {
    "dmm-parallel": lambda: jt.DMM(num_clusters=12, alpha=0.1, beta=0.1),
    "dmm-sequential": lambda: jt.DMM(num_clusters=12, sampler="sequential"),
    "dpmm-parallel": lambda: jt.DPMM(alpha=20.0, beta=0.02, capacity=4),      # grows while fitting
    "dpmm-sequential": lambda: jt.DPMM(alpha=20.0, sampler="sequential", capacity=4),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_fit_save_load_resume_equals_straight_run(name, planted, tmp_path) -> None:
    """Same seed => bitwise equal; fit 20 + save + load + resume 30 == fit 50 (bitwise)."""
    corpus = planted.corpus
    straight = MODELS[name]().fit(corpus, num_sweeps=50, seed=4, eval_every=10)
    again = MODELS[name]().fit(corpus, num_sweeps=50, seed=4, eval_every=25)
    _same_state(straight.state, again.state)
    part = MODELS[name]().fit(corpus, num_sweeps=20, seed=4, eval_every=10)
    part.save(tmp_path / "m.jtm")
    resumed = jt.load(tmp_path / "m.jtm").resume(corpus, num_sweeps=30, eval_every=10)
    _same_state(straight.state, resumed.state)
    assert resumed.sweeps_done == 50
    assert [p.sweep for p in resumed.trace] == [10, 20, 30, 40, 50]
    assert [p.log_joint_per_token for p in resumed.trace] == [p.log_joint_per_token for p in straight.trace]
    np.testing.assert_array_equal(resumed.labels, straight.labels)


@pytest.mark.parametrize("name", ["dmm-parallel", "dpmm-parallel"])
def test_read_outs(name, planted) -> None:
    corpus = planted.corpus
    model = MODELS[name]().fit(corpus, num_sweeps=30, seed=0)
    d, v = corpus.num_docs, corpus.num_words
    k = model.num_topics
    c = model.num_active_clusters
    assert isinstance(c, int) and c == len(set(model.labels.tolist()))
    assert model.labels.shape == (d,) and model.labels.dtype == np.int32    # DPMM's was int64
    assert model.topic_word.shape == (k, v) and model.doc_topic.shape == (d, k)
    np.testing.assert_allclose(model.topic_word.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(model.doc_topic.sum(1), 1.0, rtol=1e-5)
    assert model.cluster_sizes.shape == (k,) and model.cluster_sizes.sum() == d
    np.testing.assert_array_equal(np.bincount(model.labels, minlength=k), model.cluster_sizes)
    assert (np.argmax(model.doc_topic, 1) == model.labels).mean() > 0.95
    np.testing.assert_array_equal(model.assignments, model.labels[corpus.doc_index])
    if name.startswith("dpmm"):
        assert k == c and (np.diff(model.cluster_sizes) <= 0).all()     # active, by size
    else:
        assert k == 12
    assert jt.metrics.nmi(corpus.labels, model.labels) > 0.95
    assert "labels" in dir(model) and "K=" in model.summary() and len(model.top_words(3)) == k
    theta = model.transform(corpus.subset(np.arange(10)))
    assert theta.shape == (10, k)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-5)
    assert (theta.argmax(1) == model.labels[:10]).mean() >= 0.9


def test_empty_documents_are_clustered_by_the_prior(planted) -> None:
    corpus = planted.corpus
    lengths = corpus.doc_lengths.copy()
    words = corpus.word_ids
    with_empty = jt.Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(np.append(lengths, 0))]),
                                       corpus.vocab)
    for est in (jt.DMM(num_clusters=8), jt.DPMM(alpha=20.0)):
        model = est.fit(with_empty, num_sweeps=5, seed=0)
        assert model.labels.shape == (corpus.num_docs + 1,) and model.labels[-1] >= 0


@pytest.mark.parametrize("kwargs,field", [
    (dict(num_clusters=0), "num_clusters"), (dict(num_clusters=True), "num_clusters"),
    (dict(num_clusters=2.5), "num_clusters"), (dict(num_clusters="3"), "num_clusters"),
    (dict(num_clusters=2**31), "num_clusters"),
    (dict(alpha=0), "alpha"), (dict(alpha=-1.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(alpha=float("inf")), "alpha"), (dict(alpha=1e-40), "alpha"), (dict(alpha=1e31), "alpha"),
    (dict(alpha=True), "alpha"), (dict(alpha="x"), "alpha"),
    (dict(beta=0.0), "beta"), (dict(beta=float("-inf")), "beta"), (dict(beta=None), "beta"),
    (dict(sampler="gibbs"), "sampler"), (dict(num_blocks=0), "num_blocks"),
    (dict(num_blocks=False), "num_blocks"), (dict(chunk_size=0), "chunk_size"),
])
def test_dmm_bad_parameters(kwargs, field) -> None:
    with pytest.raises(ParameterError, match=field):
        jt.DMM(**{"num_clusters": 5, **kwargs})


@pytest.mark.parametrize("kwargs,field", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=float("nan")), "alpha"), (dict(beta=-0.1), "beta"),
    (dict(beta=1e-31), "beta"), (dict(alpha=False), "alpha"),
    (dict(capacity=0), "capacity"), (dict(capacity=True), "capacity"),
    (dict(capacity=2**31), "capacity"), (dict(sampler="uncollapsed"), "sampler"),
    (dict(init="kmeans"), "init"), (dict(init="random", init_clusters=9, capacity=8), "init_clusters"),
    (dict(num_blocks=-3), "num_blocks"),
])
def test_dpmm_bad_parameters(kwargs, field) -> None:
    with pytest.raises(ParameterError, match=field):
        jt.DPMM(**kwargs)


def test_table_too_large_for_the_corpus_is_refused(planted) -> None:
    """K x V cells beyond int32 indexing: refused when the vocabulary is known, naming the field."""
    with pytest.raises(ParameterError, match="num_clusters=10000000 with 300 words"):
        jt.DMM(num_clusters=10_000_000).fit(planted.corpus, num_sweeps=1)
    with pytest.raises(ParameterError, match="capacity"):
        jt.DPMM(capacity=10_000_000).fit(planted.corpus, num_sweeps=1)


def test_bad_corpus_inputs(planted) -> None:
    model = jt.DMM(num_clusters=4).fit(planted.corpus, num_sweeps=2)
    with pytest.raises(CorpusError):
        jt.DMM(num_clusters=4).fit([[0, 1]], num_sweeps=1)
    bigger = jt.Corpus.from_arrays([0, 400], [0, 2], [f"w{i}" for i in range(401)])
    with pytest.warns(jt.UnknownWordsWarning, match="2 of 2 tokens"):   # words matched by string
        theta = model.transform(bigger)
    assert theta.shape == (1, model.num_topics) and np.allclose(theta.sum(1), 1.0)
    with pytest.raises(CorpusError, match="fitted on"):
        model.resume(bigger, num_sweeps=1)


# ------------------------------------------------------------------------------------------
# command line


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def short_texts(tmp_path_factory, planted):
    path = tmp_path_factory.mktemp("cli") / "short.jsonl"
    corpus = planted.corpus
    with open(path, "w", encoding="utf-8") as f:
        for d in range(corpus.num_docs):
            f.write(json.dumps({"text": " ".join(corpus.words(d)), "cluster": int(corpus.labels[d])}) + "\n")
    return path


@pytest.mark.parametrize("model,options,k", [
    ("dmm", ["--num-clusters", "7", "--num-blocks", "8"], "K=7"),
    ("dpmm", ["--alpha", "20", "--capacity", "2", "--sampler", "sequential"], "K="),
])
def test_cli_fit_and_show(model, options, k, short_texts, tmp_path) -> None:
    out = tmp_path / model
    r = _cli("fit", "--model", model, *options, "--sweeps", "6", "--eval-every", "3", "--seed", "2",
             "--input", str(short_texts), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "corpus: 200 documents" in r.stdout and "log-likelihood trace" in r.stdout
    assert f"<{model.upper()} {k}" in r.stdout
    for name in ("model.jtm", "topics.txt", "trace.csv"):
        assert (out / name).exists()
    shown = _cli("show", str(out / "model.jtm"))
    assert shown.returncode == 0 and f"<{model.upper()} {k}" in shown.stdout, shown.stderr
    loaded = jt.load(out / "model.jtm")
    assert loaded.model == model and loaded.sweeps_done == 6
    # --resume takes the model from the saved file (no --model needed); another --model is refused
    r = _cli("fit", "--resume", "--sweeps", "2", "--input", str(short_texts), "--out", str(out),
             "--no-progress")
    assert r.returncode == 0, r.stderr
    assert jt.load(out / "model.jtm").sweeps_done == 8
    r = _cli("fit", "--resume", "--model", "lda", "--sweeps", "2", "--input", str(short_texts),
             "--out", str(out), "--no-progress")
    assert r.returncode == 2 and f"holds a {model!r} model, not --model lda" in r.stderr


def test_cli_refuses_options_of_other_models(short_texts, tmp_path) -> None:
    r = _cli("fit", "--model", "dpmm", "--num-clusters", "5", "--input", str(short_texts),
             "--out", str(tmp_path / "x"), "--sweeps", "1")
    assert r.returncode == 2 and "--num-clusters does not apply to --model dpmm" in r.stderr
    r = _cli("fit", "--model", "dmm", "--num-clusters", "0", "--input", str(short_texts),
             "--out", str(tmp_path / "y"), "--sweeps", "1")
    assert r.returncode == 2 and "--num-clusters" in r.stderr and "Traceback" not in r.stderr
