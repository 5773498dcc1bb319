"""Block partitions for parallel sweeps (host-side numpy; the result is a static layout), and the
strided block layout of per-token arrays (numpy or JAX).

Strided blocks deal items round-robin: with B blocks, item t is in block t mod B, at position
t div B. A per-token array then *is* its block layout once reshaped: ``x.reshape(C, B).T`` is
[B, C] with row b = block b (``to_strided``), and ``from_strided`` is the inverse; neither needs
an index array, so a model can keep its per-token arrays in block order only.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = ["strided_blocks", "grouped_counts", "pad_array", "pad_blocks", "to_strided",
           "strided_from_chunks", "strided_segments", "from_strided", "strided_width", "round_up", "LANE_MULTIPLE"]


def strided_width(num_items: int, num_blocks: int) -> int:
    """C, the width of the strided layout of `num_items` items in `num_blocks` blocks: the
    smallest that holds them, rounded up to a multiple of ``LANE_MULTIPLE`` once that pads by at
    most 1/16 (a block's elementwise loops then run whole SIMD vectors: on XLA:CPU the per-block
    Threefry uniforms of an odd width ran 12x slower, and whole LDA sweeps ~6 % slower)."""
    width = max(1, -(-num_items // num_blocks))
    return round_up(width, LANE_MULTIPLE) if width >= 16 * LANE_MULTIPLE else width


#: per-block array widths are multiples of this (16 float32 = one AVX-512 vector)
LANE_MULTIPLE = 16


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of `multiple` >= n."""
    return -(-n // multiple) * multiple


def to_strided(x, num_blocks: int, fill=0, width: int | None = None):
    """[B, C] strided block layout of the per-item array `x` [N, ...]: slot (b, c) holds
    x[b + B c]; slots past the end (b + B c >= N) hold `fill`. `width`: C (default the
    smallest, ``strided_width``; larger pads more). numpy in, numpy out (a reshape and a
    transpose); otherwise jax.numpy, as a gather from iota indices, which XLA writes in one pass
    (its reshape-transpose of a padded copy went through one more [N] buffer). The numpy result
    is C-contiguous and written in place: no other [N] buffer exists on the way (host memory)."""
    n = x.shape[0]
    c = strided_width(n, num_blocks) if width is None else width
    if not isinstance(x, np.ndarray):
        index = (jnp.arange(num_blocks, dtype=jnp.int32)[:, None]
                 + num_blocks * jnp.arange(c, dtype=jnp.int32)[None, :])
        return jnp.take(x, index, axis=0, mode="fill", fill_value=fill)
    return strided_from_chunks(lambda lo, hi: x[lo:hi], n, num_blocks, x.dtype, fill, c,
                               x.shape[1:])


def strided_from_chunks(items, num_items: int, num_blocks: int, dtype, fill=0,
                        width: int | None = None, item_shape: tuple = (), chunk: int = 1 << 20):
    """``to_strided`` of an [N, ...] array given a piece at a time: ``items(lo, hi)`` returns
    items lo..hi-1. The [B, C] result (numpy, C-contiguous) is the only buffer of N items; a
    piece is about `chunk` items (e.g. each token's document from the document offsets,
    `strided_segments`, without an [N] array of them)."""
    c = strided_width(num_items, num_blocks) if width is None else width
    out = np.full((num_blocks, c) + tuple(item_shape), fill, dtype)
    by_column = np.swapaxes(out, 0, 1)       # [C, B, ...], a view: slot (b, c) holds item b + B c
    rows = max(1, chunk // num_blocks)       # whole columns of the layout per piece
    for r in range(0, -(-num_items // num_blocks), rows):
        lo, hi = r * num_blocks, min(num_items, (r + rows) * num_blocks)
        piece = np.asarray(items(lo, hi), dtype)
        full = (hi - lo) // num_blocks
        by_column[r:r + full] = piece[:full * num_blocks].reshape((full, num_blocks) + piece.shape[1:])
        if hi - lo > full * num_blocks:
            by_column[r + full, :hi - lo - full * num_blocks] = piece[full * num_blocks:]
    return out


def strided_segments(offsets: np.ndarray, num_blocks: int, fill=0, width: int | None = None):
    """int32 [B, C]: the strided layout of each item's segment s (the items offsets[s] ..
    offsets[s+1]-1; e.g. each token's document), built from the offsets a piece at a time."""
    offsets = np.asarray(offsets, np.int64)
    return strided_from_chunks(
        lambda lo, hi: np.searchsorted(offsets, np.arange(lo, hi), side="right") - 1,
        int(offsets[-1]), num_blocks, np.int32, fill, width)


def from_strided(blocked, num_items: int):
    """The inverse of ``to_strided``: the first `num_items` items [N, ...] in item order."""
    xp = np if isinstance(blocked, np.ndarray) else jnp
    return xp.swapaxes(blocked, 0, 1).reshape((-1,) + blocked.shape[2:])[:num_items]


def strided_blocks(num_items: int, num_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Split items 0..n-1 into `num_blocks` interleaved blocks: block b holds b, b+B, b+2B, ...

    With items sorted by document this spreads every document (and every frequent word) evenly
    over the blocks, so the tokens updated together in one block rarely share a document — the
    staleness that makes a fully synchronous sweep worse than exact Gibbs. Returns
    ``(index [B, C] int32, valid [B, C] bool)``; padding slots hold index ``num_items``.
    """
    if num_items < 1 or num_blocks < 1:
        raise ValueError("strided_blocks needs num_items >= 1 and num_blocks >= 1, "
                         f"got {num_items}, {num_blocks}")
    b = min(num_blocks, num_items)
    c = -(-num_items // b)
    index = np.arange(b * c, dtype=np.int64).reshape(c, b).T
    valid = index < num_items
    return np.where(valid, index, num_items).astype(np.int32), valid


def grouped_counts(item_ids: np.ndarray, group_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct items of each group and their multiplicities, padded to the widest group.

    `item_ids` [N]: e.g. word ids in corpus order; `group_offsets` [G+1]: where each group
    (document, sentence) starts, then N. Returns ``(items [G, M] int32, counts [G, M] int32)``
    with M the largest number of distinct items in a group; padding slots hold item 0 with count
    0, so ``ops.block_log_predictive`` ignores them. Host-side numpy, O(N log N).
    """
    item_ids = np.asarray(item_ids, np.int64)
    offsets = np.asarray(group_offsets, np.int64)
    g = offsets.shape[0] - 1
    group = np.repeat(np.arange(g), np.diff(offsets))
    if item_ids.shape[0] == 0:
        return np.zeros((g, 1), np.int32), np.zeros((g, 1), np.int32)
    pairs, counts = np.unique(np.stack([group, item_ids]), axis=1, return_counts=True)
    per_group = np.bincount(pairs[0], minlength=g)
    m = max(int(per_group.max()), 1)
    starts = np.concatenate([[0], np.cumsum(per_group)[:-1]])
    slot = np.arange(pairs.shape[1]) - starts[pairs[0]]
    items = np.zeros((g, m), np.int32)
    mult = np.zeros((g, m), np.int32)
    items[pairs[0], slot] = pairs[1]
    mult[pairs[0], slot] = counts
    return items, mult


def pad_array(a, shape: tuple[int, ...], fill=0, rows: int | None = None) -> np.ndarray:
    """`a` copied into the top-left corner of a new array of `shape` filled with `fill` (a shard
    laid out as the largest shard: ``jaxtopics.distributed``). `rows`: copy only the first
    `rows` rows (e.g. the real tokens before a dummy slot, which then moves to the end)."""
    a = np.asarray(a)
    out = np.full(shape, fill, a.dtype)
    src = a if rows is None else a[:rows]
    out[tuple(slice(0, n) for n in src.shape)] = src
    return out


def pad_blocks(blocks, valid, num_items: int, new_items: int, num_blocks: int,
               width: int) -> tuple[np.ndarray, np.ndarray]:
    """A ``strided_blocks`` layout of `num_items` items re-padded for `new_items` items:
    padding slots (index >= num_items) point at `new_items` and the layout grows to
    [num_blocks, width] with padding slots (valid False)."""
    blocks = np.asarray(blocks)
    blocks = np.where(blocks >= num_items, new_items, blocks).astype(np.int32)
    return (pad_array(blocks, (num_blocks, width), new_items),
            pad_array(np.asarray(valid), (num_blocks, width), False))
