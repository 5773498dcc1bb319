"""Learned Dirichlet priors of DMM (``optimize_alpha`` over the cluster sizes, ``optimize_beta``
over the clusters' word counts; the rules of ``jaxtopics.learned_priors`` that LDA follows):
both kernels learn, resume continues them bitwise, the trace records them, sharded learning
is equal on every shard, planted priors are recovered; a chain that learns nothing is the
chain before the feature and that code's model file loads.

``fixtures/dmm_format_before_learned_priors.jtm`` was written by the code before this change
(commit 8fbf9f4, ``git worktree add``), in this suite's ``optimized`` setting (XLA_FLAGS
``--xla_cpu_use_fusion_emitters=false``, full optimisation, 4 CPU devices):
``DMM(4, alpha=0.2, beta=0.05, num_blocks=4).fit(corpus, 6, seed=2)`` on :func:`_corpus`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jaxtopics as jt
import jaxtopics.datasets
from jaxtopics import hyper
from jaxtopics.errors import ParameterError
from jaxtopics.models import dmm

FIXTURES = Path(__file__).parent / "fixtures"


def _corpus():
    return jt.datasets.synthetic_lda(num_docs=12, num_words=30, num_topics=3,
                                     mean_doc_length=8, seed=5).corpus


def _mixture(seed: int = 0, docs: int = 600):
    return jt.datasets.synthetic_dmm(num_docs=docs, num_words=200, num_clusters=6,
                                     mean_doc_length=12, cluster_alpha=1.0, beta=0.05,
                                     zipf_exponent=0.0, seed=seed)


@pytest.mark.parametrize("sampler", ["parallel", "sequential"])
@pytest.mark.parametrize("mode", ["symmetric", "asymmetric"])
def test_both_kernels_learn_the_priors(sampler, mode):
    m = jt.DMM(4, alpha=1.0, beta=0.5, sampler=sampler, num_blocks=4, optimize_alpha=mode,
               optimize_beta=True, burn_in=2, optimize_every=2).fit(_corpus(), 8, seed=0)
    alpha = np.atleast_1d(m.alpha)
    assert alpha.shape == ((4,) if mode == "asymmetric" else (1,))
    assert np.all(np.isfinite(alpha)) and np.all(alpha > hyper.FLOOR) and not np.allclose(alpha, 1.0)
    assert np.isfinite(m.beta) and m.beta != 0.5
    assert dmm.check_state(m.state, m.params) is None
    weights = np.asarray(m.cluster_weights)
    np.testing.assert_allclose(weights, (m.cluster_sizes + m.alpha) / (12 + np.sum(
        np.broadcast_to(m.alpha, (4,)))), rtol=1e-5)
    assert set(m.trace[-1].priors) == {"alpha", "beta"}


def test_resume_continues_the_learned_priors_bitwise(tmp_path):
    est = jt.DMM(4, alpha=1.0, beta=0.5, num_blocks=4, optimize_alpha="asymmetric",
                 optimize_beta=True, burn_in=2, optimize_every=3)
    straight = est.fit(_corpus(), 16, seed=1, eval_every=8)
    half = est.fit(_corpus(), 8, seed=1, eval_every=8)
    half.save(tmp_path / "m.jtm")
    again = jt.load(tmp_path / "m.jtm").resume(_corpus(), 8, eval_every=8)
    np.testing.assert_array_equal(again.labels, straight.labels)
    np.testing.assert_array_equal(again.alpha, straight.alpha)
    assert again.beta == straight.beta and again.trace[-1].priors == straight.trace[-1].priors


def test_an_older_model_file_loads_and_continues_the_same_chain(optimized):
    old = jt.load(FIXTURES / "dmm_format_before_learned_priors.jtm")
    assert old.alpha == 0.2 and old.beta == np.float32(0.05) and old.params.optimize_alpha is None
    np.testing.assert_array_equal(np.asarray(old.state.alpha), np.full(4, 0.2, np.float32))
    fresh_6 = jt.DMM(4, alpha=0.2, beta=0.05, num_blocks=4).fit(_corpus(), 6, seed=2)
    np.testing.assert_array_equal(old.labels, fresh_6.labels)     # learning off: the same chain
    old.resume(_corpus(), 4)
    fresh = jt.DMM(4, alpha=0.2, beta=0.05, num_blocks=4).fit(_corpus(), 10, seed=2)
    np.testing.assert_array_equal(old.labels, fresh.labels)


def test_sharded_learning_is_equal_on_every_shard_and_reproducible():
    est = jt.DMM(4, alpha=1.0, beta=0.5, num_blocks=4, optimize_alpha="asymmetric",
                 optimize_beta=True, burn_in=2, optimize_every=2)
    a = est.fit(_corpus(), 8, seed=1, devices=2)
    b = est.fit(_corpus(), 8, seed=1, devices=2)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.beta == b.beta and not np.allclose(a.alpha, 1.0)
    for leaf in (a._state.alpha, a._state.beta):       # the gathered (replicated) values
        assert np.all(np.isfinite(np.asarray(leaf)))


def test_learning_settings_are_checked():
    with pytest.raises(ParameterError, match="optimize_alpha must be None"):
        jt.DMM(4, optimize_alpha="sometimes")
    with pytest.raises(ParameterError, match="burn_in=3 applies to learned priors only"):
        jt.DMM(4, burn_in=3)


@pytest.mark.slow
def test_planted_priors_are_recovered():
    """600 documents in 6 clusters drawn with alpha = 1 (cluster weights ~ Dir(1)) and a
    symmetric beta = 0.05 (``zipf_exponent=0``): beta is recovered within 10 %; alpha, from the 6 cluster sizes of one draw of the
    weights, is the evidence's maximiser for those sizes (its sampling spread over seeds is
    wide: the check is against the maximiser of the true partition's sizes, within 15 %)."""
    syn = _mixture()
    m = jt.DMM(6, alpha=0.1, beta=0.1, optimize_alpha="symmetric", optimize_beta=True).fit(
        syn.corpus, 150, seed=0)
    assert abs(m.beta / 0.05 - 1) < 0.10, m.beta
    sizes = np.bincount(np.asarray(syn.corpus.labels), minlength=6)[None, :]
    oracle = float(hyper.minka(1.0, sizes).value)
    assert abs(float(m.alpha) / oracle - 1) < 0.15, (m.alpha, oracle)
