"""Metropolis-Hastings pieces with O(1) cost per token, independent of K (WarpLDA-style).

A proposal proportional to ``n_gk + smoothing`` over topics k (g = a document, or a word) is drawn
without touching K entries: with one uniform scaled to [0, L_g + K * smoothing), the part below
L_g picks a random member token of group g and proposes its topic (probability n_gk / ...), the
rest proposes a uniform topic (probability K*smoothing / ...). Leaving the moving token out of
its groups makes the proposal independent of the token's own topic (an independence proposal
with the LightLDA cycle acceptance ratios).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from .sampling import uniform_index

__all__ = ["propose_from_members", "mh_accept"]


def propose_from_members(u: Array, start: Array, length: Array, members: Array | None,
                         topics: Array, smoothing: float, num_topics: int,
                         skip: Array | None = None) -> Array:
    """Topic t ~ (n_gt + smoothing) / (L_g + K * smoothing) for each row, from one uniform u.

    `start`, `length`: the group's slice [start, start+length) of `members` (positions into
    `topics`), or directly of `topics` when ``members is None`` (groups stored contiguously).
    `skip`: offset within the group of one member to leave out — the token being moved, so that
    the proposal uses n^-i and does not depend on the token's own topic (otherwise the MH chain
    is not reversible: the proposal would change with the state it moves from).
    """
    n_eff = length if skip is None else length - 1
    n_f = n_eff.astype(jnp.float32)
    x = u * (n_f + num_topics * smoothing)
    from_member = x < n_f
    j = uniform_index(x / jnp.maximum(n_f, 1.0), n_eff)
    if skip is not None:
        j = j + (j >= skip).astype(j.dtype)
    pos = start + j if members is None else members[start + j]
    uniform_topic = uniform_index((x - n_f) / (num_topics * smoothing), num_topics)
    return jnp.where(from_member, topics[pos], uniform_topic).astype(jnp.int32)


def mh_accept(u: Array, ratio: Array) -> Array:
    """Accept with probability min(1, ratio) given u ~ U[0, 1)."""
    return u < ratio
