"""Dirichlet-process building blocks of instantiated-weight samplers (no model names in here).

For a DP whose base measure's weights are instantiated, beta = (beta_1 .. beta_K, beta_u) with
beta_u the mass of the atoms not yet used (Teh, Jordan, Beal & Blei 2006, "Hierarchical
Dirichlet processes", JASA, sec. 5.3, the direct-assignment scheme):

(AN) Table counts (Antoniak 1974). n customers of a CRP(c) sit at m tables with
     m = sum_{r=0}^{n-1} B_r,  B_r ~ Bernoulli(c / (c + r))  independently
     (customer r opens a table with probability c / (c + r)); so a group's table count is drawn
     one customer at a time, given each customer's rank r in its group (`crp_opens`).
(SB) A new atom drawn from the unused mass takes b beta_u of it, b ~ Beta(1, gamma)
     (the size-biased first weight of a DP(gamma) stick): b = 1 - (1 - U)^(1/gamma) for
     U ~ U(0, 1), so log(1 - b) = log(1 - U) / gamma (`stick_log_keep`).
(DW) Given the table counts m_k of the used atoms, (beta_1 .. beta_K, beta_u) ~
     Dirichlet(m_1, .., m_K, gamma), from Gamma variates (`dirichlet_weights`; unused slots 0).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from .sampling import log_gamma

__all__ = ["crp_opens", "stick_log_keep", "dirichlet_weights"]

_F32 = jnp.float32


def crp_opens(u: Array, rank: Array, concentration: Array) -> Array:
    """(AN) Whether each customer opens a table: u < c / (c + r), with u [...] uniforms in
    [0, 1), `rank` r [...] the customer's rank in its group and `concentration` c [...].
    The first customer (r = 0) always opens one, even where c underflowed to 0. Returns bool.

    Args:
        u: uniforms in [0, 1).
        rank: each customer's rank in its group (0, 1, ...).
        concentration: each customer's group's CRP concentration (>= 0).

    Returns:
        bool array: True where the customer opens a table."""
    r = rank.astype(_F32)
    c = jnp.asarray(concentration, _F32)
    return (rank == 0) | (u * (c + r) < c)


def stick_log_keep(u: Array, gamma: Array | float) -> Array:
    """(SB) log(1 - b) of b ~ Beta(1, gamma) from uniforms `u` in [0, 1): the log of the share
    of the unused mass that a new atom leaves unused.

    Args:
        u: uniforms in [0, 1).
        gamma: the DP concentration (> 0).

    Returns:
        float32 array like `u`, <= 0."""
    return jnp.log1p(-jnp.asarray(u, _F32)) / jnp.asarray(gamma, _F32)


def dirichlet_weights(key: Array, counts: Array, gamma: Array | float) -> tuple[Array, Array]:
    """(DW) (beta [K], beta_u) ~ Dirichlet(counts_k for counts_k > 0, gamma); beta_k = 0 where
    counts_k = 0 (an unused slot). float32, summing to 1.

    Args:
        key: a PRNG key (the same on every shard of a sharded sweep: the weights are global).
        counts: [K] int table counts m_k (0: an unused slot).
        gamma: the DP concentration (> 0).

    Returns:
        (beta [K] float32, beta_u float32 scalar)."""
    used = counts > 0
    g = log_gamma(key, jnp.append(jnp.where(used, counts, 1).astype(_F32), jnp.asarray(gamma, _F32)))
    g_k = jnp.where(used, g[:-1], -jnp.inf)
    norm = jnp.logaddexp(jax.scipy.special.logsumexp(g_k), g[-1])
    return jnp.exp(g_k - norm), jnp.exp(g[-1] - norm)
