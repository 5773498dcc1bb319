"""Block partitions for parallel sweeps (host-side numpy; the result is a static layout)."""

from __future__ import annotations

import numpy as np

__all__ = ["strided_blocks"]


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
