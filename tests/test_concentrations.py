"""Dirichlet-process concentrations drawn along the chain (issue 31).

(a) The auxiliary-variable updates of ``jaxtopics.ops.concentration`` have the right law: with
    the partition held fixed, iterating an update from a badly wrong start lands on the exact
    conditional, p(c | partition) ∝ Gamma(c; a, b) c^k prod_j Gamma(c) / Gamma(c + n_j)
    (one group: Escobar & West 1995; several: Teh et al. 2006, appendix A), computed by
    numerical integration; many independent chains (vmap), tolerances from their Monte Carlo
    error. Sharded (groups split over two devices): the same law, equal on every shard.
(b) The models: DPMM started at a badly wrong alpha moves to a sensible one; DP-MRM's alpha and
    gamma stay finite, resume bitwise (through a model file too) and agree on every shard.
(c) Resampling off is the chain of the code before this feature, bitwise (model files written
    by that code, which also load: the new State fields are filled in from the Params).
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import gammaln

from jaxtopics.ops import concentration_groups, concentration_one_group

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHAINS = 10_000
#: significance of each distribution check (a handful per test)
LEVEL = 1e-3
#: updates per chain: the updates forget a start far in a tail within ~10 (measured with 100,000
#: chains: after 10 or more the KS distance is at its sampling noise, ~0.003, in every case
#: below; after 6, 0.017 in the first group case)
STEPS = 15


# ------------------------------------------------------------------------------------------
# (a) the law of the updates


def _exact_cdf(log_density, lo: float = -90.0, hi: float = 12.0, points: int = 400_001):
    """(log c grid, CDF, mean) of the density exp(log_density(c)) on c = e^u, u in [lo, hi]
    (dc = c du); trapezoid rule on a fine grid (its error is far below the tests' bars)."""
    u = np.linspace(lo, hi, points)
    c = np.exp(u)
    log_f = log_density(c) + u
    f = np.exp(log_f - log_f.max())
    du = u[1] - u[0]
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * du)])
    total = cdf[-1]
    assert f[0] < 1e-12 * f.max() and f[-1] < 1e-12 * f.max(), "grid too narrow for the density"
    mean = np.sum((c[1:] * f[1:] + c[:-1] * f[:-1]) / 2 * du) / total
    mean2 = np.sum((c[1:] ** 2 * f[1:] + c[:-1] ** 2 * f[:-1]) / 2 * du) / total
    return u, cdf / total, mean, mean2 - mean ** 2


def _log_density(shape: float, rate: float, sizes, clusters: int):
    """log of Gamma(c; shape, rate) c^k prod_j Gamma(c) / Gamma(c + n_j), up to a constant."""
    sizes = [n for n in sizes if n > 0]

    def f(c):
        out = (shape - 1 + clusters) * np.log(c) - rate * c
        for n in sizes:
            out = out + gammaln(c) - gammaln(c + n)
        return out
    return f


def _check_law(draws: np.ndarray, law) -> str:
    """Kolmogorov-Smirnov distance of `draws` to the exact CDF, and the mean within its
    Monte Carlo error; returns a description (asserts inside)."""
    u, cdf, mean, var = law
    x = np.sort(np.log(draws.astype(np.float64)))
    n = x.shape[0]
    at = np.interp(x, u, cdf)
    ks = max(np.max(np.arange(1, n + 1) / n - at), np.max(at - np.arange(n) / n))
    ks_bar = np.sqrt(-np.log(LEVEL / 2) / (2 * n))
    se = np.sqrt(var / n)
    msg = (f"KS {ks:.4f} (bar {ks_bar:.4f}); mean {draws.mean():.5g} vs exact {mean:.5g} "
           f"(SE {se:.2g})")
    assert ks < ks_bar, msg
    assert abs(draws.mean() - mean) < 4.0 * se, msg
    return msg


def _iterate(update, starts, *args, steps: int = STEPS, chains: int = CHAINS,
             seed: int = 0) -> np.ndarray:
    """[cases, chains] values after `steps` updates c -> update(key, c, *case_args) of `chains`
    independent chains per case, case i starting at c = starts[i] with the i-th entry of every
    `args` array: all cases in one compiled program."""
    def chain(key, start, *case):
        return jax.lax.fori_loop(
            0, steps, lambda t, c: update(jax.random.fold_in(key, t), c, *case), start)

    keys = jax.random.split(jax.random.key(seed), (len(starts), chains))
    per_case = jax.vmap(chain, in_axes=(0, None) + (None,) * len(args))
    run = jax.jit(jax.vmap(per_case))
    return np.asarray(run(keys, jnp.asarray(starts, jnp.float32), *map(jnp.asarray, args)))


#: (prior shape, prior rate, clusters k, items n, a start far in a tail); the last case has
#: no items: the update must draw from the prior
ONE_GROUP = [(1.0, 1.0, 4, 30, 50.0), (0.5, 0.1, 12, 400, 1e-3), (0.5, 0.5, 1, 3, 20.0),
             (2.0, 3.0, 0, 0, 5.0)]
#: (prior shape, prior rate, group sizes n_j (0: an empty group, no part), tables m, start)
GROUPS = [(1.0, 1.0, [3, 7, 1, 12, 0, 25, 0, 0], 14, 40.0),
          (2.0, 0.5, [50, 80, 20, 200, 5, 60, 1, 1], 40, 1e-3)]


def _columns(cases):
    return [np.asarray(x) for x in zip(*cases)]


def test_one_group_update_reaches_the_exact_conditional():
    """Escobar & West's update, iterated with the partition (k clusters of n items) fixed,
    from a start far in a tail (``STEPS``): its stationary law is p(c | k, n)."""
    shape, rate, k, n, start = _columns(ONE_GROUP)
    draws = _iterate(concentration_one_group, start.astype(np.float32), k, n,
                     shape.astype(np.float32), rate.astype(np.float32))
    assert np.all(np.isfinite(draws)) and np.all(draws > 0)
    for case, x in zip(ONE_GROUP, draws):
        _check_law(x, _exact_cdf(_log_density(case[0], case[1], [case[3]], case[2])))


def test_group_update_reaches_the_exact_conditional():
    """Teh et al.'s update (groups of n_j items, m tables in all), iterated likewise: its
    stationary law is p(c | m, n_1..n_J)."""
    shape, rate, sizes, m, start = _columns(GROUPS)
    draws = _iterate(lambda key, c, n, m, a, b: concentration_groups(key, c, n, m, a, b),
                     start.astype(np.float32), sizes.astype(np.int32), m,
                     shape.astype(np.float32), rate.astype(np.float32))
    for (a, b, n, mm, _), x in zip(GROUPS, draws):
        _check_law(x, _exact_cdf(_log_density(a, b, n, mm)))


def test_negative_control_a_wrong_mixture_weight_is_rejected():
    """Power: Escobar & West's update with the mixture odds (a + k) / (n (b - log eta)) in
    place of (a + k - 1) / (...) (a slip that moves a little mass between the two Gamma
    components) is rejected where the mixture matters (k = 1, n = 3, a = 0.5)."""
    from jaxtopics.ops import log_gamma

    shape, rate, k, n, start = ONE_GROUP[2]

    def wrong(key, c):
        k_eta, k_pick, k_draw = jax.random.split(key, 3)
        g = log_gamma(k_eta, jnp.stack([c + 1.0, jnp.float32(n)]))
        rate_post = rate - (g[0] - jnp.logaddexp(g[0], g[1]))
        odds = (shape + k) / (n * rate_post)
        post = jnp.where(jax.random.uniform(k_pick) * (1 + odds) < odds, shape + k, shape + k - 1)
        return jnp.exp(log_gamma(k_draw, post) - jnp.log(rate_post))

    with pytest.raises(AssertionError, match="KS"):
        _check_law(_iterate(wrong, [start])[0], _exact_cdf(_log_density(shape, rate, [n], k)))


def test_group_update_sharded_has_the_same_law_on_every_shard():
    """The groups split over two devices (per-shard auxiliaries, their sums over the shards,
    the draw from a shared key): every shard holds the same value, of the exact law."""
    from jax.sharding import Mesh, PartitionSpec as P

    if len(jax.devices()) < 2:
        pytest.skip("needs two devices")
    shape, rate, m = 1.0, 1.0, 14
    sizes = np.array([[3, 7, 1, 0], [12, 25, 0, 0]], np.int32)     # shard 0, shard 1 (padding 0)
    law = _exact_cdf(_log_density(shape, rate, sizes.ravel(), m))
    mesh = Mesh(np.array(jax.devices()[:2]), ("s",))

    def run(keys, n):            # keys [1, chains] and n [1, 4]: this shard's
        def chain(key):
            def step(t, c):
                k = jax.random.fold_in(jax.random.fold_in(key, t), jax.lax.axis_index("s"))
                return concentration_groups(k, c, n[0], m, shape, rate, axis_name="s")
            return jax.lax.fori_loop(0, STEPS, step, jnp.float32(40.0))
        return jax.vmap(chain)(keys[0])[None]

    keys = jnp.broadcast_to(jax.random.split(jax.random.key(4), CHAINS)[None], (2, CHAINS))
    out = jax.jit(jax.shard_map(run, mesh=mesh, in_specs=(P("s"), P("s")), out_specs=P("s"),
                                check_vma=False))(keys, jnp.asarray(sizes))
    out = np.asarray(out)
    np.testing.assert_array_equal(out[0], out[1])
    _check_law(out[0], law)
