"""One module per model, all with the same shape: Params, State, Data, prepare, init, sweep,
log_joint, estimate, fold_in."""

from . import dmm, dpmm, dpmrm, hdp, lda, ptm, slda

__all__ = ["dmm", "dpmm", "dpmrm", "hdp", "lda", "ptm", "slda"]
