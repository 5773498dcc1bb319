"""Dirichlet-process concentrations drawn from their conditionals by auxiliary variables.

A DP(c) partition of n items into k clusters (the Chinese restaurant process) depends on the
concentration c through (Antoniak 1974)

    p(k | c, n) ∝ c^k Gamma(c) / Gamma(c + n),

and J partitions that share c (group j: n_j items; k clusters over all groups) through
prod_j c^(k_j) Gamma(c) / Gamma(c + n_j). With a Gamma(a, b) prior (shape a, rate b) the
conditional of c is drawn exactly by adding auxiliary variables and Gibbs-sampling them with c:

(EW) one group (Escobar & West 1995, eq. 13-14):
        eta ~ Beta(c + 1, n)
        c   ~ pi Gamma(a + k, b - log eta) + (1 - pi) Gamma(a + k - 1, b - log eta),
        pi / (1 - pi) = (a + k - 1) / (n (b - log eta))
(TG) several groups (Teh, Jordan, Beal & Blei 2006, appendix A), for every group with n_j > 0:
        w_j ~ Beta(c + 1, n_j),   s_j ~ Bernoulli(n_j / (n_j + c))
        c   ~ Gamma(a + k - sum_j s_j, b - sum_j log w_j)

Both follow from Gamma(c) / Gamma(c + n) = B(c + 1, n) (1 + n / c) / Gamma(n), with
B(c + 1, n) = int_0^1 w^c (1 - w)^(n - 1) dw: the joint of c and the auxiliaries has c's
posterior as its marginal, so each update leaves it invariant. A Beta(x, y) variate is
G_x / (G_x + G_y) of two Gamma variates, kept in log space (``log_gamma``), so that tiny
concentrations do not underflow. The groups of (TG) may be split over the shards of a sharded
sweep (`axis_name`): each shard draws w_j, s_j of its own groups with its own key, their sums
are summed over the shards, and c is drawn from a key equal on every shard, so every shard
gets the same c. Draws are kept in [MIN_CONCENTRATION, MAX_CONCENTRATION] (float32).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from .counts import shard_sum, shared_key
from .sampling import log_gamma

__all__ = ["MIN_CONCENTRATION", "MAX_CONCENTRATION", "concentration_one_group",
           "concentration_groups"]

#: floor of drawn concentrations: far below any that opens a cluster, and high enough that
#: c / V stays a normal float32 for V up to 1e7 (a vague prior, shape 1e-3, makes draws below
#: float32's range likely: Gamma(1e-3) < 1e-38 with probability ~0.9)
MIN_CONCENTRATION = 1e-30
#: ceiling of drawn concentrations (float32's range, as the parameters' checks)
MAX_CONCENTRATION = 1e30

_F32 = jnp.float32


def _bounded(log_c: Array) -> Array:
    """exp(log_c) in float32, within [MIN_CONCENTRATION, MAX_CONCENTRATION]."""
    return jnp.clip(jnp.exp(log_c), MIN_CONCENTRATION, MAX_CONCENTRATION).astype(_F32)


def _log_beta(key: Array, x: Array, y: Array) -> Array:
    """log of Beta(x, y) variates (elementwise; one ``log_gamma`` call for both halves)."""
    g = log_gamma(key, jnp.concatenate([jnp.ravel(x), jnp.ravel(y)]).astype(_F32))
    n = g.shape[0] // 2
    return (g[:n] - jnp.logaddexp(g[:n], g[n:])).reshape(jnp.shape(x))


def concentration_one_group(key: Array, value: Array | float, num_clusters: Array,
                            num_items: Array, shape: float, rate: float) -> Array:
    """One update (EW) of a DP concentration `value` given a partition of `num_items` items
    into `num_clusters` clusters, under a Gamma(`shape`, `rate`) prior: a float32 scalar.

    With no items (n = 0) the partition says nothing and the draw is from the prior. Inside a
    sharded sweep pass counts of the whole partition and a key equal on every shard."""
    k_eta, k_pick, k_draw = jax.random.split(key, 3)
    c = jnp.asarray(value, _F32)
    k = jnp.asarray(num_clusters, _F32)
    n = jnp.asarray(num_items, _F32)
    has = n > 0
    log_eta = jnp.where(has, _log_beta(k_eta, c + 1.0, jnp.where(has, n, 1.0)), 0.0)
    rate_post = rate - log_eta
    odds = (shape + k - 1.0) / jnp.where(has, n * rate_post, 1.0)
    first = ~has | (jax.random.uniform(k_pick) * (1.0 + odds) < odds)        # u < pi
    post_shape = jnp.where(first, shape + k, jnp.maximum(shape + k - 1.0, MIN_CONCENTRATION))
    return _bounded(log_gamma(k_draw, post_shape) - jnp.log(rate_post))


def concentration_groups(key: Array, value: Array | float, group_sizes: Array,
                         num_tables: Array, shape: float, rate: float, *,
                         axis_name: str | None = None, shared: Array | None = None) -> Array:
    """One update (TG) of a concentration `value` shared by independent DP(c) partitions:
    group j partitions `group_sizes[j]` items (n_j; empty groups take no part), `num_tables`
    the clusters of all groups together (k, of the whole corpus when sharded); Gamma(`shape`,
    `rate`) prior. Returns a float32 scalar.

    `axis_name` (inside ``shard_map``): `group_sizes` are this shard's groups, drawn from this
    shard's `key`; sum_j s_j and sum_j log w_j are summed over the shards and c is drawn from
    `shared` (default ``shared_key(key, axis_name)``, shard 0's key), equal on every shard.
    Groups that are global (equal on every shard) need neither: pass a key equal on every
    shard and no `axis_name`."""
    if shared is None:
        shared = shared_key(key, axis_name)
    k_w, k_s, _ = jax.random.split(key, 3)
    _, _, k_draw = jax.random.split(shared, 3)
    c = jnp.asarray(value, _F32)
    n = jnp.asarray(group_sizes, _F32)
    has = n > 0
    log_w = _log_beta(k_w, jnp.broadcast_to(c + 1.0, n.shape), jnp.where(has, n, 1.0))
    s = has & (jax.random.uniform(k_s, n.shape) * (n + c) < n)               # u < n / (n + c)
    sums = shard_sum(jnp.stack([jnp.sum(jnp.where(has, log_w, 0.0)),
                                jnp.sum(s, dtype=_F32)]), axis_name)
    post_shape = shape + jnp.asarray(num_tables, _F32) - sums[1]
    return _bounded(log_gamma(k_draw, post_shape) - jnp.log(rate - sums[0]))
