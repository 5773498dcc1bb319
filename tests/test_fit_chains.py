"""Several seeded chains in one vmapped loop (``Estimator.fit_chains``) and its use by
``compare_num_topics(vmap_seeds=True)``."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.datasets import synthetic_lda
from jaxtopics.errors import ParameterError


def _corpus():
    return synthetic_lda(num_docs=60, num_words=80, num_topics=4, mean_doc_length=20, seed=3).corpus


@pytest.mark.parametrize("est", [jt.LDA(4, num_blocks=8), jt.LDA(4, sampler="sequential"),
                                 jt.DMM(6, num_blocks=8), jt.PTM(4, num_pseudo_docs=8),
                                 jt.LDA(4, optimize_alpha="asymmetric", optimize_beta=True,
                                        burn_in=2, optimize_every=2)],
                         ids=["lda", "lda-sequential", "dmm", "ptm", "lda-learned"])
def test_chains_are_valid_reproducible_and_the_single_fits_chains(est):
    """Each chain's state is consistent (the model's check_state), its trace and priors are its
    own, the same seeds give the same chains bitwise, and each is the chain fit(seed) runs up
    to float rounding in the batch: equal log joints for most seeds (a rounding flip makes a
    chain diverge, so at least one of three must match exactly on any backend with sane
    batching; on XLA:CPU all match for these)."""
    corpus = _corpus()
    chains = est.fit_chains(corpus, 6, seeds=(0, 1, 2), eval_every=3)
    again = est.fit_chains(corpus, 6, seeds=(0, 1, 2), eval_every=3)
    singles = [est.fit(corpus, 6, seed=s, eval_every=3) for s in (0, 1, 2)]
    module = type(est).module
    matched = 0
    for chain, same, single, seed in zip(chains, again, singles, (0, 1, 2)):
        assert chain.seed == seed and chain.sweeps_done == 6
        assert [p.sweep for p in chain.trace] == [3, 6]
        assert module.check_state(chain.state, est.params) is None
        np.testing.assert_array_equal(chain.assignments, same.assignments)
        matched += np.array_equal(chain.assignments, single.assignments)
        if est.params.__class__._fields.count("optimize_alpha") and est.params.optimize_alpha:
            np.testing.assert_array_equal(np.asarray(chain.trace[-1].priors["alpha"], np.float32),
                                          chain.alpha)
    assert matched >= 1
    assert not np.array_equal(chains[0].assignments, chains[1].assignments)


def test_a_chain_resumes_saves_and_loads_like_any_fit(tmp_path):
    corpus = _corpus()
    chains = jt.LDA(4, num_blocks=8).fit_chains(corpus, 4, seeds=(5, 6))
    chains[1].save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert loaded.seed == 6 and loaded.trace == chains[1].trace
    chains[1].resume(corpus, 3)
    loaded.resume(corpus, 3)
    np.testing.assert_array_equal(chains[1].assignments, loaded.assignments)
    assert chains[1].sweeps_done == 7


def test_growing_models_and_zero_sweeps_run_one_after_another():
    corpus = _corpus()
    dpmm = jt.DPMM(alpha=1.0).fit_chains(corpus, 3, seeds=(0, 1))
    assert [m.seed for m in dpmm] == [0, 1] and dpmm[0].sweeps_done == 3
    zero = jt.LDA(4).fit_chains(corpus, 0, seeds=(0, 1))
    assert [len(m.trace) for m in zero] == [1, 1]


def test_bad_arguments_are_refused():
    with pytest.raises(ParameterError, match="seeds must list at least one seed"):
        jt.LDA(4).fit_chains(_corpus(), 3, seeds=())
    with pytest.raises(ParameterError, match="num_sweeps"):
        jt.LDA(4).fit_chains(_corpus(), -1)
    with pytest.raises(ParameterError, match="vmap_seeds must be True, False or None"):
        jt.compare_num_topics(jt.LDA, _corpus(), [2], vmap_seeds="yes")


def test_compare_num_topics_with_vmapped_seeds_matches_one_after_another():
    """The same fits either way (up to float rounding in the batch): the same rows here."""
    corpus = _corpus()
    kw = dict(seeds=(0, 1), num_sweeps=8, coherence="u_mass")
    batched = jt.compare_num_topics(jt.LDA, corpus, [2, 4], vmap_seeds=True, **kw)
    looped = jt.compare_num_topics(jt.LDA, corpus, [2, 4], vmap_seeds=False, **kw)
    for a, b in zip(batched.rows, looped.rows):
        np.testing.assert_allclose(a.per_seed_perplexity, b.per_seed_perplexity, rtol=0.02)
