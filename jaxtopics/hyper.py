"""Dirichlet priors learned from count tables: the Polya (Dirichlet-multinomial) evidence maximised.

A table of counts holds G groups (documents, or topics), each a sequence of draws over C cells
(topics, or words) from a Dirichlet-multinomial with concentration a (a scalar: symmetric, the
same a_c for every cell; or a vector [C]: asymmetric). Its log evidence is

    L(a) = sum_g [ lgamma(A) - lgamma(n_g + A) + sum_c (lgamma(n_gc + a_c) - lgamma(a_c)) ]   (1)

with A = sum_c a_c (C a when symmetric) and n_g the group's total (``ops.dirichlet_multinomial_
log_evidence``: the collapsed LDA joint is two such sums). A weak Gamma(shape s, rate r) prior on
each a_c (``PRIOR_SHAPE``, ``PRIOR_RATE``) is added, so what is maximised is the MAP objective

    F(a) = L(a) + sum_c [(s - 1) log a_c - r a_c]                                          (2)

(one prior term for a symmetric a). Writing D(n, x) = psi(x + n) - psi(x), its stationary points
satisfy Minka's fixed point (Minka 2000, "Estimating a Dirichlet distribution", eq. 55 for Polya
data; with the prior as in Wallach 2008, sec. 2.3, and Mallet's ``Dirichlet.learnParameters``):

    asymmetric:  a_c <- (a_c sum_g D(n_gc, a_c) + s - 1) / (sum_g D(n_g, A) + r)          (3)
    symmetric:   a   <- (a sum_gc D(n_gc, a) + s - 1) / (C sum_g D(n_g, C a) + r)          (4)

:func:`minka` iterates (3)/(4); :func:`optax_maximize` maximises the same F over log a with
``optax.lbfgs`` (its gradient in closed form, the numerators minus denominators of (3)/(4)); both
stop when one fixed-point step would move every a_c by less than `tol` relative, so they agree on
the optimum to about `tol` / (1 - the fixed point's contraction rate). Both are pure JAX
functions (jit, vmap, ``shard_map``): with a table split over shards by groups, `reduce` sums each
group statistic over the shards (``lax.psum`` over the mesh axis).

The guard against collapse on small corpora: the Gamma(s, r) prior. s - 1 acts as a pseudo-count
in the numerator of (3), so a cell no group uses keeps a_c >= (s - 1) / (sum_g D(n_g, A) + r)
(on a 5-document corpus ~0.05, where Mallet's shape 1.001 leaves ~1e-4, from which a topic
never recovers: ``tests/test_hyper.py``), and r bounds a_c where the counts are under-dispersed (where the maximum
likelihood estimate is infinite: e.g. a random initial state). On a corpus of thousands of
documents both are worth well under 0.1 % of the estimate. Values are kept in [FLOOR, CEILING]
(float32 headroom); a step that is not finite keeps the previous value. The statistics are
those of one state (not averaged over the sweeps since the last update, as Mallet's histograms
are): a large corpus's counts vary little from sweep to sweep, and on a small one the prior is
the guard.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array
from jax.scipy.special import digamma

from .ops import dirichlet_multinomial_log_evidence, log_rising_factorial

__all__ = ["HyperFit", "OPTIMIZERS", "PRIOR_SHAPE", "PRIOR_RATE", "FLOOR", "CEILING",
           "digamma_rise", "log_evidence", "minka", "optax_maximize", "maximize"]

#: the optimisers of :func:`maximize`: "minka" (the default: a fixed point, no step size, one pass
#: over the table per step) and "optax" (L-BFGS with a line search on log a)
OPTIMIZERS = ("minka", "optax")
#: Gamma(shape, rate) prior on every concentration: one pseudo-count (s - 1 = 1) and rate 1
PRIOR_SHAPE = 2.0
PRIOR_RATE = 1.0
#: learned concentrations are kept in [FLOOR, CEILING]
FLOOR = 1e-6
CEILING = 1e6

Reduce = Callable[[Array], Array] | None


class HyperFit(NamedTuple):
    """A fit's result.

    Attributes:
        value: the concentration, shaped as the start: [] or [C], float32.
        iterations: int32: fixed-point steps or L-BFGS updates.
        residual: float32: the largest relative move one more fixed-point step would make;
            < tol when it converged."""

    value: Array
    iterations: Array
    residual: Array


def _prior(shape: float | None, rate: float | None) -> tuple[float, float]:
    """The Gamma prior's (shape, rate): ``PRIOR_SHAPE`` / ``PRIOR_RATE`` where not given."""
    return (PRIOR_SHAPE if shape is None else shape), (PRIOR_RATE if rate is None else rate)


def _summed(reduce: Reduce, x: Array) -> Array:
    return x if reduce is None else reduce(x)


def digamma_rise(x: Array, n: Array) -> Array:
    """D(n, x) = psi(x + n) - psi(x), the derivative in x of log x^(n); exactly 0 where n == 0.

    For x >= 10 the difference of two float32 digammas cancels (at x = 10^4, n = 1 it keeps ~2
    significant digits), so the asymptotic series is differenced analytically:
    log1p(n/x) + n / (2 x (x+n)) + (1/x^2 - 1/(x+n)^2) / 12 - (1/x^4 - 1/(x+n)^4) / 120
    (the next term is O(x^-6) / 252).

    Args:
        x: positive reals (broadcast against `n`).
        n: non-negative counts.

    Returns:
        float32 D(n, x), broadcast.

    Example:
        >>> from jaxtopics.hyper import digamma_rise
        >>> round(float(digamma_rise(1.0, 2)), 4)     # 1/1 + 1/2
        1.5
    """
    x = jnp.asarray(x, jnp.float32)
    n = jnp.asarray(n).astype(jnp.float32)
    big = x >= 10.0
    xs = jnp.where(big, x, 10.0)
    xn = xs + n
    series = (jnp.log1p(n / xs) + n / (2.0 * xs * xn) + (1.0 / xs ** 2 - 1.0 / xn ** 2) / 12.0
              - (1.0 / xs ** 4 - 1.0 / xn ** 4) / 120.0)
    direct = digamma(x + n) - digamma(x)
    return jnp.where(n == 0, 0.0, jnp.where(big, series, direct))


def _cells_axis(counts: Array, axis: int) -> int:
    return axis % counts.ndim


def _statistics(a: Array, counts: Array, axis: int, reduce: Reduce) -> tuple[Array, Array, int]:
    """(cells, groups, C) of (3)/(4): cells = sum_g D(n_gc, a_c) per cell [C] (asymmetric) or
    summed over the cells too (symmetric); groups = sum_g D(n_g, A); C cells per group."""
    ax = _cells_axis(counts, axis)
    size = counts.shape[ax]
    totals = counts.sum(ax, dtype=jnp.int32)
    if a.ndim == 0:
        cells = digamma_rise(a, counts).sum()
        total = size * a
    else:
        groups_axes = tuple(i for i in range(counts.ndim) if i != ax)
        shape = [1] * counts.ndim
        shape[ax] = size
        cells = digamma_rise(a.reshape(shape), counts).sum(groups_axes)
        total = a.sum()
    groups = digamma_rise(total, totals).sum()
    return _summed(reduce, cells), _summed(reduce, groups), size


def _fixed_point_step(a: Array, counts: Array, axis: int, reduce: Reduce, shape: float,
                      rate: float) -> tuple[Array, Array]:
    """(a after one step of (3)/(4), the step's largest relative move)."""
    cells, groups, size = _statistics(a, counts, axis, reduce)
    scale = size if a.ndim == 0 else 1
    new = (a * cells + (shape - 1.0)) / (scale * groups + rate)
    new = jnp.where(jnp.isfinite(new), jnp.clip(new, FLOOR, CEILING), a)
    return new, jnp.max(jnp.abs(new - a) / a)


def log_evidence(value: Array | float, counts: Array, *, axis: int = -1, reduce: Reduce = None,
                 shape: float | None = None, rate: float | None = None) -> Array:
    """F(a) of (2): the log evidence (1) of `counts` under Dirichlet(`value`) plus the Gamma
    prior.

    Args:
        value: a scalar concentration (symmetric) or a vector [C] (asymmetric).
        counts: the integer count table (e.g. doc-topic [D, K]).
        axis: the axis a group's cells lie along (-1: rows are groups, e.g. doc-topic [D, K];
            0: columns are groups, e.g. a word-major word-topic table [V, K]); a vector
            `value` runs along it.
        reduce: sums a group statistic over shards (``lax.psum`` over the mesh axis inside
            ``shard_map``); None: the table is whole.
        shape, rate: the Gamma prior (None: ``PRIOR_SHAPE``, ``PRIOR_RATE``; ``shape=1,
            rate=0``: the evidence alone).

    Returns:
        float32 [] F(a).

    Example:
        >>> import numpy as np
        >>> from jaxtopics import hyper
        >>> counts = np.array([[8, 0, 0], [0, 7, 1], [0, 0, 9], [6, 2, 0]] * 25)
        >>> bool(hyper.log_evidence(0.3, counts) > hyper.log_evidence(1.0, counts))
        True
    """
    shape, rate = _prior(shape, rate)
    a = jnp.asarray(value, jnp.float32)
    evidence = _summed(reduce, dirichlet_multinomial_log_evidence(counts, a, axis=axis))
    return evidence + jnp.sum((shape - 1.0) * jnp.log(a) - rate * a)


def _gain(a: Array, a0: Array, counts: Array, axis: int, reduce: Reduce, shape: float,
          rate: float) -> Array:
    """F(a) - F(a0) of (2), in terms that are small where a is near a0: with h = a - a0, a cell's
    log a^(n) - log a0^(n) = [lgamma(a0 + n + h) - lgamma(a0 + n)] - [lgamma(a0 + h) - lgamma(a0)],
    each bracket ``ops.log_rising_factorial`` with a real step h (Stirling differenced
    analytically from 10 on). F itself, a sum of ~10^5 lgamma differences of magnitude ~10^2, is
    known in float32 to about one unit: more than its rise in a late L-BFGS step, which a line
    search must see; this form is known to ~10^-4 there."""
    ax = _cells_axis(counts, axis)
    size = counts.shape[ax]
    totals = counts.sum(ax, dtype=jnp.int32)
    if a.ndim == 0:
        cell_a0, h, total0, big_h = a0, a - a0, size * a0, size * (a - a0)
    else:
        shape_c = [1] * counts.ndim
        shape_c[ax] = size
        cell_a0, h = a0.reshape(shape_c), (a - a0).reshape(shape_c)
        total0, big_h = a0.sum(), (a - a0).sum()

    def change(x0, step, n):
        n = n.astype(jnp.float32)
        moved = log_rising_factorial(x0 + n, step) - log_rising_factorial(x0, step)
        return jnp.where(n > 0, moved, 0.0)

    cells = change(cell_a0, h, counts).sum()
    groups = change(total0, big_h, totals).sum()
    prior = jnp.sum((shape - 1.0) * (jnp.log(a) - jnp.log(a0)) - rate * (a - a0))
    return _summed(reduce, cells - groups) + prior


def minka(value: Array | float, counts: Array, *, axis: int = -1, reduce: Reduce = None,
          tol: float = 1e-5, max_iter: int = 500, shape: float | None = None,
          rate: float | None = None) -> HyperFit:
    """Maximise (2) by Minka's fixed point (3) (a vector `value` [C]) or (4) (a scalar), from
    `value`, until a step moves every a_c by less than `tol` relative (or `max_iter` steps).
    Each step is one pass over `counts`.

    Args:
        value: the start, a scalar concentration (symmetric) or a vector [C] (asymmetric).
        counts: the integer count table (e.g. doc-topic [D, K]).
        axis: the axis a group's cells lie along (-1: rows are groups, e.g. doc-topic [D, K];
            0: columns are groups, e.g. a word-major word-topic table [V, K]); a vector
            `value` runs along it.
        reduce: sums a group statistic over shards (``lax.psum`` over the mesh axis inside
            ``shard_map``); None: the table is whole.
        tol: the relative move that ends the iteration.
        max_iter: the most steps.
        shape, rate: the Gamma prior (None: ``PRIOR_SHAPE``, ``PRIOR_RATE``).

    Returns:
        A :class:`HyperFit`.

    Example:
        >>> import numpy as np
        >>> import jax.numpy as jnp
        >>> from jaxtopics import hyper
        >>> counts = np.array([[8, 0, 0], [0, 7, 1], [0, 0, 9], [6, 2, 0]] * 25)  # doc-topic
        >>> fit = hyper.minka(1.0, counts)                     # symmetric: one alpha
        >>> round(float(fit.value), 2), bool(fit.residual < 1e-5)
        (0.13, True)
        >>> [round(float(a), 2) for a in hyper.minka(jnp.ones(3), counts).value]  # asymmetric
        [0.15, 0.13, 0.13]
    """
    shape, rate = _prior(shape, rate)
    a0 = jnp.asarray(value, jnp.float32)

    def cond(carry):
        _, i, residual = carry
        return (i < max_iter) & (residual >= tol)

    def body(carry):
        a, i, _ = carry
        new, residual = _fixed_point_step(a, counts, axis, reduce, shape, rate)
        return new, i + 1, residual

    a, i, residual = jax.lax.while_loop(cond, body, (a0, jnp.int32(0), jnp.float32(jnp.inf)))
    return HyperFit(a, i, residual)


def optax_maximize(value: Array | float, counts: Array, *, axis: int = -1, reduce: Reduce = None,
                   tol: float = 1e-5, max_iter: int = 200, shape: float | None = None,
                   rate: float | None = None) -> HyperFit:
    """Maximise (2) over log a with ``optax.lbfgs`` (zoom line search), from `value`, until one
    fixed-point step (3)/(4) from the iterate would move every a_c by less than `tol` relative
    (the stopping rule of :func:`minka`, so both stop as close to the optimum), or `max_iter`
    updates. The objective is scaled by the groups' statistic so its values are O(1); its
    gradient in log a is the closed form a_c * dF/da_c = a_c cells_c + s - 1 - a_c (groups + r)
    (a custom JVP: no differentiation through lgamma, a ``reduce`` or a line search).

    Args:
        value: the start, a scalar concentration (symmetric) or a vector [C] (asymmetric).
        counts: the integer count table (e.g. doc-topic [D, K]).
        axis: the axis a group's cells lie along (-1: rows are groups, e.g. doc-topic [D, K];
            0: columns are groups, e.g. a word-major word-topic table [V, K]); a vector
            `value` runs along it.
        reduce: sums a group statistic over shards (``lax.psum`` over the mesh axis inside
            ``shard_map``); None: the table is whole.
        tol: the relative move of one fixed-point step that ends the iteration.
        max_iter: the most L-BFGS updates.
        shape, rate: the Gamma prior (None: ``PRIOR_SHAPE``, ``PRIOR_RATE``).

    Returns:
        A :class:`HyperFit`."""
    shape, rate = _prior(shape, rate)
    import optax

    counts = jnp.asarray(counts)
    a0 = jnp.asarray(value, jnp.float32)
    cells0, groups0, size = _statistics(a0, counts, axis, reduce)
    scale = jnp.maximum((size if a0.ndim == 0 else 1) * groups0 + rate, 1.0)

    @jax.custom_jvp
    def objective(theta):
        return -_gain(jnp.exp(theta), a0, counts, axis, reduce, shape, rate) / scale

    @objective.defjvp
    def objective_jvp(primals, tangents):
        (theta,), (dtheta,) = primals, tangents
        a = jnp.exp(theta)
        cells, groups, _ = _statistics(a, counts, axis, reduce)
        denominator = (size if a.ndim == 0 else 1) * groups + rate
        grad = -(a * cells + (shape - 1.0) - a * denominator) / scale
        return objective(theta), jnp.sum(grad * dtheta)

    solver = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(objective)

    def residual_at(theta):
        a = jnp.exp(theta)
        return _fixed_point_step(a, counts, axis, reduce, shape, rate)[1]

    def cond(carry):
        _, _, i, residual = carry
        return (i < max_iter) & (residual >= tol)

    def body(carry):
        theta, state, i, _ = carry
        f, grad = value_and_grad(theta, state=state)
        updates, state = solver.update(grad, state, theta, value=f, grad=grad,
                                       value_fn=objective)
        theta = jnp.clip(optax.apply_updates(theta, updates), jnp.log(FLOOR), jnp.log(CEILING))
        return theta, state, i + 1, residual_at(theta)

    theta0 = jnp.log(a0)
    start = (theta0, solver.init(theta0), jnp.int32(0), residual_at(theta0))
    theta, _, i, residual = jax.lax.while_loop(cond, body, start)
    return HyperFit(jnp.exp(theta), i, residual)


def maximize(value: Array | float, counts: Array, optimizer: str = "minka", **options) -> HyperFit:
    """:func:`minka` or :func:`optax_maximize`.

    Args:
        value, counts: as in :func:`minka`.
        optimizer: one of ``OPTIMIZERS``: "minka" or "optax".
        **options: the optimiser's keyword arguments (axis, reduce, tol, max_iter, shape, rate).

    Returns:
        A :class:`HyperFit`.

    Raises:
        ValueError: an unknown `optimizer`."""
    if optimizer == "minka":
        return minka(value, counts, **options)
    if optimizer == "optax":
        return optax_maximize(value, counts, **options)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
