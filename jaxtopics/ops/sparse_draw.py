"""A sparsity-aware exact draw from the collapsed conditional (1) of ``ops.conditionals``.

For a token of word w in group g (its current topic ``old``, excluded from the counts), write
phi'_kw = (n_kw - [k=old] + beta) / (n_k - [k=old] + V beta). Then (1) splits into two buckets
(Yao, Mimno & McCallum 2009, SparseLDA; Xie et al. 2019, CuLDA_CGS, "S" and "Q"):

    p_k ∝ (n_gk - [k=old]) phi'_kw  +  alpha_k phi'_kw                                   (2)
          ^ S: only the group's topics  ^ Q: every topic, a function of the word

S is summed over the group's *members* other than topic old plus one entry for old,
(n_g,old - [own] + alpha_old) phi'_old,w. The members are either the group's tokens
(sum_{k != old} n_gk phi'_kw = sum over the group's tokens j with z_j != old of phi'_{z_j w}:
no per-group topic list to maintain, LDA's documents, contiguous in corpus order) or the
group's distinct topics with their counts n_gk (:func:`group_topic_lists`, PTM's
pseudo-documents); either way S costs the list's length M, not K. Q differs from the word's own row
Q_w(k) = alpha_k (n_kw + beta) / (n_k + V beta) only at k = old, so Q_w is built once per
distinct word of a block, as sums over G ~ sqrt(K) strided groups of topics (group c holds
topics c, c + G, c + 2G, ...: :func:`word_group_table`), and a token draws (2) in two levels:
one categorical over its M + 1 S-entries (old's alpha_old phi'_old,w moved into S) and the G
group sums of Q_w with topic ``old`` taken out of its group, then, if a group was
picked, one among the S = ceil(K / G) topics of that group. O(M + sqrt(K)) per token plus
O(K) per distinct word, against O(K) per token for ``collapsed_topic_draw``; exact against
the same counts up to float32 rounding. Symmetric beta only (a per-topic beta_kw, seed words,
stays on the dense draw).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .sampling import categorical, chunked_map

__all__ = ["DRAWS", "block_word_lists", "dense_where", "distinct_words", "group_topic_lists",
           "sparse_chunk", "sparse_topic_draw", "sparse_topic_weights", "topic_groups",
           "word_group_table"]

#: the values of a model's ``Params.draw`` (the exact parallel kernel's per-token draw)
DRAWS = ("auto", "dense", "sparse")

#: [rows, K] elements per chunk when the word table is built (1 MiB of float32)
_TABLE_ELEMENTS = 2 ** 18
#: [chunk, entries] float32 elements of the draw's level-1 weights per chunk (1 MiB)
_CHUNK_ELEMENTS = 2 ** 18


def sparse_chunk(chunk_size: int, list_length: int, groups: int) -> int:
    """Tokens per chunk of :func:`sparse_topic_draw`.

    Args:
        chunk_size: the model's bound on tokens per chunk.
        list_length: M, the members per token.
        groups: G, the word table's topic groups.

    Returns:
        At most `chunk_size`, and few enough (at least 64) that a chunk's [chunk, M + 1 + G]
        level-1 weights hold at most 2^18 float32.
    """
    return min(chunk_size, max(64, _CHUNK_ELEMENTS // (list_length + 1 + groups)))


def dense_where(flagged: Array, sparse: Array, dense) -> Array:
    """A chunk's sparse draws with those of the `flagged` tokens (a group longer than the
    members' static length) replaced by the dense draw, run only when one is flagged.

    Args:
        flagged: [C] bool. sparse: [C] the sparse draws. dense: () -> [C] the dense draws.

    Returns:
        [C] int32.
    """
    return jax.lax.cond(jnp.any(flagged), lambda: jnp.where(flagged, dense(), sparse),
                        lambda: sparse)


def topic_groups(num_topics: int) -> tuple[int, int]:
    """(G, S): the K topics dealt into G strided groups of at most S members each.

    Args:
        num_topics: K.

    Returns:
        (G, S) with G = isqrt(K - 1) + 1 and S = ceil(K / G); group c holds topics c + j G, j < S.
    """
    g = math.isqrt(num_topics - 1) + 1 if num_topics > 1 else 1
    return g, -(-num_topics // g)


def distinct_words(word: Array, size: int, fill: int) -> tuple[Array, Array]:
    """The distinct entries of `word` and each entry's place among them.

    Args:
        word: [C] int32 word ids (of one block).
        size: a static bound on the number of distinct ids (exact or larger).
        fill: the id padding the list past the distinct ones.

    Returns:
        (words [size] sorted, slot [C] with ``words[slot] == word``).
    """
    words = jnp.unique(word, size=size, fill_value=fill)
    return words, jnp.searchsorted(words, word).astype(jnp.int32)


def block_word_lists(word_blocks: np.ndarray, fill: int) -> np.ndarray:
    """The distinct words of each block of a fixed block layout (host side, once per corpus):
    the rows of :func:`word_group_table` a block needs, without a sort in every sweep.

    Args:
        word_blocks: [B, C] word ids of each block's tokens, `fill` in padding slots.
        fill: an id above every word id (V).

    Returns:
        int32 [B, U]: each block's distinct words ascending, padded with `fill`; U the most
        distinct words of a block (at least 1).
    """
    ordered = np.sort(np.asarray(word_blocks), axis=1)
    first = np.ones(ordered.shape, bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first &= ordered != fill
    width = max(int(first.sum(axis=1).max(initial=0)), 1)
    out = np.full((ordered.shape[0], width), fill, np.int32)
    rows, cols = np.nonzero(first)
    out[rows, (np.cumsum(first, axis=1) - 1)[rows, cols]] = ordered[rows, cols]
    return out


def group_topic_lists(group_topic: Array, size: int) -> tuple[Array, Array, Array]:
    """Each group's distinct topics with their counts: the members of (2) for groups whose
    tokens are not contiguous (one ``lax.top_k`` over the [G, K] table, ~8 ns per cell on
    XLA:CPU: worth it when a block has many more tokens than the table has groups).

    Args:
        group_topic: [G, K] counts n_gk (any integer dtype).
        size: M, the static length of a list (at most K).

    Returns:
        (topics [G, M] int32, -1 where the count is 0; counts [G, M] int32; overflow [G] bool:
        the group has more than M non-zero topics, so its list is incomplete and its tokens
        need the dense draw).
    """
    counts, topics = jax.lax.top_k(group_topic.astype(jnp.float32), size)
    listed = counts > 0
    overflow = jnp.sum(group_topic > 0, axis=1) > size
    cell = jnp.take_along_axis(group_topic, topics, axis=1).astype(jnp.int32)
    return (jnp.where(listed, topics, -1).astype(jnp.int32), jnp.where(listed, cell, 0), overflow)


def _topic_weights(topic_totals: Array, alpha: Array | float, beta: float | Array,
                   num_words: int) -> tuple[Array, Array]:
    """(alpha_k [K] float32, 1 / (n_k + V beta) [K])."""
    k = topic_totals.shape[0]
    inverse = 1.0 / (topic_totals.astype(jnp.float32) + num_words * beta)
    return jnp.broadcast_to(jnp.asarray(alpha, jnp.float32), (k,)), inverse


def word_group_table(words: Array, word_topic: Array, topic_totals: Array,
                     alpha: Array | float, beta: float | Array, num_words: int) -> Array:
    """Per word, the sums of Q_w(k) = alpha_k (n_kw + beta) / (n_k + V beta) over each strided
    topic group of :func:`topic_groups`: the Q bucket of (2), once per distinct word.

    Args:
        words: [U] rows of `word_topic` (a block's distinct words; out-of-range rows clip).
        word_topic: [V, K] n_kw (any integer dtype).
        topic_totals: [K] n_k.
        alpha: the symmetric alpha or alpha_k [K].
        beta: the symmetric topic-word prior.
        num_words: V.

    Returns:
        float32 [U, G]; built in chunks of rows, so no [U, K] temporary beyond 1 MiB.
    """
    k = topic_totals.shape[0]
    g, s = topic_groups(k)
    a, inverse = _topic_weights(topic_totals, alpha, beta, num_words)
    scale = a * inverse

    def rows(w):
        q = (jnp.take(word_topic, w, axis=0, mode="clip").astype(jnp.float32) + beta) * scale
        total = q[:, :g]
        for j in range(1, s):                 # contiguous column slices: one fused loop
            part = q[:, j * g:(j + 1) * g]
            if part.shape[1] < g:             # the last slice: the first K - (S-1) G groups
                part = jnp.concatenate([part, jnp.zeros((q.shape[0], g - part.shape[1]),
                                                        jnp.float32)], axis=1)
            total = total + part
        return total

    return chunked_map(rows, words, max(8, _TABLE_ELEMENTS // max(k, 1)))


def _buckets(members: Array, own_count: Array, word: Array, slot: Array, old: Array,
             word_topic: Array, topic_totals: Array, table: Array, alpha: Array | float,
             beta: float | Array, num_words: int, exclude_own: bool,
             member_counts: Array | None):
    """The level-1 weights [C, M + 1 + G] of (2) with their topics [C, M + 1] (S entries) and
    the level-2 inputs; see :func:`sparse_topic_draw`."""
    k = topic_totals.shape[0]
    g, s = topic_groups(k)
    a, inverse = _topic_weights(topic_totals, alpha, beta, num_words)
    scale = a * inverse
    old = old.astype(jnp.int32)
    own_inverse = 1.0 / (topic_totals[old].astype(jnp.float32) - 1.0 + num_words * beta)

    # members of topic old (and padding, -1) weigh 0: old's whole S mass is the last entry
    listed = (members >= 0) & (members != old[:, None])
    topics = jnp.maximum(members, 0)
    s_weight = jnp.where(listed, (word_topic[word[:, None], topics].astype(jnp.float32) + beta)
                         * inverse[topics], 0.0)
    if member_counts is not None:
        s_weight = s_weight * member_counts.astype(jnp.float32)
    own = 1.0 if exclude_own else 0.0
    phi_old = (word_topic[word, old].astype(jnp.float32) + beta - own) * (
        own_inverse if exclude_own else inverse[old])
    old_weight = (own_count.astype(jnp.float32) - own + a[old]) * phi_old
    s_weight = jnp.concatenate([s_weight, old_weight[:, None]], axis=1)
    s_topic = jnp.concatenate([topics, old[:, None]], axis=1)

    def group_members(c):                     # [C] group -> its topics [C, S] and valid mask
        topics = c[:, None] + g * jnp.arange(s)[None, :]
        valid = (topics < k) & (topics != old[:, None])      # old's Q share is in S
        return jnp.minimum(topics, k - 1), valid

    def q_weights(c):                         # Q_w at group c's members, topic old excluded
        topics, valid = group_members(c)
        cell = word_topic[word[:, None], topics].astype(jnp.float32)
        return jnp.where(valid, (cell + beta) * scale[topics], 0.0)

    # old's group less old's own Q_w(old) (its share is in S); a group left with no other
    # member (the last G - (K - (S-1) G) groups hold S-1 topics) gets exactly 0
    q_group = table[slot]                                             # [C, G]
    own_group = old % g
    others = (k - 1 - own_group) // g                     # members of old's group besides old
    own_q = (word_topic[word, old].astype(jnp.float32) + beta) * scale[old]
    rest = jnp.where(others > 0, jnp.maximum(table[slot, own_group] - own_q, 0.0), 0.0)
    q_group = jnp.where(jnp.arange(g)[None, :] == own_group[:, None], rest[:, None], q_group)
    return jnp.concatenate([s_weight, q_group], axis=1), s_topic, group_members, q_weights


def sparse_topic_draw(u: Array, members: Array, own_count: Array, word: Array, slot: Array,
                      old: Array, word_topic: Array, topic_totals: Array, table: Array,
                      alpha: Array | float, beta: float | Array, num_words: int,
                      exclude_own: bool = True, member_counts: Array | None = None) -> Array:
    """Exact draw from (1) for a chunk of C tokens, by the split (2).

    Args:
        u: [2, C] uniforms in [0, 1) (level 1, level 2).
        members: [C, M] int32 topics of each token's group's tokens at the counts' state
            (the token itself may be listed or not), -1 for none (padding); entries of topic
            `old` are not read, the others' counts must be n_g. off topic old. A group with
            more than M tokens needs the dense draw. With `member_counts`: each group's
            distinct topics instead (:func:`group_topic_lists`).
        own_count: [C] n_g,old, the group's count at `old` (the token included when
            `exclude_own`).
        word: [C] each token's row of `word_topic`.
        slot: [C] each token's row of `table`.
        old: [C] each token's current topic (excluded from n_kw and n_k when `exclude_own`).
        word_topic: [V, K] n_kw (any integer dtype). topic_totals: [K] n_k.
        table: [U, G] :func:`word_group_table` of the same counts for the tokens' words.
        alpha: the symmetric alpha or alpha_k [K]. beta: the symmetric prior.
        num_words: V.
        exclude_own: whether the counts include the token at `old` (then excluded).
        member_counts: None (each member is one token), or [C, M] the count n_gk of each
            listed topic (members then list each topic at most once).

    Returns:
        int32 [C] topics drawn from (1) (``collapsed_topic_draw``'s law).
    """
    k = topic_totals.shape[0]
    g, _ = topic_groups(k)
    weights, s_topic, group_members, q_weights = _buckets(
        members, own_count, word, slot, old, word_topic, topic_totals, table, alpha, beta,
        num_words, exclude_own, member_counts)
    first = categorical(u[0], weights)
    m1 = s_topic.shape[1]
    group = jnp.clip(first - m1, 0, g - 1)
    topics, _ = group_members(group)
    second = categorical(u[1], q_weights(group))
    in_q = jnp.take_along_axis(topics, second[:, None], 1)[:, 0]
    in_s = jnp.take_along_axis(s_topic, jnp.minimum(first, m1 - 1)[:, None], 1)[:, 0]
    return jnp.where(first < m1, in_s, in_q).astype(jnp.int32)


def sparse_topic_weights(members: Array, own_count: Array, word: Array, slot: Array, old: Array,
                         word_topic: Array, topic_totals: Array, table: Array,
                         alpha: Array | float, beta: float | Array, num_words: int,
                         exclude_own: bool = True, member_counts: Array | None = None) -> Array:
    """The unnormalised law over the K topics that :func:`sparse_topic_draw` draws from (for
    tests: it equals (1) up to a factor per token).

    Args:
        members, own_count, word, slot, old, word_topic, topic_totals, table, alpha, beta,
            num_words, exclude_own, member_counts: as for :func:`sparse_topic_draw`.

    Returns:
        float32 [C, K]: the S entries added at their topics, plus each group's level-1 mass
        spread over its members in proportion to their level-2 weights.
    """
    k = topic_totals.shape[0]
    g, _ = topic_groups(k)
    weights, s_topic, group_members, q_weights = _buckets(
        members, own_count, word, slot, old, word_topic, topic_totals, table, alpha, beta,
        num_words, exclude_own, member_counts)
    m1 = s_topic.shape[1]
    rows = jnp.arange(weights.shape[0])[:, None]
    out = jnp.zeros((weights.shape[0], k), jnp.float32).at[rows, s_topic].add(weights[:, :m1])
    for c in range(g):
        group = jnp.full((weights.shape[0],), c, jnp.int32)
        topics, valid = group_members(group)
        w = q_weights(group)
        share = w / jnp.maximum(jnp.sum(w, axis=1, keepdims=True), 1e-38)
        out = out.at[rows, topics].add(jnp.where(valid, share * weights[:, m1 + c][:, None], 0.0))
    return out
