"""HDP recovery of planted topics: a synthetic LDA corpus with 12 topics; from 1 and from 30
initial topics, both kernels end with 12 +- 2 topics holding >= 1 % of the tokens, and at least
10 planted topics are recovered: a square Hungarian matching (padded with TV 1, so a missing or
an extra topic costs a full unit instead of nothing) matches each to a found one at
total-variation distance < 0.4 (mean of those < 0.25). Exact recovery (12 of 12) is not reached
by every chain within 100 sweeps (see the test). Also: the default parallel kernel, and the
sweep sharded over 4 devices, against the exact one from a common burned-in state (issue 36).

Test-sized corpus (200 docs x 60 words, V=600; 100 sweeps). The issue's corpus (600 docs x 80
words, V=1500, 500 sweeps) runs in scripts/bench_hdp.py --recovery (numbers in docs/benchmarks.md).
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from jaxtopics.datasets import synthetic_lda
from jaxtopics.fit import chain_keys, run_sweeps
from jaxtopics.models import hdp
from jaxtopics.models.base import kernel_module

from shared_results import shared
from sharded_chains import assert_rejected, assert_same_level, sharded_chain_means

PLANTED = 12
SWEEPS = 100
DIRECT_SWEEPS = 500
#: a planted topic counts as recovered when matched at TV < 0.4: a topic that merges two planted
#: ones lies at TV ~0.5 from each (half its mass is the other's), an unrelated one at ~0.9
RECOVERED_TV = 0.4
needs_4_default_devices = pytest.mark.skipif(len(jax.devices()) < 4,
                                             reason="fewer than 4 devices on the default backend")


@functools.lru_cache(maxsize=None)
def _planted():
    return synthetic_lda(num_docs=200, num_words=600, num_topics=PLANTED, mean_doc_length=60,
                         alpha=0.2, beta=0.05, seed=11)


def _square_match(phi_true: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, int]:
    """Square matching of the planted topics to the found ones: the [S, S] total-variation
    cost matrix (S = max(planted, found)) padded with TV 1 (the largest possible) for a
    planted topic left without a found one or a found topic left without a planted one, so a
    missing or an extra topic costs a full unit. Returns the S matched costs and the number of
    planted topics recovered, matched to a found topic at TV < RECOVERED_TV."""
    k, n = phi_true.shape[0], phi.shape[0]
    size = max(k, n)
    cost = np.ones((size, size))
    cost[:k, :n] = 0.5 * np.abs(phi_true[:, None, :] - phi[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    matched = cost[rows, cols]
    recovered = int(np.sum((rows < k) & (cols < n) & (matched < RECOVERED_TV)))
    return matched, recovered


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["parallel", "sequential", "crf", "crf_sequential"])
def test_recovers_planted_topics_from_one_and_from_thirty(sampler: str) -> None:
    syn = _planted()
    corpus = syn.corpus
    # fixed capacities (>= 30 initial topics) so that both starts share one compiled sweep
    params = hdp.check_params(hdp.Params(sampler=sampler, topic_capacity=64, table_capacity=32))
    module = kernel_module(hdp, params)
    data = module.prepare(corpus, params)
    # direct assignment: its default schedule runs the (costly) split-merge moves in an eighth
    # of the sweeps (1.25 attempts a sweep against the CRF kernels' 10): 500 sweeps, the
    # issue's bar; the CRF kernels 100
    sweeps = SWEEPS if sampler.startswith("crf") else DIRECT_SWEEPS
    for k0 in (1, 30):
        state = module.init(chain_keys(k0)[0], data, params._replace(initial_topics=k0))
        state, trace = run_sweeps(module, params, data, state, chain_keys(k0)[1], start=0,
                                  num_sweeps=sweeps, num_tokens=corpus.num_tokens,
                                  eval_every=sweeps, progress=False)
        est = module.estimate(state, params)
        sizes = est["topic_sizes"]
        big = sizes >= 0.01 * corpus.num_tokens
        matched, recovered = _square_match(syn.phi, np.asarray(est["phi"])[big])
        print(f"{sampler} from {k0}: {int(big.sum())} topics >= 1% ({len(sizes)} active), "
              f"recovered {recovered}, matched TV {np.round(matched, 3)}, "
              f"log joint/token {trace[-1].log_joint_per_token:.4f}")
        # not yet exact after 100 sweeps (measured: the exact kernel from 1 topic holds two
        # planted topics merged, TV 0.41, and one missing; the parallel one from 30 one planted
        # topic split in two): the count bar stays +- 2, now with missing and extra topics
        # counted by the square matching instead of free
        assert abs(int(big.sum()) - PLANTED) <= 2, (sampler, k0, sizes)
        assert recovered >= PLANTED - 2, (sampler, k0, matched)
        good = matched[matched < RECOVERED_TV]
        assert good.mean() < 0.25, (sampler, k0, matched)         # unrelated topics: TV ~0.9
        assert jax.numpy.sum(state.topic) == corpus.num_tokens


# ------------------------------------------------------------------------------------------
# the default parallel kernel against the exact one, from a common burned-in state

CHAINS, CHAIN_SWEEPS, BURN_IN_CALLS = 12, 30, 15
#: split-merge moves a sweep of the sharded chains (the moves' sharded statistics under test too)
SHARDED_SPLIT_MERGE = 3


@functools.lru_cache(maxsize=None)
def _small():
    return synthetic_lda(num_docs=120, num_words=300, num_topics=PLANTED, mean_doc_length=50,
                         alpha=0.2, beta=0.05, seed=11).corpus


@functools.lru_cache(maxsize=None)
def _hdp_chain(**settings):
    """(params, data, jitted run(state, key) -> ((state, overflow), log joints)) for CHAIN_SWEEPS
    sweeps. No split-merge moves: they are the same exact Metropolis-Hastings moves in both
    kernels; what differs, and what is compared, is the blocked table and dish steps.
    Capacities far above what the chains use (~12 topics, < 20 tables a document): no growth."""
    params = hdp.check_params(hdp.Params(topic_capacity=64, table_capacity=48,
                                         split_merge_steps=0, **settings))
    module = kernel_module(hdp, params)
    data = module.prepare(_small(), params)

    def run(st, key):
        def body(carry, t):
            st, overflow = carry
            st, info = module.sweep(jax.random.fold_in(key, t), st, data, params)
            return (st, overflow | info.overflow), module.log_joint(st, data, params)
        return jax.lax.scan(body, (st, jax.numpy.bool_(False)), jax.numpy.arange(CHAIN_SWEEPS))
    return params, data, jax.jit(run)


@functools.lru_cache(maxsize=None)
def _hdp_start(blocked: str = "crf"):
    """The common start: BURN_IN_CALLS x CHAIN_SWEEPS sweeps of the blocked kernel `blocked`
    ("crf" or the direct-assignment "parallel") from a random state with the 12 planted topics'
    number of initial topics (the chains' own compiled run)."""
    params, data, run = _hdp_chain(sampler=blocked)
    state = kernel_module(hdp, params).init(jax.random.key(0), data,
                                            params._replace(initial_topics=PLANTED))
    for i in range(BURN_IN_CALLS):
        (state, overflow), _ = run(state, jax.random.key(1000 + i))
        assert not bool(overflow)
    return state


@functools.lru_cache(maxsize=None)
def _hdp_chain_means(**settings) -> np.ndarray:
    """Per chain (keys 100..), the mean log joint per token over sweeps 16-30 from the start.
    Computed once per test run (``shared_results``): the three tests below compare against the
    same exact and one-block chains, and pytest-xdist runs them in different processes (the
    exact direct-assignment chains alone are ~35 s)."""
    def compute():
        _, _, run = _hdp_chain(**settings)
        start = _hdp_start("crf" if settings["sampler"].startswith("crf") else "parallel")
        means = []
        for c in range(CHAINS):
            (_, overflow), lj = run(start, jax.random.key(100 + c))
            assert not bool(overflow)
            means.append(np.asarray(lj, np.float64)[CHAIN_SWEEPS // 2:].mean())
        return np.asarray(means) / _small().num_tokens
    return shared(f"test_hdp_quality._hdp_chain_means {sorted(settings.items())}", compute)


@pytest.mark.slow
def test_default_parallel_kernel_matches_the_exact_kernel() -> None:
    """The default parallel kernel (64 token blocks, dish_groups=1: every document's r-th table
    draws its dish at once, each opener of a new dish its own topic) against the exact CRF
    sampler (Teh et al. 2006, sec. 5.1). 120 planted LDA documents (12 topics, ~50 tokens); one
    common state (450 default sweeps); 12 chains of each kernel run 30 sweeps; statistic: each
    chain's mean log joint per token over sweeps 16-30. Two-sided bar: within 4 standard errors
    of the difference (``assert_same_level``, false alarm ~6e-5). Negative control: the fully
    synchronous sweep (num_blocks=1: every token's table at once), which must fail the same bar.
    Measured: default -0.02 % = -0.2 se (se 0.11 %), control -3.8 % = -24 se. Offline, on 200
    documents with split-merge moves (8 chains of 40 sweeps from a 100-sweep exact burn-in):
    default +0.05 % = +0.7 se (se 0.07 %), dish_groups=D -0.05 % = -0.7 se, one block -3.1 % =
    -34 se: no bias near the 0.40 % of issue 36 (a random-start spread, not the kernel)."""
    exact = _hdp_chain_means(sampler="crf_sequential")
    default = _hdp_chain_means(sampler="crf")
    synchronous = _hdp_chain_means(sampler="crf", num_blocks=1)
    assert_same_level("HDP crf vs exact", exact, default)
    assert_rejected("HDP crf one block vs exact", exact, synchronous)


@pytest.mark.slow
def test_default_direct_assignment_kernel_matches_the_exact_one() -> None:
    """The default kernel (direct assignment, 64 token blocks) against the exact sequential
    direct-assignment sampler, as above (statistic: the mean of log p(w, z, beta) per token over
    sweeps 16-30 of 12 chains each from one common state, split-merge moves off: the same exact
    moves in both kernels); control: one block (every token drawn at once)."""
    exact = _hdp_chain_means(sampler="sequential")
    default = _hdp_chain_means(sampler="parallel")
    synchronous = _hdp_chain_means(sampler="parallel", num_blocks=1)
    print(f"direct assignment: default - exact {100 * (default.mean() / exact.mean() - 1):+.3f} %, "
          f"one block {100 * (synchronous.mean() / exact.mean() - 1):+.3f} %")
    assert_same_level("HDP default vs exact", exact, default)
    assert_rejected("HDP one block vs exact", exact, synchronous)


@pytest.mark.slow
@needs_4_default_devices
def test_four_devices_match_the_exact_kernel() -> None:
    """The default parallel kernel sharded over 4 devices (``jaxtopics.distributed``, the kernel
    ``fit(..., devices=4)`` runs: each device seats its own documents' tokens block by block,
    the dish counts' moves exchanged after each block, new dishes opened identically on every
    device), with SHARDED_SPLIT_MERGE split-merge moves a sweep (their statistics summed over
    the devices; an exact Metropolis-Hastings move of the same posterior, so the stationary
    level is the exact kernel's), CHAINS chains (vmapped) from the same common state, statistic
    as above, within 4 se of the same exact chains, two-sided; the CHAINS one-block chains fail
    that bar, so it has the power to reject a wrong kernel with this many chains. Measured:
    4 devices +0.015 % = +0.1 se (se 0.11 %; without the moves -0.1 se)."""
    for exact_kernel, blocked in (("crf_sequential", "crf"), ("sequential", "parallel")):
        exact = _hdp_chain_means(sampler=exact_kernel)
        params, _, _ = _hdp_chain(sampler=blocked)
        params = hdp.check_params(params._replace(split_merge_steps=SHARDED_SPLIT_MERGE,
                                                  split_merge_every=1))
        four = sharded_chain_means(hdp, params, _small(), _hdp_start(blocked),
                                   jax.random.key(11), CHAINS, CHAIN_SWEEPS, devices=4)
        assert_same_level(f"HDP {blocked} 4 devices vs exact", exact, four)
        assert_rejected(f"HDP {blocked} one block vs exact", exact,
                        _hdp_chain_means(sampler=blocked, num_blocks=1))
