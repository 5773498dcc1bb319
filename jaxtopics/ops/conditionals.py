"""Full conditionals shared by token-level collapsed samplers (no model names in here).

A token i of word w, in a group g whose topic counts are n_g. (a document in LDA, a
pseudo-document in PTM), has the collapsed full conditional

    p(z_i = k | rest) ∝ (n_gk^-i + alpha) (n_kw^-i + beta) / (n_k^-i + V beta)        (1)

(Griffiths & Steyvers 2004 for LDA; for PTM, Zuo et al. 2016, the same conditional with the
pseudo-document's counts N_l^k in place of the document's, l the document's pseudo-document).
With a topic-word prior that differs per topic (seed words), beta becomes beta_kw and V beta the
topic's prior total sum_w beta_kw.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from .sampling import categorical

__all__ = ["collapsed_topic_draw"]


def collapsed_topic_draw(u: Array, group_rows: Array, word_rows: Array, topic_totals: Array,
                         old: Array, alpha: float, beta: float | Array, num_words: int,
                         exclude_own: bool = True, beta_total: Array | None = None) -> Array:
    """Exact draw from (1) for a chunk of C tokens against fixed counts.

    u [C]: uniforms; group_rows [C, K]: n_g. of each token's group; word_rows [C, K]: n_.w of
    each token's word; topic_totals [K]: n_k; old [C]: each token's current topic, excluded from
    the three counts when `exclude_own` (the counts then include the token at `old`).
    Returns int32 [C]. `beta`: the symmetric prior (a scalar), or the prior rows beta_.w [C, K]
    of each token's word (a per-topic prior), with `beta_total` [K] its sums over the words
    (sum_w beta_kw, in place of V beta).

    Written as (n_gk + alpha - [k=old]) (n_kw + beta - [k=old]) / (n_k + V beta - [k=old]) with
    the two reciprocal rows 1/(n_k + V beta) and 1/(n_k - 1 + V beta) computed once per chunk:
    no per-element division and no one-hot temporaries (25 % faster LDA sweeps at K=50 on
    XLA:CPU).
    """
    a, b = alpha, beta
    if beta_total is None:
        topic = topic_totals.astype(jnp.float32) + num_words * b
    else:
        topic = topic_totals.astype(jnp.float32) + beta_total
    own = (jnp.arange(group_rows.shape[-1])[None, :] == old[:, None]) & exclude_own
    group_factor = group_rows.astype(jnp.float32) + jnp.where(own, a - 1.0, a)
    word_factor = word_rows.astype(jnp.float32) + jnp.where(own, b - 1.0, b)
    inverse_topic = jnp.where(own, 1.0 / (topic - exclude_own), 1.0 / topic)
    return categorical(u, group_factor * word_factor * inverse_topic)
