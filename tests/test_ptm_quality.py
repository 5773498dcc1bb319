"""PTM's default parallel kernel against the exact sequential kernel (DESIGN.md "How to test a
sampler", item 3): chains of both kernels started from one common burned-in state must sit at
the same level of the collapsed log joint per token; the fully synchronous sweep (one block of
documents, one block of tokens) is the negative control that the same bar must reject.

Why from a common state: from random starts PTM's chains end in different local optima whose
log joints differ by 1.5-3 % per token (measured sd of 6 chains on 1,500 planted short texts,
K=12, P=150, 200 sweeps), so three seeds cannot resolve the 0.97 % gap reported in issue 36;
from a common burned-in state the chains stay in one mode and the spread is the within-mode
noise. Measured there (8 chains each, 80 sweeps from a 400-sweep exact burn-in): default
parallel - exact = +0.010 % (0.3 se), so the default kernel has no stationary bias that this
resolution (se 0.03 %) sees.

The sweep sharded over 4 devices (``jaxtopics.distributed``, the facade's ``devices=4`` kernel)
is held to the same two-sided bar against the same exact chains, from the same start.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxtopics.datasets import synthetic_dmm
from jaxtopics.models import ptm

from sharded_chains import assert_rejected, assert_same_level, sharded_chain_means

needs_4_default_devices = pytest.mark.skipif(len(jax.devices()) < 4,
                                             reason="fewer than 4 devices on the default backend")

K, P = 12, 20
CHAINS, SWEEPS, BURN_IN = 28, 50, 600


@functools.lru_cache(maxsize=None)
def _corpus():
    return synthetic_dmm(num_docs=400, num_words=1000, num_clusters=K, mean_doc_length=8,
                         seed=3).corpus


def _runner(corpus, sweeps: int, **settings):
    params = ptm.check_params(ptm.Params(K, P, **settings))
    data = ptm.prepare(corpus, params)

    def run(st, key):
        def body(st, t):
            st = ptm.sweep(jax.random.fold_in(key, t), st, data, params)[0]
            return st, ptm.log_joint(st, data, params)
        return jax.lax.scan(body, st, jnp.arange(sweeps))
    return params, data, run


@functools.lru_cache(maxsize=None)
def _start():
    corpus = _corpus()
    params, data, run = _runner(corpus, BURN_IN, sampler="sequential")
    state, _ = jax.jit(run)(ptm.init(jax.random.key(0), data, params), jax.random.key(1))
    return state


@functools.lru_cache(maxsize=None)
def _chain_means(**settings) -> np.ndarray:
    """Per chain, the mean log joint per token over the second half of SWEEPS sweeps from the
    common start (chains keyed 7/0..CHAINS-1, vmapped)."""
    corpus = _corpus()
    _, _, run = _runner(corpus, SWEEPS, **settings)
    _, lj = jax.jit(jax.vmap(run, in_axes=(None, 0)))(
        _start(), jax.random.split(jax.random.key(7), CHAINS))
    return np.asarray(lj, np.float64)[:, SWEEPS // 2:].mean(1) / corpus.num_tokens


@pytest.mark.slow
def test_default_parallel_kernel_matches_the_exact_kernel() -> None:
    """400 planted short texts (12 clusters, ~8 tokens each), K=12, P=20 (20 documents per
    pseudo-document: a stale block moves many documents and tokens of one pseudo-document).
    From one state (600 exact sweeps from a random start; after 200 the chains still climbed,
    and a kernel that climbs more slowly then shows a gap that is mixing, not bias), 28 chains
    of the exact kernel, of the default parallel kernel (64 blocks) and of the fully synchronous
    one (num_blocks=1) run 50 sweeps; statistic: each chain's mean log joint per token over
    sweeps 26-50. The default kernel must lie within 4 standard errors of the difference
    (two-sided, ``assert_same_level``: a false alarm ~6e-5) of the exact chains' mean; the
    synchronous sweep must fail that bar. Measured: default -0.018 % = -0.8 se, synchronous
    -0.18 % = -6.3 se (se 0.023 % of the log joint; 28 chains so that a -0.17 % control is
    rejected at z=4 with probability ~0.99 rather than ~0.8 with 16 chains), resolving gaps far
    below the 0.97 % of issue 36."""
    exact = _chain_means(sampler="sequential")
    default = _chain_means(sampler="parallel")
    synchronous = _chain_means(sampler="parallel", num_blocks=1)
    assert_same_level("PTM default parallel vs exact", exact, default)
    assert_rejected("PTM one block vs exact", exact, synchronous)


@pytest.mark.slow
@needs_4_default_devices
def test_four_devices_match_the_exact_kernel() -> None:
    """The default parallel kernel sharded over 4 devices (the documents split in 4 ranges, each
    device sweeping its own blocks and exchanging the moves of the global tables after each
    block: the kernel ``fit(..., devices=4)`` runs), CHAINS chains (vmapped) from the same
    common state, statistic as above, within 4 se of the same exact chains, two-sided; the
    CHAINS synchronous chains (one block) fail that bar, so it has the power to reject a wrong
    kernel with this many chains (with 4 sharded chains the bar widens so that 4 one-block
    chains measured only -2.2 se). Measured: 4 devices -0.013 % = -0.5 se (control as above)."""
    exact = _chain_means(sampler="sequential")
    params = ptm.check_params(ptm.Params(K, P))
    four = sharded_chain_means(ptm, params, _corpus(), _start(), jax.random.key(11), CHAINS,
                               SWEEPS, devices=4)
    assert_same_level("PTM 4 devices vs exact", exact, four)
    assert_rejected("PTM one block vs exact", exact,
                    _chain_means(sampler="parallel", num_blocks=1))
