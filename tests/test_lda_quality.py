"""Quality on real data: the parallel kernel against exact collapsed Gibbs on Reuters.

Reference (DESIGN.md): exact collapsed Gibbs LDA on ../shared/data/reuters, K=20, alpha=0.1,
beta=0.01, 500 sweeps: log p(w, z) / N = -7.841 (mean of 3 seeds; single chains -7.825..-7.852).
The issue's bar: the parallel kernel ends within 0.25 % of that. Single chains scatter by ~0.013,
so the test averages 6 independent chains (vmap), whose mean has a standard error of ~0.006; the
0.25 % band (0.0196) is then > 2.5 standard errors of the mean plus the reference's own error.
The full side-by-side run (sequential, parallel, uncollapsed, tomotopy) is scripts/reuters_quality.py.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

from jaxtopics.models import lda

REFERENCE = -7.841
NUM_CHAINS = 6
NUM_SWEEPS = 500


@partial(jax.jit, static_argnums=(2, 3))
def _chains(keys, data, params, num_sweeps):
    def one(key):
        init_key, chain_key = jax.random.split(key)
        state = lda.init(init_key, data, params)
        state = jax.lax.fori_loop(
            0, num_sweeps,
            lambda t, s: lda.sweep(jax.random.fold_in(chain_key, t), s, data, params)[0], state)
        return lda.log_joint(state, data, params)
    return jax.vmap(one)(keys)


@pytest.mark.slow
def test_parallel_matches_exact_gibbs_on_reuters(reuters):
    params = lda.Params(num_topics=20, alpha=0.1, beta=0.01)          # the default kernel
    assert params.sampler == "parallel"
    data = lda.prepare(reuters, params)
    keys = jax.random.split(jax.random.key(2024), NUM_CHAINS)
    per_token = np.asarray(_chains(keys, data, params, NUM_SWEEPS)) / reuters.num_tokens
    mean = per_token.mean()
    gap = abs(mean - REFERENCE) / abs(REFERENCE)
    print(f"parallel chains: {np.round(per_token, 4)}, mean {mean:.4f}, gap {gap:.3%}")
    assert np.all(np.isfinite(per_token))
    assert gap < 0.0025, f"parallel kernel mean {mean:.4f} is {gap:.3%} from exact Gibbs {REFERENCE}"
