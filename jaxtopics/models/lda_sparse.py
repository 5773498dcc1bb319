"""LDA's exact parallel kernel with the sparse draw (``Params.draw``; ``ops.sparse_draw``).

A block's tokens draw from (1) against the counts at the block's start, as with the dense
draw, split as (2) of ``ops.sparse_draw`` (Yao, Mimno & McCallum 2009; Xie et al. 2019): the
document bucket is summed over the document's tokens (topic old's entry from n_d,old), read
from z in corpus order (a document's tokens are contiguous there), so no per-document topic
list is maintained; the
word bucket's group sums are built once per block for the block's distinct words (found in
the block, their number bounded by ``Data.block_words``). A document longer than
``MAX_MEMBERS`` tokens draws with the dense draw (a chunk holding one runs both and keeps the
dense draw for those tokens).

"auto" (:func:`uses_sparse`): measured by ``scripts/profile_sparse_draw.py`` on the benchmark
corpus (1M tokens, documents of ~200 tokens; docs/benchmarks.md, 2026-12-05, loaded machine):
whole sweeps, dense time / sparse time 0.25 at K=500, 0.47 at 1000, 0.63 at 2000, 1.06 at 5000
and 1.19 at 10000 on XLA:CPU, whose scalar gathers (the document bucket's ~250 per token)
cost about what ten elements of a dense row do. A token's document bucket is padded to the
corpus's longest document (M, at most ``MAX_MEMBERS``): the sparse cost grows with M, the dense
one with K, and they crossed at K ~ 20 M here (M ~ 250). So "auto" draws sparsely on the CPU
when K >= ``CPU_MIN_TOPICS`` and K >= ``CPU_TOPICS_PER_MEMBER`` M (no document over
``MAX_MEMBERS``); no GPU was measured, so "auto" keeps the dense draw there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..errors import ParameterError
from ..ops import (block_uniforms, chunked_map, dense_where, distinct_words, sparse_chunk,
                   sparse_topic_draw, word_group_table)

#: documents longer than this many tokens draw densely (the members list's static length cap)
MAX_MEMBERS = 1024
#: "auto" picks the sparse draw on XLA:CPU from this K (measured crossover, docs/benchmarks.md)
CPU_MIN_TOPICS = 5000
#: ... and from K >= this many times the longest document's tokens (the padded document bucket)
CPU_TOPICS_PER_MEMBER = 20


def uses_sparse(params, data) -> bool:
    """Whether the exact parallel kernel draws sparsely: ``draw="sparse"``, or "auto" on
    XLA:CPU at K >= ``CPU_MIN_TOPICS`` and K >= ``CPU_TOPICS_PER_MEMBER`` x the longest
    document (none over ``MAX_MEMBERS``); never with seed words or a word-rotation layout.
    Raises ParameterError for ``draw="sparse"`` on a word-rotation shard."""
    if params.sampler != "parallel" or params.mh_steps or params.seed_words:
        return False
    if data.word_groups > 1:
        if params.draw == "sparse":
            raise ParameterError("draw='sparse' reads a document's tokens in corpus order, which "
                                 "a word-rotation shard (exchange='rotate') does not keep: shard "
                                 "with exchange='moves' (the default with draw='sparse'), fit "
                                 "on one device, or use draw='dense'")
        return False
    if params.draw != "auto":
        return params.draw == "sparse"
    longest = data.max_doc_len
    return (jax.default_backend() == "cpu" and 0 < longest <= MAX_MEMBERS
            and params.num_topics >= max(CPU_MIN_TOPICS, CPU_TOPICS_PER_MEMBER * longest))


def block_word_bound(word: np.ndarray) -> int:
    """The most distinct entries in a row of the [B, C] block layout `word` (host side)."""
    if word.size == 0:
        return 1
    ordered = np.sort(word, axis=1)
    return int((1 + np.sum(ordered[:, 1:] != ordered[:, :-1], axis=1)).max())


def _members(data) -> int:
    bound = data.max_doc_len or data.count_bound
    return int(max(1, min(bound, MAX_MEMBERS)))


def block_draw(block_key: Array, doc: Array, word: Array, old: Array, st, data, params, v: int,
               word_rows: int, alpha, beta, dense) -> Array:
    """New topics [C] of a block's tokens (a row of the layout; slots without a token hold word
    `word_rows`, their draws are discarded by the caller), z in corpus order in ``st``.
    `dense(u, doc, word, old)`: the dense draw, for long documents."""
    width = data.word.shape[1]
    n = data.num_tokens
    size = min(data.block_words or width, width)
    words, slot = distinct_words(word, size, word_rows)
    table = word_group_table(words, st.word_topic, st.topic, alpha, beta, v)
    m = _members(data)
    steps = jnp.arange(m)
    long_docs = data.max_doc_len == 0 or data.max_doc_len > m

    def draw(c):
        at, doc_c, word_c, old_c, slot_c = c
        u = block_uniforms(block_key, None, (2, width), positions=jnp.stack([at, width + at]))
        start, length = data.doc_start[doc_c], data.doc_len[doc_c]
        index = start[:, None] + steps[None, :]
        # the document's tokens (its own one too: topic old is read from n_d,old instead)
        members = jnp.where(steps[None, :] < length[:, None], st.z[jnp.minimum(index, n)], -1)
        new = sparse_topic_draw(u, members, st.doc_topic[doc_c, old_c], word_c, slot_c, old_c,
                                st.word_topic, st.topic, table, alpha, beta, v)
        if not long_docs:
            return new
        return dense_where(length > m, new, lambda: dense(u[0], doc_c, word_c, old_c))

    chunk = sparse_chunk(params.chunk_size, m, table.shape[1])
    pieces = -(-width // chunk)
    return chunked_map(draw, (jnp.arange(width), doc, word, old, slot), -(-width // pieces))
