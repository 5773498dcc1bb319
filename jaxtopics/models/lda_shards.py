"""LDA's sharding hooks (``jaxtopics.distributed``): which settings a sharded sweep accepts, the
sizes of a shard's layout, the layout itself (padded, and laid out by word group for word
rotation) and a shard's count tables recounted from its latents (``base.Shardable``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..ops import from_strided, group_rows, pad_array, strided_width, to_strided
from .lda import Data, Params, State, _sizes, state_from_assignments

__all__ = ["check_shard_params", "shard_sizes", "pad_shard", "recount_shard"]




def check_shard_params(params: Params) -> None:
    """Sharded sweeps run the parallel kernel with exact draws: MH proposals would draw from a
    shard's own tokens, not from the whole corpus."""
    if params.sampler != "parallel" or params.mh_steps != 0:
        raise ParameterError("sharded sweeps (devices > 1) run the 'parallel' kernel with exact draws "
                             f"(mh_steps=0), got sampler={params.sampler!r}, mh_steps={params.mh_steps}")


def shard_sizes(data: Data, num_shards: int) -> dict[str, int]:
    """The sizes of a shard's layout: tokens, documents, the block layout's width, the bound
    on its count cells (summed over the shards: ``SHARDING.summed_sizes``) and, for word rotation
    over `num_shards` > 1 shards (``Data.rotate_words``), the word groups and the width of the
    widest group's blocks."""
    n, d, v = _sizes(data)
    sizes = {"tokens": n, "docs": d, "block_width": data.word.shape[1],
             "count_bound": data.count_bound, "word_groups": 1, "group_width": 0,
             # the sparse draw's sizes (the padding word may add one distinct word to a block)
             "max_doc_len": data.max_doc_len, "block_words": data.block_words + 1}
    if data.rotate_words and num_shards > 1:
        word = np.asarray(from_strided(np.asarray(data.word), n))
        per = group_rows(data.word.shape[0], num_shards)          # blocks per word group
        sizes["word_groups"] = num_shards
        sizes["group_width"] = strided_width(
            int(np.bincount(word % num_shards, minlength=num_shards).max()), per)
    return sizes


def pad_shard(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data padded to ``sizes`` (tokens, docs, block_width): padding tokens (n..n_max-1)
    and the slots past them hold word V (no token), padding documents are empty. Sharded sweeps
    draw exactly, so the MH index is not carried."""
    if sizes["word_groups"] > 1:
        return _rotation_layout(data, sizes)
    n_max, d_max, width = sizes["tokens"], sizes["docs"], sizes["block_width"]
    b, v = data.word.shape[0], data.word_start.shape[0]
    return Data(word=pad_array(data.word, (b, width), fill=v), doc=pad_array(data.doc, (b, width)),
                doc_start=pad_array(data.doc_start, (d_max,)), doc_len=pad_array(data.doc_len, (d_max,)),
                word_start=np.asarray(data.word_start), word_len=np.asarray(data.word_len),
                word_members=None, word_rank=None, num_tokens=n_max,
                count_bound=sizes["count_bound"], max_doc_len=sizes.get("max_doc_len", 0),
                block_words=sizes.get("block_words", 0))


def _rotation_layout(data: Data, sizes: dict[str, int]) -> Data:
    """A shard's Data laid out for word rotation (see ``Data.word_groups``), padded to `sizes`:
    the tokens of word group q (word mod G = q), in corpus order, dealt round-robin into the
    blocks q P' .. (q+1) P' - 1."""
    groups, n_max, width = sizes["word_groups"], sizes["tokens"], sizes["group_width"]
    n, v = data.num_tokens, data.word_start.shape[0]
    per = group_rows(data.word.shape[0], groups)                  # blocks per word group
    word = from_strided(np.asarray(data.word), n)
    doc = from_strided(np.asarray(data.doc), n)
    tokens = [np.flatnonzero(word % groups == q).astype(np.int32) for q in range(groups)]

    def laid_out(values, fill):
        return np.concatenate([to_strided(values(t), per, fill=fill, width=width) for t in tokens])
    return Data(word=laid_out(lambda t: word[t] // groups, group_rows(v, groups)),
                doc=laid_out(lambda t: doc[t], 0), order=laid_out(lambda t: t, n_max),
                doc_start=pad_array(data.doc_start, (sizes["docs"],)),
                doc_len=pad_array(data.doc_len, (sizes["docs"],)),
                word_start=np.asarray(data.word_start), word_len=np.asarray(data.word_len),
                word_members=None, word_rank=None, num_tokens=n_max,
                count_bound=sizes["count_bound"], word_groups=groups, rotate_words=True)


def recount_shard(state: State, data: Data, params: Params, sizes: dict) -> State:
    """A shard's tables recounted from z, padding tokens (slots >= sizes["tokens"]) set to 0 and
    counted nowhere (a word-rotation layout holds no padding tokens); word_topic and topic are
    this shard's part of the global tables."""
    if data.word_groups > 1:
        new = state_from_assignments(state.z, data, params)
    else:
        real = jnp.arange(data.num_tokens) < sizes["tokens"]
        new = state_from_assignments(jnp.where(real, state.z[:-1], 0), data, params)
    return new._replace(alpha=state.alpha, beta=state.beta)


# --------------------------------------------------------------------------------------------
# read-outs


