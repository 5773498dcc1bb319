"""Dirichlet priors learned along the chain: what every model that learns them shares.

A model with a doc-topic-like Dirichlet ``alpha`` over K cells and a symmetric topic-word
``beta`` (LDA, Sentence-LDA, PTM, DMM) can learn them from its counts (``jaxtopics.hyper``: the
Dirichlet-multinomial evidence, Minka 2000 / optax). Its ``Params`` then carry the settings

    optimize_alpha: None | "symmetric" | "asymmetric"   optimize_beta: bool
    optimize_every: int (sweeps between updates)        burn_in: int (sweeps before the first)
    optimizer: "minka" | "optax"

and its ``State`` the values in use, ``alpha`` [K] float32 (all equal unless learned asymmetric)
and ``beta`` [] float32, so that learning them never recompiles, a model file holds them and
``resume`` continues them bitwise. A chain that learns nothing reads the Params' Python floats
(:func:`in_use`), the same float32 operations, so the same chain bitwise, as a model without the
feature. This module holds those rules once: validation (:func:`check`), the state's initial
values (:func:`initial`), the values the kernels use (:func:`in_use`), the refit after a sweep
(:func:`refit`), what the trace records (:func:`traced`) and the check of a loaded state
(:func:`state_problem`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import hyper
from .errors import ParameterError
from .validate import INT32_MAX, check_int

__all__ = ["OPTIMIZE_ALPHA", "DEFAULTS", "check", "learns", "initial", "initial_traced", "in_use",
           "refit", "traced", "state_problem", "state_added_later"]

#: ``Params.optimize_alpha``: None (alpha fixed), or learned as one value or one per cell
OPTIMIZE_ALPHA = (None, "symmetric", "asymmetric")
#: the learning settings and their defaults (nothing learned); also the values a model file
#: written before a model could learn its priors ran with (its ``PARAMS_ADDED_LATER``)
DEFAULTS = {"optimize_alpha": None, "optimize_beta": False, "optimize_every": 10, "burn_in": 50,
            "optimizer": "minka"}


def check(params: Any) -> dict:
    """The learning settings of `params` normalised (Python str / bool / int).

    Args:
        params: a model's Params with the learning settings (module docstring).

    Returns:
        The settings as a dict to ``_replace`` into `params`.

    Raises:
        ParameterError: naming the bad field (or a setting given without anything learned).

    Example:
        >>> from jaxtopics import learned_priors
        >>> from jaxtopics.models import lda
        >>> learned_priors.check(lda.Params(num_topics=2, optimize_alpha="symmetric"))
        {'optimize_alpha': 'symmetric', 'optimize_beta': False, 'optimize_every': 10,
         'burn_in': 50, 'optimizer': 'minka'}
    """
    if params.optimize_alpha is not None and (not isinstance(params.optimize_alpha, str)
                                              or params.optimize_alpha not in OPTIMIZE_ALPHA):
        raise ParameterError(f"optimize_alpha must be None, 'symmetric' or 'asymmetric', got "
                             f"{params.optimize_alpha!r}")
    if not isinstance(params.optimize_beta, (bool, np.bool_)):
        raise ParameterError(f"optimize_beta must be True or False, got {params.optimize_beta!r}")
    if not isinstance(params.optimizer, str) or params.optimizer not in hyper.OPTIMIZERS:
        raise ParameterError(f"optimizer must be one of {hyper.OPTIMIZERS}, got "
                             f"{params.optimizer!r}")
    every = check_int(params.optimize_every, "optimize_every", low=1, high=INT32_MAX)
    burn_in = check_int(params.burn_in, "burn_in", low=0, high=INT32_MAX)
    learning = params.optimize_alpha is not None or bool(params.optimize_beta)
    if not learning:
        for name, value in (("optimize_every", every), ("burn_in", burn_in),
                            ("optimizer", params.optimizer)):
            if value != DEFAULTS[name]:
                raise ParameterError(f"{name}={value!r} applies to learned priors only, and "
                                     "nothing is learned: learn alpha or beta too (Python: "
                                     "optimize_alpha, optimize_beta; command line: "
                                     "--optimize-alpha, --optimize-beta)")
    return {"optimize_alpha": None if params.optimize_alpha is None else str(params.optimize_alpha),
            "optimize_beta": bool(params.optimize_beta), "optimize_every": every,
            "burn_in": burn_in, "optimizer": str(params.optimizer)}


def learns(params: Any) -> bool:
    """Whether the chain learns a prior (then the kernels read them from the State).

    Args:
        params: a model's Params with the learning settings (module docstring).

    Returns:
        True where ``optimize_alpha`` or ``optimize_beta`` is set."""
    return params.optimize_alpha is not None or bool(params.optimize_beta)


def initial(params: Any, num_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The State's priors before anything is learned (the Params' values).

    Args:
        params: a model's Params with the learning settings (module docstring).
        num_cells: K, the cells of alpha.

    Returns:
        (alpha [num_cells] float32, beta [] float32), numpy."""
    return (np.full((num_cells,), params.alpha, np.float32), np.asarray(params.beta, np.float32))


def initial_traced(params: Any, num_cells: int) -> tuple[Array, Array]:
    """:func:`initial` as jnp arrays built by the computation (under ``jax.eval_shape``, as the
    memory check sizes a state, nothing of size K is allocated).

    Args:
        params, num_cells: as in :func:`initial`.

    Returns:
        (alpha [num_cells] float32, beta [] float32), jnp."""
    return (jnp.full((num_cells,), params.alpha, jnp.float32),
            jnp.asarray(params.beta, jnp.float32))


def in_use(state: Any, params: Any) -> tuple[Array | float, Array | float]:
    """The priors the kernels and read-outs use.

    Args:
        state: the model's State (with ``alpha`` [K] and ``beta`` []).
        params: a model's Params with the learning settings (module docstring).

    Returns:
        (alpha, beta): the State's where the chain learns them (alpha a scalar when symmetric,
        [K] when asymmetric), else the Params' Python floats."""
    if params.optimize_alpha is None:
        alpha = params.alpha
    elif params.optimize_alpha == "symmetric":
        alpha = state.alpha[0]
    else:
        alpha = state.alpha
    return alpha, (state.beta if params.optimize_beta else params.beta)


def refit(state: Any, params: Any, t: Array, alpha_counts: Callable[[], Array] | Array,
          beta_counts: Callable[[], Array] | Array, *, alpha_axis: int = -1, beta_axis: int = 0,
          axis_name: str | None = None) -> Any:
    """The state after sweep `t` (0-based) with its priors re-fitted where the chain learns
    them: when s = t + 1 > burn_in and s is a multiple of optimize_every, alpha maximises the
    Dirichlet-multinomial evidence (``hyper``, eq. 2 there, from its current value) of
    `alpha_counts` (groups of K cells along `alpha_axis`: e.g. doc-topic [D, K]) and beta that of
    `beta_counts` (cells along `beta_axis`: e.g. word-topic [V, K] with axis 0). Either may be a
    function returning the table (built only when due).

    Args:
        state: the model's State after the sweep.
        params: a model's Params with the learning settings (module docstring).
        t: the sweep just done, 0-based (traced).
        alpha_counts, beta_counts: the count tables (or functions returning them).
        alpha_axis, beta_axis: the axis each table's cells lie along.
        axis_name: inside ``shard_map``, the mesh axis: the alpha table's groups are split over
            the shards and their statistics summed (``lax.psum``); the beta table must be whole
            on every shard, so every shard computes the same priors. None: not sharded.

    Returns:
        The State with ``alpha`` and ``beta`` replaced (unchanged when not due)."""
    if not learns(params):
        return state
    done = t + 1
    due = (done > params.burn_in) & (done % params.optimize_every == 0)

    def table(x):
        return x() if callable(x) else x

    def refit_now():
        alpha, beta = state.alpha, state.beta
        if params.optimize_alpha is not None:
            reduce = None if axis_name is None else partial(jax.lax.psum, axis_name=axis_name)
            start = alpha[0] if params.optimize_alpha == "symmetric" else alpha
            fitted = hyper.maximize(start, table(alpha_counts), params.optimizer,
                                    axis=alpha_axis, reduce=reduce).value
            alpha = jnp.broadcast_to(fitted, alpha.shape).astype(jnp.float32)
        if params.optimize_beta:
            beta = hyper.maximize(beta, table(beta_counts), params.optimizer,
                                  axis=beta_axis).value
        return alpha, beta.astype(jnp.float32)

    alpha, beta = jax.lax.cond(due, refit_now, lambda: (state.alpha, state.beta))
    return state._replace(alpha=alpha, beta=beta)


def traced(state: Any, params: Any) -> dict[str, Array]:
    """The learned values the trace records.

    Args:
        state, params: as in :func:`in_use`.

    Returns:
        {"alpha": [] or [K], "beta": []}, each only where the chain learns it ({} when it
        learns nothing)."""
    alpha, beta = in_use(state, params)
    out = {}
    if params.optimize_alpha is not None:
        out["alpha"] = jnp.asarray(alpha, jnp.float32)
    if params.optimize_beta:
        out["beta"] = jnp.asarray(beta, jnp.float32)
    return out


def state_problem(state: Any, params: Any, num_cells: int) -> str | None:
    """What is wrong with a loaded state's priors: they must be finite and positive, equal to the
    Params' where not learned, and alpha one value unless learned asymmetric.

    Args:
        state, params: as in :func:`in_use`.
        num_cells: K, the cells of alpha.

    Returns:
        The problem in words, or None."""
    alpha, beta = np.asarray(state.alpha), np.asarray(state.beta)
    if alpha.shape != (num_cells,) or beta.shape != ():
        return f"alpha must be float32[{num_cells}] and beta a float32 scalar"
    fixed_alpha, fixed_beta = initial(params, num_cells)
    for name, value, fixed, learned in (("alpha", alpha, fixed_alpha, params.optimize_alpha),
                                        ("beta", beta, fixed_beta, params.optimize_beta)):
        if not (np.all(np.isfinite(value)) and np.all(value > 0)):
            return f"{name} holds a value that is not a finite positive number"
        if not learned and not np.array_equal(value, fixed):
            return (f"{name} differs from the parameter {name}={getattr(params, name)}, which is "
                    f"not learned")
    if params.optimize_alpha != "asymmetric" and np.any(alpha != alpha[0]):
        return "alpha differs between topics, but it is not learned asymmetric"
    return None


def state_added_later(num_cells: Callable[[Any], int]) -> dict[str, Callable[[Any], np.ndarray]]:
    """A model's ``STATE_ADDED_LATER`` entries for alpha and beta: a model file written before
    the State held them ran with the Params' values.

    Args:
        num_cells: params -> K.

    Returns:
        {"alpha": params -> [K] float32, "beta": params -> [] float32}."""
    return {"alpha": lambda params: initial(params, num_cells(params))[0],
            "beta": lambda params: initial(params, num_cells(params))[1]}
