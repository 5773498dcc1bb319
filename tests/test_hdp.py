"""The HDP facade: reproducibility, save/load/resume bitwise (capacity growth included), the
read-outs over the active topics, to_lda, transform, bad input and the CLI."""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.datasets import synthetic_lda
from jaxtopics.errors import CorpusError, ParameterError
from jaxtopics.models import hdp
from jaxtopics.models.base import kernel_module


@functools.lru_cache(maxsize=None)
def _corpus():
    return synthetic_lda(num_docs=40, num_words=120, num_topics=4, mean_doc_length=25, alpha=0.2,
                         beta=0.05, seed=2).corpus


KERNELS = ["parallel", "sequential", "crf", "crf_sequential"]


def _est(sampler: str) -> jt.HDP:
    # the blocked kernels from capacity 4: the chain must grow (topics and tables) on the way;
    # the exact ones from the default capacity (growth: tests/test_hdp_kernels.py)
    if sampler in ("parallel", "crf"):
        return jt.HDP(sampler=sampler, topic_capacity=4, table_capacity=4)
    return jt.HDP(sampler=sampler, topic_capacity=32, table_capacity=32)


@functools.lru_cache(maxsize=None)
def _straight(sampler: str) -> jt.FittedModel:
    return _est(sampler).fit(_corpus(), num_sweeps=25, seed=3, eval_every=5, progress=False)


def _same_state(a, b) -> None:
    for name, x, y in zip(a.state._fields, a.state, b.state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


@pytest.mark.parametrize("sampler", KERNELS)
def test_resume_equals_uninterrupted_with_growth(sampler, tmp_path):
    """fit 10 + save + load + resume 15 == fit 25 (bitwise), the capacity growing on the way
    (parallel); the same seed gives the same chain, another seed another one."""
    straight = _straight(sampler)
    first = _est(sampler).fit(_corpus(), num_sweeps=10, seed=3, eval_every=5, progress=False)
    if sampler == "crf":
        assert straight.state.word_topic.shape[1] > 4 and straight.state.table_count.shape[1] > 4
    if sampler == "parallel":
        assert straight.state.word_topic.shape[1] > 4
    first.save(tmp_path / "m.jtm")
    resumed = jt.load(tmp_path / "m.jtm")
    assert isinstance(resumed, jt.estimators.FittedHDP)
    resumed.resume(_corpus(), num_sweeps=15, eval_every=5, progress=False)
    _same_state(straight, resumed)
    assert resumed.sweeps_done == 25
    assert [p[:3] for p in resumed.trace] == [p[:3] for p in straight.trace]
    other = _est(sampler).fit(_corpus(), num_sweeps=10, seed=4, eval_every=5, progress=False)
    assert not np.array_equal(other.assignments, first.assignments)


@pytest.mark.parametrize("sampler", ["parallel", "crf"])
def test_state_is_consistent_and_read_outs_cover_the_active_topics(sampler):
    m = _straight(sampler)
    module = kernel_module(hdp, m.params)
    data = module.prepare(_corpus(), m.params)
    ref = module.rebuild(m.state, data, m.params)
    for name, x, y in zip(m.state._fields, m.state, ref):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
    k = int(m.num_active_topics)
    assert m.num_topics == k == m.topic_word.shape[0] == m.doc_topic.shape[1] >= 1
    np.testing.assert_allclose(m.topic_word.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(m.doc_topic.sum(1), 1.0, rtol=1e-5)
    sizes = m.topic_sizes
    assert sizes.sum() == _corpus().num_tokens and (sizes > 0).all()
    assert (np.diff(sizes) <= 0).all(), "topics are numbered largest first"
    np.testing.assert_array_equal(np.bincount(m.assignments, minlength=k), sizes)
    assert (m.topic_tables >= 1).all() and (m.topic_tables <= sizes).all()
    if sampler == "crf":
        assert m.topic_tables.sum() == int((m.state.table_count > 0).sum())
    assert m.sampled_alpha == pytest.approx(1.0) and m.sampled_gamma == pytest.approx(1.0)
    assert "HDP" in m.summary() and len(m.top_words(3)) == k
    lj = m.log_joint_per_token()
    assert np.isfinite(lj) and lj == pytest.approx(m.trace[-1].log_joint_per_token, rel=1e-6)
    theta = m.transform(_corpus().subset(range(6)), num_sweeps=10)
    assert theta.shape == (6, k)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("sampler", KERNELS)
def test_a_vague_concentration_prior_keeps_the_chain_finite(sampler, tmp_path):
    """Review: with Gamma(1e-3, 1e-3) priors a sampled alpha or gamma fell below float32's range
    (a Gamma(1e-3) variate is < 1e-38 with probability ~0.9) and was rounded to 0; a document's
    only token then saw every table-step weight round to 0, drew an impossible table, and the
    chain went on with negative table counts and NaN alpha (sweep 10, seed 0, both samplers)."""
    corpus = jt.Corpus.from_token_lists([["a"], ["b"], ["a"], ["c"]])
    m = jt.HDP(resample_concentrations=True, prior_shape=1e-3, prior_rate=1e-3,
               sampler=sampler).fit(corpus, num_sweeps=20, seed=0, eval_every=1, progress=False)
    assert all(np.isfinite(p.log_joint_per_token) for p in m.trace)
    assert 0 < m.sampled_alpha < np.inf and 0 < m.sampled_gamma < np.inf
    # the current values read as .alpha and .gamma, as DPMM's and DP-MRM's (review: HDP had none)
    assert m.alpha == m.sampled_alpha == m.trace[-1].priors["alpha"]
    assert m.gamma == m.sampled_gamma == m.trace[-1].priors["gamma"]
    module = kernel_module(hdp, m.params)
    ref = module.rebuild(m.state, module.prepare(corpus, m.params), m.params)
    for name, x, y in zip(m.state._fields, m.state, ref):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
    m.save(tmp_path / "m.jtm")
    assert jt.load(tmp_path / "m.jtm").sampled_alpha == m.sampled_alpha


@pytest.mark.parametrize("sampler", ["parallel", "crf"])
def test_to_lda_continues_with_lda_kernels(sampler, tmp_path):
    m = _straight(sampler)
    k = int(m.num_active_topics)
    lda_model = m.to_lda()
    assert lda_model.model == "lda" and lda_model.num_topics == k
    assert lda_model.params.alpha == pytest.approx(1.0 / k) and lda_model.params.beta == 0.05
    np.testing.assert_array_equal(lda_model.assignments, m.assignments)
    np.testing.assert_allclose(lda_model.topic_word, m.topic_word, rtol=1e-6)   # same eq. (23)
    lda_model.resume(_corpus(), num_sweeps=5, progress=False)
    assert lda_model.sweeps_done == 5 and np.isfinite(lda_model.log_joint_per_token())
    # from a saved HDP model too (counts rebuilt by resume)
    m.save(tmp_path / "h.jtm")
    again = jt.load(tmp_path / "h.jtm").to_lda(alpha=0.1)
    np.testing.assert_array_equal(again.assignments, m.assignments)
    again.resume(_corpus(), num_sweeps=5, progress=False)
    np.testing.assert_array_equal(lda_model.assignments.shape, again.assignments.shape)


@pytest.mark.parametrize("kwargs,field", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=-1.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(gamma=float("inf")), "gamma"), (dict(gamma=0), "gamma"), (dict(gamma=1e-31), "gamma"),
    (dict(beta=1e31), "beta"), (dict(beta="x"), "beta"), (dict(alpha=True), "alpha"),
    (dict(initial_topics=0), "initial_topics"), (dict(initial_topics=True), "initial_topics"),
    (dict(initial_topics=2.5), "initial_topics"), (dict(sampler="gibbs"), "sampler"),
    (dict(split_merge_steps=-1), "split_merge_steps"), (dict(num_blocks=0), "num_blocks"),
    (dict(topic_capacity=-2), "topic_capacity"), (dict(table_capacity=1.5), "table_capacity"),
    (dict(resample_concentrations="yes"), "resample_concentrations"),
    (dict(prior_rate=0.0), "prior_rate"),
])
def test_bad_parameters_are_refused(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        jt.HDP(**kwargs)


def test_bad_corpus_is_refused():
    with pytest.raises(CorpusError, match="Corpus"):
        jt.HDP().fit([[0, 1]], num_sweeps=1)
    m = _est("parallel").fit(_corpus(), num_sweeps=1, seed=3, progress=False)
    with pytest.raises(CorpusError, match="not the one"):
        m.resume(synthetic_lda(num_docs=5, num_words=20, num_topics=2, seed=9).corpus, 1)


def test_cli_fit_and_show(tmp_path):
    docs = tmp_path / "docs.txt"
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    docs.write_text("\n".join(" ".join(rng.choice(words, 12)) for _ in range(15)) + "\n")
    out = tmp_path / "run"
    base = [sys.executable, "-m", "jaxtopics.cli", "fit", "--model", "hdp", "--input", str(docs),
            "--out", str(out), "--sweeps", "3", "--eval-every", "3", "--no-progress"]
    r = subprocess.run(base + ["--gamma", "0.5", "--initial-topics", "3"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "HDP" in r.stdout and (out / "model.jtm").exists()
    r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "show", str(out / "model.jtm")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "gamma=0.5" in r.stdout and "initial_topics=3" in r.stdout
    r = subprocess.run(base + ["--num-topics", "5"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--num-topics does not apply to --model hdp" in r.stderr
