"""Metropolis-Hastings pieces with O(1) cost per token, independent of K (WarpLDA-style).

A proposal proportional to ``n_gk + smoothing`` over topics k (g = a document, or a word) is drawn
without touching K entries: with one uniform scaled to [0, L_g + K * smoothing), the part below
L_g picks a random member token of group g and proposes its topic (probability n_gk / ...), the
rest proposes a uniform topic (probability K*smoothing / ...).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from .sampling import uniform_index

__all__ = ["propose_from_members", "mh_accept"]


def propose_from_members(u: Array, start: Array, length: Array, members: Array | None,
                         topics: Array, smoothing: float, num_topics: int) -> Array:
    """Topic t ~ (n_gt + smoothing) / (L_g + K * smoothing) for each row, from one uniform u.

    `start`, `length`: the group's slice [start, start+length) of `members` (positions into
    `topics`), or directly of `topics` when ``members is None`` (groups stored contiguously).
    """
    length_f = length.astype(jnp.float32)
    x = u * (length_f + num_topics * smoothing)
    from_member = x < length_f
    slot = start + uniform_index(x / jnp.maximum(length_f, 1.0), length)
    pos = slot if members is None else members[slot]
    member_topic = topics[pos]
    uniform_topic = uniform_index((x - length_f) / (num_topics * smoothing), num_topics)
    return jnp.where(from_member, member_topic, uniform_topic).astype(jnp.int32)


def mh_accept(u: Array, ratio: Array) -> Array:
    """Accept with probability min(1, ratio) given u ~ U[0, 1)."""
    return u < ratio
