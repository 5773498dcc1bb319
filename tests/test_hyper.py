"""Learned Dirichlet priors: jaxtopics.hyper (Minka's fixed point, L-BFGS on the same evidence)
and LDA's optimize_alpha / optimize_beta (chain state, resumed bitwise, sharded, saved)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import digamma as digamma64

import jaxtopics as jt
import jaxtopics.datasets
from jaxtopics import hyper
from jaxtopics.errors import ParameterError
from jaxtopics.models import lda

FIXTURES = Path(__file__).parent / "fixtures"


def _polya_counts(alpha: np.ndarray, groups: int, length: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(alpha, size=groups)
    return np.stack([rng.multinomial(length, t) for t in theta]).astype(np.int32)


def _tiny_corpus():
    return jt.datasets.synthetic_lda(num_docs=12, num_words=30, num_topics=3,
                                     mean_doc_length=8, seed=5).corpus


def test_digamma_rise_matches_float64():
    x = np.array([1e-4, 0.05, 0.7, 3.0, 9.99, 10.0, 60.0, 1e4, 1e4], np.float32)
    n = np.array([1, 7, 100, 2, 5, 1, 10000, 1, 0], np.int32)
    want = np.where(n == 0, 0.0, digamma64(x.astype(np.float64) + n) - digamma64(x.astype(np.float64)))
    got = np.asarray(hyper.digamma_rise(jnp.asarray(x), jnp.asarray(n)))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=0)


@pytest.mark.parametrize("kind", ["symmetric", "asymmetric", "columns"])
def test_minka_and_optax_reach_the_same_optimum(kind):
    """Both stop when one fixed-point step would move every value by < tol relative; Minka's
    step contracts by a factor rho < 0.9 here (10-40 steps from 1.0 to tol=1e-6), so either
    iterate is within tol / (1 - rho) = 1e-5 of the optimum: they agree to 2e-5, and the
    optimum is stationary (a further step moves it by < tol)."""
    k, tol = 8, 1e-6
    planted = np.linspace(0.05, 0.6, k)
    counts = _polya_counts(planted if kind == "asymmetric" else np.full(k, 0.3), 400, 60, 0)
    axis = -1
    if kind == "columns":                  # groups along the columns: a word-major table
        counts, axis = np.ascontiguousarray(counts.T), 0
    start = jnp.ones(k) if kind == "asymmetric" else jnp.float32(1.0)
    fits = {opt: jax.jit(lambda v, c, opt=opt: hyper.maximize(v, c, opt, axis=axis, tol=tol))(
        start, jnp.asarray(counts)) for opt in hyper.OPTIMIZERS}
    for fit in fits.values():
        assert float(fit.residual) < tol and int(fit.iterations) > 1
    np.testing.assert_allclose(np.asarray(fits["optax"].value), np.asarray(fits["minka"].value),
                               rtol=2e-5)
    best = hyper.log_evidence(fits["minka"].value, counts, axis=axis)
    assert float(best) > float(hyper.log_evidence(start, counts, axis=axis))
    if kind == "asymmetric":               # 400 documents: the planted order is recovered
        assert np.all(np.diff(np.asarray(fits["minka"].value)) > 0)


def test_minka_sums_statistics_over_shards():
    """With the groups split over a mapped axis, `reduce` (psum) gives the unsplit fit."""
    counts = jnp.asarray(_polya_counts(np.linspace(0.1, 0.5, 6), 200, 40, 1))
    whole = hyper.minka(jnp.ones(6), counts)
    split = jax.vmap(lambda c: hyper.minka(jnp.ones(6), c,
                                           reduce=lambda x: jax.lax.psum(x, "shards")),
                     axis_name="shards")(counts.reshape(2, 100, 6))
    np.testing.assert_allclose(np.asarray(split.value[0]), np.asarray(whole.value), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(split.value[0]), np.asarray(split.value[1]))


def test_lda_params_for_learning_are_checked():
    with pytest.raises(ParameterError, match="optimize_alpha must be"):
        jt.LDA(3, optimize_alpha="yes")
    with pytest.raises(ParameterError, match="optimize_beta must be True or False"):
        jt.LDA(3, optimize_beta=1)
    with pytest.raises(ParameterError, match="needs exact draws"):
        jt.LDA(3, optimize_alpha="asymmetric", mh_steps=2)
    with pytest.raises(ParameterError, match="optimize_every"):
        jt.LDA(3, optimize_alpha="symmetric", optimize_every=0)
    with pytest.raises(ParameterError, match="optimizer must be"):
        jt.LDA(3, optimizer="adam")


def test_a_chain_that_learns_nothing_keeps_the_given_priors():
    m = jt.LDA(3, alpha=0.2, beta=0.05, num_blocks=4).fit(_tiny_corpus(), 4, seed=0)
    assert m.alpha == 0.2 and m.beta == 0.05 and isinstance(m.alpha, float)
    assert "learned" not in m.summary()


@pytest.mark.parametrize("sampler, extra", [("parallel", {}), ("sequential", {}),
                                            ("uncollapsed", {}), ("parallel", {"mh_steps": 2})])
def test_every_kernel_learns_the_priors(sampler, extra):
    corpus = _tiny_corpus()
    mode = "symmetric" if extra else "asymmetric"
    m = jt.LDA(3, alpha=1.0, beta=0.5, sampler=sampler, num_blocks=4, optimize_alpha=mode,
               optimize_beta=True, burn_in=2, optimize_every=2, **extra).fit(corpus, 8, seed=0)
    alpha = np.atleast_1d(m.alpha)
    assert alpha.shape == ((3,) if mode == "asymmetric" else (1,))
    assert np.all(np.isfinite(alpha)) and np.all(alpha > hyper.FLOOR) and not np.allclose(alpha, 1.0)
    assert np.isfinite(m.beta) and m.beta != 0.5
    assert "(learned; started at 1.0)" in m.summary()
    theta = m.doc_topic
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-5)
    assert np.isfinite(m.log_joint_per_token())
    assert np.all(np.isfinite(m.perplexity(corpus, num_particles=2)))


def test_learning_starts_after_burn_in_every_optimize_every():
    corpus = _tiny_corpus()
    kw = dict(alpha=1.0, num_blocks=4, optimize_alpha="symmetric", burn_in=4, optimize_every=4)
    assert jt.LDA(3, **kw).fit(corpus, 4, seed=0).alpha == 1.0       # sweep 4 is not past 4
    assert jt.LDA(3, **kw).fit(corpus, 7, seed=0).alpha == 1.0       # 5-7 are no multiples
    assert jt.LDA(3, **kw).fit(corpus, 8, seed=0).alpha != 1.0       # 8: the first update


def test_resume_continues_the_learned_priors_bitwise(tmp_path):
    corpus = jt.datasets.synthetic_lda(num_docs=30, num_words=60, num_topics=4,
                                       mean_doc_length=20, seed=2).corpus
    est = jt.LDA(4, alpha=1.0, beta=0.2, num_blocks=8, optimize_alpha="asymmetric",
                 optimize_beta=True, burn_in=10, optimize_every=5)
    straight = est.fit(corpus, 60, seed=3, eval_every=20)
    half = est.fit(corpus, 30, seed=3, eval_every=20)
    half.save(tmp_path / "m.jtm")
    again = jt.load(tmp_path / "m.jtm")
    np.testing.assert_array_equal(again.alpha, half.alpha)
    again.resume(corpus, 30, eval_every=20)
    np.testing.assert_array_equal(again.assignments, straight.assignments)
    np.testing.assert_array_equal(again.alpha, straight.alpha)
    assert again.beta == straight.beta
    resumed = {t.sweep: t.log_joint_per_token for t in again.trace}    # + sweep 30's point
    assert {t.sweep: resumed[t.sweep] for t in straight.trace} == {
        t.sweep: t.log_joint_per_token for t in straight.trace}


def test_sharded_learning_is_finite_and_reproducible():
    corpus = jt.datasets.synthetic_lda(num_docs=40, num_words=80, num_topics=4,
                                       mean_doc_length=20, seed=6).corpus
    est = jt.LDA(4, alpha=1.0, beta=0.2, num_blocks=8, optimize_alpha="asymmetric",
                 optimize_beta=True, burn_in=4, optimize_every=4)
    a = est.fit(corpus, 16, seed=1, devices=2)
    b = est.fit(corpus, 16, seed=1, devices=2)
    assert np.all(np.isfinite(a.alpha)) and np.all(a.alpha > hyper.FLOOR) and np.isfinite(a.beta)
    assert not np.allclose(a.alpha, 1.0) and a.beta != 0.2
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_array_equal(a.assignments, b.assignments)
    np.testing.assert_array_equal(np.asarray(a.trace[-1].priors["alpha"], np.float32), a.alpha)


def test_sharded_alpha_is_the_fit_of_all_documents():
    """One sharded learning step sees every shard's documents: its alpha is the one-device fit
    of the gathered doc-topic table (the psum over the shards)."""
    from jaxtopics import distributed as dist
    corpus = jt.datasets.synthetic_lda(num_docs=40, num_words=80, num_topics=4,
                                       mean_doc_length=20, seed=6).corpus
    params = lda.check_params(lda.Params(num_topics=4, alpha=1.0, num_blocks=8,
                                         optimize_alpha="asymmetric", burn_in=0, optimize_every=1))
    mesh = dist.make_mesh(2)
    sdata = dist.prepare(corpus, params, 2)
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    learned = jax.jit(lambda st, sd: dist.Sharded(lda, mesh).learn(st, sd, params, jnp.int32(0)))(
        state, sdata)
    whole = dist.gather(state, sdata)
    expected = hyper.minka(jnp.ones(4), whole.doc_topic).value
    np.testing.assert_allclose(np.asarray(learned.alpha), np.asarray(expected), rtol=1e-5)


def test_an_older_model_file_loads_and_continues_the_same_chain(optimized):
    """tests/fixtures/lda_format_before_learned_priors.jtm was written before State had alpha
    and beta (``LDA(3, alpha=0.2, beta=0.05, num_blocks=4).fit(corpus, 6, seed=2)`` on the
    corpus below): they are filled in from its params, and resuming it continues its chain
    (4 sweeps at once = 2 + 2). Today's fit from seed 2 is another chain: since 2026-12-05 the
    random start is drawn a block of the layout at a time (the same law, other draws)."""
    corpus = _tiny_corpus()
    old = jt.load(FIXTURES / "lda_format_before_learned_priors.jtm")
    assert old.alpha == 0.2 and old.beta == 0.05 and old.params.optimize_alpha is None
    np.testing.assert_array_equal(np.asarray(old.state.alpha), np.full(3, 0.2, np.float32))
    old.resume(corpus, 4)
    again = jt.load(FIXTURES / "lda_format_before_learned_priors.jtm")
    again.resume(corpus, 2).resume(corpus, 2)
    assert old.sweeps_done == again.sweeps_done == 10
    np.testing.assert_array_equal(old.assignments, again.assignments)
    assert old.params.optimize_alpha is None and old.alpha == 0.2 and old.beta == 0.05


def test_a_file_whose_fixed_prior_was_edited_is_refused(tmp_path):
    m = jt.LDA(3, alpha=0.2, num_blocks=4).fit(_tiny_corpus(), 2, seed=0)
    m._state = m.state._replace(alpha=jnp.full(3, 0.3, jnp.float32))
    m.save(tmp_path / "m.jtm")
    with pytest.raises(jt.FormatError, match="alpha differs from the parameter alpha=0.2"):
        jt.load(tmp_path / "m.jtm")


def test_a_tiny_corpus_keeps_every_topic():
    """The Gamma(2, 1) prior's pseudo-count keeps the alpha of a topic that no document uses
    well above the floor on a 5-document corpus (without it, i.e. shape 1.001 as Mallet's,
    6 of these 10 topics fall to ~1e-4 and never come back); beta stays in a sane range."""
    corpus = jt.datasets.synthetic_lda(num_docs=5, num_words=40, num_topics=3,
                                       mean_doc_length=20, alpha=0.3, beta=0.05, seed=4).corpus
    for mode in ("symmetric", "asymmetric"):
        m = jt.LDA(10, alpha=0.5, beta=0.1, num_blocks=4, optimize_alpha=mode,
                   optimize_beta=True, burn_in=10, optimize_every=5).fit(corpus, 200, seed=0)
        alpha = np.atleast_1d(m.alpha)
        assert np.all(np.isfinite(alpha)) and alpha.min() > 0.01 and alpha.max() < 100
        assert 1e-3 < m.beta < 1.0


def test_cli_learns_the_priors(tmp_path):
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(["apple banana cherry apple", "banana cherry date fig",
                              "fig grape apple date", "grape grape banana cherry"] * 5) + "\n")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--num-topics", "3",
                        "--sweeps", "12", "--input", str(src), "--out", str(out), "--no-progress",
                        "--optimize-alpha", "asymmetric", "--optimize-beta", "--burn-in", "4",
                        "--optimize-every", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = jt.load(out / "model.jtm")
    assert m.params.optimize_alpha == "asymmetric" and m.params.optimize_beta is True
    assert (m.params.burn_in, m.params.optimize_every) == (4, 4)
    assert np.asarray(m.alpha).shape == (3,) and m.beta != m.params.beta
    bad = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "fit", "--input", str(src),
                          "--optimize-alpha", "sometimes"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "invalid choice: 'sometimes'" in bad.stderr


def test_the_trace_records_the_learned_priors(tmp_path):
    """Every trace point holds the priors in use there (alpha a tuple when asymmetric); the
    last is the fitted value; the model file and the CLI's trace.csv keep them; a chain that
    learns nothing records none."""
    corpus = _tiny_corpus()
    m = jt.LDA(3, alpha=1.0, beta=0.2, num_blocks=4, optimize_alpha="asymmetric",
               optimize_beta=True, burn_in=2, optimize_every=2).fit(corpus, 10, seed=0,
                                                                   eval_every=5)
    assert [p.sweep for p in m.trace] == [5, 10]
    last = m.trace[-1].priors
    assert set(last) == {"alpha", "beta"} and len(last["alpha"]) == 3
    np.testing.assert_array_equal(np.asarray(last["alpha"], np.float32), m.alpha)
    assert np.float32(last["beta"]) == m.beta
    assert m.trace[0].priors != last                   # updated at 6, 8, 10
    m.save(tmp_path / "m.jtm")
    assert jt.load(tmp_path / "m.jtm").trace == m.trace
    symmetric = jt.LDA(3, alpha=1.0, num_blocks=4, optimize_alpha="symmetric", burn_in=0,
                       optimize_every=1).fit(corpus, 3, seed=0)
    assert set(symmetric.trace[-1].priors) == {"alpha"}
    assert symmetric.trace[-1].priors["alpha"] == float(symmetric.alpha)
    assert all(p.priors is None for p in jt.LDA(3).fit(corpus, 3, seed=0).trace)
    from jaxtopics.cli import _trace_table
    rows = _trace_table(m.trace)
    assert rows[0] == ["sweep", "log_joint_per_token", "changed_fraction", "seconds",
                       "alpha_0", "alpha_1", "alpha_2", "beta"]
    assert rows[-1][4:] == list(last["alpha"]) + [last["beta"]]


@pytest.mark.parametrize("setting", [{"burn_in": 3}, {"optimize_every": 2},
                                     {"optimizer": "optax"}])
def test_learning_settings_without_anything_to_learn_are_refused(setting):
    name = next(iter(setting))
    with pytest.raises(ParameterError, match=f"{name}=.* applies to learned priors only"):
        jt.LDA(3, **setting)


def _planted(asymmetric: bool):
    truth = (np.random.default_rng(1).permutation(np.linspace(0.05, 0.6, 20)) if asymmetric
             else 0.3)
    return truth, jt.datasets.synthetic_lda(num_docs=2000, num_words=3000, num_topics=20,
                                            mean_doc_length=100, alpha=truth, beta=0.02,
                                            zipf_exponent=0.0, seed=0)


@pytest.mark.slow
def test_symmetric_priors_are_recovered():
    """Planted alpha=0.3, beta=0.02 (symmetric Dir(beta): zipf_exponent=0), started at 1.0 and
    0.1: the learned values are within 10 % (measured: 0.3036, 0.02019 after 300 sweeps)."""
    _, syn = _planted(False)
    m = jt.LDA(20, alpha=1.0, beta=0.1, optimize_alpha="symmetric",
               optimize_beta=True).fit(syn.corpus, 300, seed=0)
    assert m.alpha == pytest.approx(0.3, rel=0.1)
    assert m.beta == pytest.approx(0.02, rel=0.1)


@pytest.mark.slow
def test_asymmetric_alpha_is_recovered():
    """Planted alpha_k spread over 0.05..0.6: after matching topics by phi (Hungarian), the
    learned alpha_k rank like the planted ones (measured Spearman 0.93), their sum is within
    15 % (measured 0.5 %) and no topic collapsed."""
    from scipy.optimize import linear_sum_assignment
    from scipy.stats import spearmanr
    truth, syn = _planted(True)
    m = jt.LDA(20, alpha=1.0, beta=0.1, optimize_alpha="asymmetric",
               optimize_beta=True).fit(syn.corpus, 300, seed=0)
    phi = m.topic_word
    cosine = (syn.phi @ phi.T / np.linalg.norm(syn.phi, axis=1)[:, None]
              / np.linalg.norm(phi, axis=1)[None])
    rows, cols = linear_sum_assignment(-cosine)
    learned = np.asarray(m.alpha)[cols]
    assert spearmanr(truth[rows], learned).correlation >= 0.8
    assert learned.sum() == pytest.approx(truth.sum(), rel=0.15)
    assert learned.min() > 0.01
    assert m.beta == pytest.approx(0.02, rel=0.1)
