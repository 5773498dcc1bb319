"""Row groups of a global table that rotate over the shards of a mesh axis.

With G shards, row r of a table [R, ...] is in group r mod G, at local row r div G; a group is a
[ceil(R/G), ...] slice. Shard p starts a sweep holding group p (``row_group``), works G
sub-epochs and after each passes the group it holds to the shard before it (``rotate``): in
sub-epoch s shard p holds group (p + s) mod G, every group is held by exactly one shard at a
time, and after the G-th rotation every shard holds its own group again (``join_groups``
rebuilds the whole table on every shard). A model that draws only rows of the group it holds
(e.g. LDA's word-topic rows of the words of that group) then updates them with no exchange of
moves: G collectives of a group each, instead of one per block (the diagonal word/document
partition of Yan et al. 2009, "Parallel inference for LDA on GPUs"; Nomad-LDA rotates the same way).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from .schedule import round_up

__all__ = ["group_rows", "row_group", "rotate", "join_groups"]


def group_rows(num_rows: int, groups: int) -> int:
    """Rows of one group of a table of `num_rows` rows: ceil(num_rows / groups)."""
    return -(-num_rows // groups)


def row_group(table: Array, group: Array, groups: int) -> Array:
    """Rows group, group + G, group + 2G, ... of `table` [R, ...] as [ceil(R/G), ...] (the last
    rows are zeros where R is not a multiple of G); `group` may be traced."""
    rows = table.shape[0]
    padded = jnp.pad(table, [(0, round_up(rows, groups) - rows)] + [(0, 0)] * (table.ndim - 1))
    return jnp.take(padded.reshape((-1, groups) + table.shape[1:]), group, axis=1)


def rotate(axis_name: str, group: Array, groups: int) -> Array:
    """Every shard's group passed to the shard before it (shard i receives shard i+1's)."""
    return jax.lax.ppermute(group, axis_name, [(i, (i - 1) % groups) for i in range(groups)])


def join_groups(axis_name: str, group: Array, num_rows: int) -> Array:
    """The whole table [num_rows, ...] on every shard, from shard p holding group p."""
    parts = jax.lax.all_gather(group, axis_name)                      # [G, R/G, ...]
    return jnp.swapaxes(parts, 0, 1).reshape((-1,) + group.shape[1:])[:num_rows]
