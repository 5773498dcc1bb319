"""LDA's sharded block schedules (``Params.exchange``; ``jaxtopics.distributed``): word rotation,
where each shard holds one word group's rows of n_kw at a time, and the delayed exchange of
word-topic moves every ``sync_every`` blocks, with the moves packed into few int32 arrays."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from ..ops import exchange_others, join_groups, move_counts, rotate, row_group

__all__ = ["rotated_blocks", "delayed_blocks", "pack_moves", "unpack_moves"]


def rotated_blocks(block, carry, groups: int, num_blocks: int, v: int, axis_name: str):
    """A sharded sweep's blocks with word rotation (``Params.exchange="rotate"``, ``ops.rotation``):
    the shard holds the word-topic rows of one word group at a time and draws the blocks of its
    tokens of that group (sub-epoch s: group (shard + s) mod G); after each sub-epoch the groups
    move on and the topic totals' changes are summed over the shards. Every n_kw row is updated
    by one shard at a time, so only n_k (K numbers) is ever stale, by at most a sub-epoch."""
    per = num_blocks // groups
    me = jax.lax.axis_index(axis_name)
    state = carry[0]
    carry = (state._replace(word_topic=row_group(state.word_topic, me, groups)),) + carry[1:]

    def sub_epoch(carry, s):
        before = carry[0].topic
        first = (me + s) % groups * per
        carry, _ = jax.lax.scan(block, carry, first + jnp.arange(per, dtype=jnp.int32))
        st = carry[0]
        st = st._replace(word_topic=rotate(axis_name, st.word_topic, groups),
                         topic=before + jax.lax.psum(st.topic - before, axis_name))
        return (st,) + carry[1:], None

    carry = jax.lax.scan(sub_epoch, carry, jnp.arange(groups, dtype=jnp.int32))[0]
    state = carry[0]
    return (state._replace(word_topic=join_groups(axis_name, state.word_topic, v)),) + carry[1:]


def delayed_blocks(block, carry, xs, sync_every: int, v: int, num_blocks: int, axis_name: str):
    """A sharded sweep's blocks with delayed exchange: E = `sync_every` blocks with local moves
    only (``block`` returns its word-topic moves instead of exchanging them), then the other
    shards' moves of those E blocks in one exchange. Padding blocks to a multiple of E are
    empty (word V, block index B)."""
    e = sync_every
    groups = -(-num_blocks // e)
    fill = groups * e - num_blocks
    fills = (0, v, num_blocks, 0)                 # doc, word, block index, rank
    xs = tuple(jnp.concatenate([x, jnp.full((fill,) + x.shape[1:], fills[i], x.dtype)])
               .reshape((groups, e) + x.shape[1:]) for i, x in enumerate(xs))

    def group(carry, gxs):
        carry, moves = jax.lax.scan(block, carry, gxs)
        # a shard's own moves are applied already: only the other shards' are scattered
        packed = exchange_others(axis_name, *(m.reshape(-1) for m in moves))
        word, old, new, weight = unpack_moves(packed, v, carry[0].topic.shape[0])
        st = carry[0]
        st = st._replace(word_topic=move_counts(st.word_topic, word, old, new, weight),
                         topic=move_counts(st.topic, None, old, new, weight))
        return (st,) + carry[1:], None

    return jax.lax.scan(group, carry, xs)[0]


def pack_moves(word: Array, old: Array, new: Array, k: int) -> tuple[Array, ...]:
    """A block's word-topic moves as few int32 arrays for the exchange: (word, old K + new)
    where K^2 fits in int32, else (word, old, new); a slot without a token has word V."""
    return (word, old * k + new) if k * k < 2**31 else (word, old, new)


def unpack_moves(packed: tuple[Array, ...], v: int, k: int) -> tuple[Array, Array, Array, Array]:
    """(word, old, new, weight) of :func:`pack_moves`' arrays (weight 0 where word = V)."""
    word, *topics = packed
    old, new = (topics[0] // k, topics[0] % k) if len(topics) == 1 else topics
    return word, old, new, (word < v).astype(jnp.int32)
