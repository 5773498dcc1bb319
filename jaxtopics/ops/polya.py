"""Log rising factorials and Polya (Dirichlet-multinomial) evidences, in lgamma differences.

x^(n) = x (x+1) ... (x+n-1) = Gamma(x+n) / Gamma(x): multi-token blocks (a sentence, a short
document) move together with probability ratios that are products of rising factorials, and a
product of hundreds of factors underflows in float32; the log form does not.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array
from jax.scipy.special import gammaln

__all__ = ["log_rising_factorial", "dirichlet_multinomial_log_evidence"]


def log_rising_factorial(x: Array, n: Array) -> Array:
    """log x^(n) = lgamma(x + n) - lgamma(x); exactly 0 where n == 0."""
    x = jnp.asarray(x, jnp.float32)
    n = jnp.asarray(n).astype(jnp.float32)
    return jnp.where(n == 0, 0.0, gammaln(x + n) - gammaln(x))


def dirichlet_multinomial_log_evidence(counts: Array, concentration: float | Array) -> Array:
    """Sum over rows of log p(counts_row | Dirichlet(concentration)) for one sequence of draws.

    Per row: lgamma(A) - lgamma(n + A) + sum_k [lgamma(c_k + a_k) - lgamma(a_k)], A = sum_k a_k
    (the collapsed LDA joint, seed 001 eq. for p(Z) and p(W|Z), is two such sums).
    """
    counts = jnp.asarray(counts)
    a = jnp.broadcast_to(jnp.asarray(concentration, jnp.float32), counts.shape[-1:])
    total = counts.sum(-1).astype(jnp.float32)
    per_cell = log_rising_factorial(a, counts).sum(-1)
    return jnp.sum(per_cell - log_rising_factorial(a.sum(), total))
