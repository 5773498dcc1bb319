"""DP-MRM's document views (``jaxtopics.models.dpmrm``, "Kernels" in its docstring): the part of
the global counts a block's documents read, and the block's moves written back.

A token or table of document j can only take a topic owned by one of j's labels (r_jk = 0 for
the others: the conditionals of the module docstring give every other topic weight zero). So a
document's view holds, besides its P private slots, only the columns of its labels' topics: the
active slots each label owns (:func:`label_topics`, recomputed from the global tables at every
block), W per label (:func:`label_width`), R W columns for R label slots. The weights of the
topics left out are exactly zero, so the draws keep their law, and a document step costs
O(R W + P) per token instead of O(C + P) (on Tweet, 89 labels: C = 712 slots against R W = 44).

A label owning more than W active topics overflows the sweep (``SweepInfo.overflow``): the
driver discards it and ``grow`` doubles the topic capacity C, and W with it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from ..ops import count_table, exchange
from .dpmrm import State, _Doc, _Local, _View

__all__ = ["label_width", "label_topics", "document_columns", "gather", "gather_views",
           "write_back"]


def label_width(topic_capacity: int, num_labels: int) -> int:
    """W, the topic columns of each label in a document's view (static, from the shapes):
    min(C, max(32, ceil(4 C / L), C // 16)). With C >= 2x the active topics (``grow``), that is
    8x a label's mean share or more; the C // 16 floor bounds how far a label that owns most
    topics can push C up (at most 8x the room ``grow`` keeps otherwise)."""
    c = topic_capacity
    return min(c, max(32, -(-4 * c // max(num_labels, 1)), c // 16))


def label_topics(state: State, width: int) -> tuple[Array, Array]:
    """([L, width] the active topic slots each label owns, in increasing slot order, padded with
    C; [] the most any label owns). One stable sort of the C slots by owner."""
    c, num_labels = state.topic.shape[0], state.label_tables.shape[0]
    owner = jnp.where(state.topic_tables > 0, state.topic_label, num_labels)
    order = jnp.argsort(owner, stable=True).astype(jnp.int32)
    count = count_table((num_labels + 1,), owner)
    start = jnp.cumsum(count) - count
    j = jnp.arange(width, dtype=jnp.int32)
    at = jnp.minimum(start[:num_labels, None] + j[None, :], c - 1)
    slots = jnp.where(j[None, :] < count[:num_labels, None], order[at], c)
    return slots, jnp.max(count[:num_labels])


def document_columns(slots: Array, docs: _Doc, capacity: int) -> Array:
    """[B, R W] the global topic slots of each document's view columns: the topics of its label
    slots (`slots` from :func:`label_topics`), C = `capacity` on padding."""
    cols = jnp.where(docs.mask[:, :, None], slots[docs.labels], capacity)           # [B, R, W]
    return cols.reshape(cols.shape[0], -1)


def gather_views(state: State, docs: _Doc, private: int, cols: Array | None = None) -> _View:
    """Views of the global counts for a batch of documents: the topic columns `cols` [B, Kv]
    (global slots; C = padding, zero counts), or every slot (None), then `private` empty
    slots."""
    b = docs.length.shape[0]

    def tail(x):
        return jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (private,), x.dtype)], axis=-1)

    if cols is None:
        wt = state.word_topic[docs.words]

        def per_topic(x):
            return jnp.broadcast_to(x, (b,) + x.shape)
    else:
        wt = state.word_topic.at[docs.words[:, :, None], cols[:, None, :]].get(
            mode="fill", fill_value=0)

        def per_topic(x):
            return x.at[cols].get(mode="fill", fill_value=0)
    return _View(tail(wt), tail(per_topic(state.topic)), tail(per_topic(state.topic_tables)),
                 tail(per_topic(state.topic_label)),
                 jnp.broadcast_to(state.label_tables, (b,) + state.label_tables.shape))


def gather(state: State, docs: _Doc, idx: Array, private: int, cols: Array
           ) -> tuple[_Local, _View]:
    """The block's documents' local states (each table's topic as its view column) and views of
    the global counts (columns `cols`, P = `private` private slots)."""
    n = state.table.shape[0]
    tab = jnp.where(docs.inside, state.table[jnp.minimum(docs.pos, n - 1)], 0)
    size = state.table_size[idx]
    # a non-empty table's topic is owned by one of the document's labels: it has a column
    column = jnp.argmax(state.dish[idx][:, :, None] == cols[:, None, :], axis=-1)
    dish = jnp.where(size > 0, column, 0).astype(jnp.int32)
    loc = _Local(tab, size, dish, state.doc_label_tables[idx])
    return loc, gather_views(state, docs, private, cols)


def write_back(state: State, idx: Array, docs: _Doc, cols: Array, old_loc: _Local,
               old_view: _View, loc: _Local, view: _View, axis_name: str | None = None
               ) -> tuple[State, Array, Array]:
    """Apply a block's moves to the global state: the summed count changes of the view's global
    columns (`cols` [B, Kv]), then the private topics each get a free global slot (documents in
    block order, slots in increasing order). Returns (state, tokens whose topic changed,
    overflow: too few free topic slots).

    Sharded (`axis_name`): the block's moves of every shard are exchanged (``ops.exchange``) and
    applied in shard order, then block order, identically on every shard (the copies of the
    global tables stay equal, private topics get the same slots everywhere); the per-document
    tables are this shard's documents' only. `changed` counts this shard's tokens."""
    b, _, cv = view.wt.shape
    c, kv = state.topic.shape[0], cols.shape[1]
    p = cv - kv
    # every document's count changes of its view's columns (private slots: their counts)
    words, cols_all, d_wt, d_nt, d_mt, d_ml, new_tl = exchange(
        axis_name, docs.words, cols, view.wt - old_view.wt, view.nt - old_view.nt,
        view.mt - old_view.mt, view.ml - old_view.ml, view.tl[:, kv:])
    every = words.shape[0]                            # documents of the block over all shards
    word_topic = state.word_topic.at[words[:, :, None], cols_all[:, None, :]].add(
        d_wt[:, :, :kv], mode="drop")
    topic = state.topic.at[cols_all].add(d_nt[:, :kv], mode="drop")
    topic_tables = state.topic_tables.at[cols_all].add(d_mt[:, :kv], mode="drop")
    label_tables = state.label_tables + jnp.sum(d_ml, axis=0)
    live = (d_mt[:, kv:] > 0).reshape(-1)
    free = topic_tables == 0
    free_slots = jnp.nonzero(free, size=every * p, fill_value=c)[0]
    rank = jnp.cumsum(live.astype(jnp.int32)) - 1
    fits = rank < jnp.sum(free)
    target = jnp.where(live & fits, free_slots[jnp.clip(rank, 0, every * p - 1)], c).reshape(every, p)
    overflow = jnp.any(live & ~fits)
    word_topic = word_topic.at[words[:, :, None], target[:, None, :]].add(d_wt[:, :, kv:], mode="drop")
    topic = topic.at[target].add(d_nt[:, kv:], mode="drop")
    topic_tables = topic_tables.at[target].add(d_mt[:, kv:], mode="drop")
    topic_label = state.topic_label.at[target].set(new_tl, mode="drop")
    topic_label = jnp.where(topic_tables > 0, topic_label, 0)
    if axis_name is not None:                          # this shard's documents' rows
        target = jax.lax.dynamic_slice_in_dim(target, jax.lax.axis_index(axis_name) * b, b)
    dish = jnp.where(loc.dish >= kv,
                     jnp.take_along_axis(target, jnp.clip(loc.dish - kv, 0, p - 1), axis=1),
                     jnp.take_along_axis(cols, jnp.clip(loc.dish, 0, kv - 1), axis=1))
    dish = jnp.where(loc.size > 0, dish, 0)
    before = jnp.take_along_axis(state.dish[idx], old_loc.tab, axis=1)
    after = jnp.take_along_axis(dish, loc.tab, axis=1)
    changed = jnp.sum(docs.inside & (before != after), dtype=jnp.int32)
    state = state._replace(
        table=state.table.at[docs.pos].set(loc.tab, mode="drop"),
        dish=state.dish.at[idx].set(dish), table_size=state.table_size.at[idx].set(loc.size),
        doc_label_tables=state.doc_label_tables.at[idx].set(loc.mjr),
        topic_label=topic_label, topic_tables=topic_tables, label_tables=label_tables,
        word_topic=word_topic, topic=topic)
    return state, changed, overflow
