"""Model-agnostic JAX primitives shared by every sampler (no model names in here)."""

from .conditionals import collapsed_topic_draw
from .counts import (
    count_table,
    exchange,
    move_counts,
    move_rows,
    require_parallel,
    shard_prefix,
    shard_sum,
    shared_key,
    sharded_sweep,
    table_cells,
)
from .mh import mh_accept, propose_from_members
from .polya import (
    block_log_predictive,
    dirichlet_multinomial_log_evidence,
    log_rising_factorial,
    repeat_ranks,
    token_log_predictive,
)
from .sampling import (
    block_uniforms,
    categorical,
    categorical_logits,
    chunked_map,
    log_dirichlet,
    uniform_index,
)
from .schedule import (
    LANE_MULTIPLE,
    from_strided,
    grouped_counts,
    pad_array,
    pad_blocks,
    round_up,
    strided_blocks,
    strided_width,
    to_strided,
)

__all__ = [
    "LANE_MULTIPLE",
    "block_log_predictive",
    "block_uniforms",
    "categorical",
    "categorical_logits",
    "chunked_map",
    "collapsed_topic_draw",
    "count_table",
    "dirichlet_multinomial_log_evidence",
    "exchange",
    "from_strided",
    "grouped_counts",
    "log_dirichlet",
    "log_rising_factorial",
    "mh_accept",
    "move_counts",
    "move_rows",
    "require_parallel",
    "shard_prefix",
    "shard_sum",
    "shared_key",
    "sharded_sweep",
    "pad_array",
    "pad_blocks",
    "round_up",
    "propose_from_members",
    "repeat_ranks",
    "strided_blocks",
    "strided_width",
    "table_cells",
    "to_strided",
    "token_log_predictive",
    "uniform_index",
]
