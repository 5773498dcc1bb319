"""One module per model, all with the same shape: Params, State, Data, prepare, init, sweep,
log_joint, estimate, fold_in (see DESIGN.md)."""

from . import hdp, lda

__all__ = ["hdp", "lda"]
