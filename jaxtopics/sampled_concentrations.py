"""Dirichlet-process concentrations sampled along the chain: what every model that samples them
shares (HDP's alpha and gamma, DPMM's alpha, DP-MRM's alpha and gamma).

Such a model's ``Params`` carry the settings

    resample_concentrations: bool     draw the concentrations after every sweep
    prior_shape, prior_rate: float    their Gamma(shape, rate) prior

and its ``State`` the values in use (float32 scalars, starting at the Params' values), so that
drawing them never recompiles, a model file holds them and ``resume`` continues them bitwise.
The draws are ``jaxtopics.ops.concentration``'s auxiliary-variable updates; each model says
which partitions a concentration governs. A chain that samples nothing reads the Params' Python
floats (:func:`in_use`): the same float32 operations, so the same chain bitwise, as the model
before it could sample them. This module holds those rules once: validation (:func:`check`),
the values the kernels use (:func:`in_use`), the State's initial values (:func:`initial`), what
the trace records (:func:`traced`), the check of a loaded state (:func:`state_problem`) and the
values older model files ran with (``PARAMS_ADDED_LATER``, :func:`state_added_later`).
"""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np
from jax import Array

from .errors import ParameterError
from .validate import check_float32

__all__ = ["PARAMS_ADDED_LATER", "check", "refuse_unused_prior", "in_use", "initial", "traced", "state_problem",
           "state_added_later"]

#: the settings and their defaults (nothing sampled); also the values a model file written
#: before a model could sample its concentrations ran with (its ``PARAMS_ADDED_LATER``)
PARAMS_ADDED_LATER = {"resample_concentrations": False, "prior_shape": 1.0, "prior_rate": 1.0}
#: the range of a concentration and of the prior's shape and rate (float32, as ``ops.concentration``
#: keeps its draws)
RANGE = (1e-30, 1e30)


def check(params: Any) -> dict:
    """The settings of `params` normalised (Python bool and floats), as a dict to ``_replace``
    into them; raises ParameterError naming the bad field (bools only for the switch, finite
    positive numbers in [1e-30, 1e30] for the prior)."""
    if not isinstance(params.resample_concentrations, (bool, np.bool_)):
        raise ParameterError("resample_concentrations must be True or False, got "
                             f"{params.resample_concentrations!r}")
    out = {"resample_concentrations": bool(params.resample_concentrations)}
    for name in ("prior_shape", "prior_rate"):
        out[name] = check_float32(getattr(params, name), name, low=RANGE[0], high=RANGE[1])
    return out


def refuse_unused_prior(params: Any) -> None:
    """Refuse (ParameterError) a Gamma prior given to a chain that samples nothing: the
    estimators' check, so that a forgotten ``resample_concentrations`` is not a silent fixed
    run (model files keep loading whatever they hold)."""
    if params.resample_concentrations:
        return
    defaults = type(params)._field_defaults
    for name in ("prior_shape", "prior_rate"):
        if float(getattr(params, name)) != float(defaults[name]):
            raise ParameterError(f"{name}={getattr(params, name)!r} applies to sampled "
                                 "concentrations only, and nothing is sampled: switch "
                                 "resample_concentrations on too (command line: "
                                 "--resample-concentrations)")


def in_use(state: Any, params: Any, name: str) -> Array | float:
    """The concentration `name` the kernels and read-outs use: the State's where the chain
    samples it, else the Params' Python float (a static branch)."""
    return getattr(state, name) if params.resample_concentrations else getattr(params, name)


def initial(params: Any, name: str) -> Array:
    """The State's value of `name` before any draw: the Params' value as a float32 scalar."""
    return jnp.asarray(getattr(params, name), jnp.float32)


def traced(state: Any, params: Any, names: tuple[str, ...]) -> dict[str, Array]:
    """The sampled values the trace records ({name: float32 scalar}; {} when not sampled)."""
    if not params.resample_concentrations:
        return {}
    return {name: jnp.asarray(getattr(state, name), jnp.float32) for name in names}


def state_problem(state: Any, params: Any, names: tuple[str, ...]) -> str | None:
    """What is wrong with a loaded state's concentrations, or None: float32 scalars, finite and
    positive, and equal to the Params' values where they are not sampled."""
    for name in names:
        value = np.asarray(getattr(state, name))
        if value.shape != () or value.dtype != np.float32:
            return f"{name} must be a float32 scalar, got {value.dtype}{list(value.shape)}"
        if not (np.isfinite(value) and value > 0):
            return f"{name} must be a finite number > 0, got {float(value)!r}"
        if not params.resample_concentrations and value != np.float32(getattr(params, name)):
            return (f"{name} differs from the parameter {name}={getattr(params, name)}, which is "
                    "not sampled (resample_concentrations=False)")
    return None


def state_added_later(names: tuple[str, ...]) -> dict[str, Callable[[Any], np.ndarray]]:
    """A model's ``STATE_ADDED_LATER`` entries: a model file written before the State held the
    concentrations ran with the Params' values."""
    return {name: (lambda params, name=name: np.asarray(getattr(params, name), np.float32))
            for name in names}
