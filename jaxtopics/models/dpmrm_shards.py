"""DP-MRM's sharding hooks (``jaxtopics.distributed``; ``jaxtopics.models.dpmrm``, "Sharded" in
its docstring): which settings a sharded sweep accepts, the sizes of a shard's layout, the layout
itself (padded) and a shard's count tables recounted from its latents (``base.Shardable``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..ops import pad_array, pad_blocks, require_parallel
from .dpmrm import Data, Params, State, _sizes, state_from_assignments

__all__ = ["check_shard_params", "shard_sizes", "pad_shard", "recount_shard"]


#: sharded sweeps run the parallel kernel
check_shard_params = require_parallel


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: tokens, documents, distinct words and label slots per
    document, longest document, and the blocks' [B, C] shape."""
    n, d, _, _, r = _sizes(data)
    b, c = data.blocks.shape
    return {"tokens": n, "docs": d, "width": data.doc_words.shape[1], "label_slots": r,
            "longest": data.token_offsets.shape[0], "blocks": b, "block_width": c}


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes``: padding tokens (n..n_max-1) belong to the dummy
    document, which moves to row d_max; padding documents (d..d_max-1) have no tokens and no
    labels and are in no block; word and label slots widen (word 0, label 0, masked)."""
    n, d, _, _, _ = _sizes(data)
    n_max, d_max = sizes["tokens"], sizes["docs"]
    rows = (d_max + 1,)

    def docs(a, width=None, fill=0):
        return pad_array(a, rows + (() if width is None else (sizes[width],)), fill, rows=d)

    label_mask = docs(data.label_mask, "label_slots", False)
    label_mask[d_max, 0] = True                          # the dummy document: label 0, no tokens
    blocks, valid = pad_blocks(data.blocks, data.valid, d, d_max, sizes["blocks"], sizes["block_width"])
    return Data(
        word=pad_array(data.word, (n_max,)), doc=pad_array(data.doc, (n_max,), d_max),
        slot=pad_array(data.slot, (n_max,)), doc_start=docs(data.doc_start, fill=n),
        doc_len=docs(data.doc_len), doc_words=docs(data.doc_words, "width"),
        doc_labels=docs(data.doc_labels, "label_slots"), label_mask=label_mask,
        label_docs=np.asarray(data.label_docs), word_freq=np.asarray(data.word_freq),
        token_offsets=np.arange(sizes["longest"], dtype=np.int32), blocks=blocks, valid=valid)


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from its latents, padding tokens (>= sizes["tokens"]) counted
    nowhere; its topic_label is the owner of the slots its own tables use (0 elsewhere:
    ``SHARDING.max_fields``); alpha and gamma are the chain's (``SHARDING.replicated``)."""
    real = jnp.arange(data.word.shape[0]) < sizes["tokens"]
    return state_from_assignments(jnp.where(real, state.table, 0), state.dish, state.topic_label,
                                  data, real, state.alpha, state.gamma)
