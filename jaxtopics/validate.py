"""Shared checks of user-given values (seeds, counts, hyper-parameters) for every model.

Each check returns the value normalised (a Python ``int`` or ``float``) or raises
:class:`~jaxtopics.errors.ParameterError` naming the parameter. Booleans are never numbers here
(``num_topics=True`` is refused, not read as 1), and a float hyper-parameter must be a normal
float32 number, since the samplers compute in float32: ``1e-39`` or ``1e39`` would silently turn
into 0, inf and NaN there.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from jax import Array

__all__ = [
    "INT32_MAX",
    "MAX_BLOCKS",
    "FLOAT32_TINY",
    "FLOAT32_MAX",
    "check_int",
    "as_sequence",
    "latent_problem",
    "count_problem",
    "ANY_LENGTH",
    "same_length",
    "array_spec",
    "check_positive_int",
    "check_float32",
    "check_number",
    "check_seed",
    "seed_key",
]

INT32_MAX = int(np.iinfo(np.int32).max)
#: the most blocks a parallel sweep may have (more only adds empty steps to every sweep)
MAX_BLOCKS = 2**20
FLOAT32_TINY = float(np.finfo(np.float32).tiny)   # smallest normal float32, ~1.18e-38
FLOAT32_MAX = float(np.finfo(np.float32).max)     # ~3.40e38


def as_sequence(value: Any) -> Any:
    """`value` with a one-pass iterable (a generator, ``map``, ``range``, a pandas Series) read
    into a list; lists, tuples, arrays, strings and non-iterables are returned as they are."""
    if isinstance(value, Iterable) and not isinstance(value, (list, tuple, np.ndarray, str, bytes)):
        return list(value)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = INT32_MAX) -> int:
    """``value`` as an int in [low, high] (None: unbounded); bools and floats are refused."""
    if not _is_int(value):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if low is not None and v < low:
        raise ParameterError(f"{name} must be an integer >= {low}, got {v}")
    if high is not None and v > high:
        raise ParameterError(f"{name} must be an integer <= {high}, got {v}")
    return v


def check_positive_int(value: Any, name: str, *, high: int | None = INT32_MAX) -> int:
    """``value`` as an int >= 1 (and <= high, int32 by default); bools and floats are refused."""
    if not _is_int(value) or int(value) < 1:
        raise ParameterError(f"{name} must be a positive integer, got {value!r}")
    return check_int(value, name, low=1, high=high)


def check_float32(value: Any, name: str, *, low: float = FLOAT32_TINY,
                  high: float = FLOAT32_MAX) -> float:
    """``value`` as a float in [low, high]; by default a positive normal float32 number.

    Refuses bools, strings, NaN and infinities. The default range is what float32 holds with full
    precision (about 1.2e-38 to 3.4e38); pass a tighter range where sums of the value must stay
    finite too.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (low > 0 and v <= 0):
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    if not low <= v <= high:
        raise ParameterError(
            f"{name} = {v!r} is outside [{low:.4g}, {high:.4g}], the range float32 arithmetic "
            f"holds (the samplers compute in float32)")
    return v


def check_number(x: Any, name: str) -> float:
    """A real number (not a bool or a string) as a float; the model's check_params checks its
    range (``validate.check_float32``)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {x!r}")
    return float(str(x)) if isinstance(x, np.float32) else float(x)   # 0.1, not 0.10000000149


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed: any Python or numpy integer (not a bool), returned as a Python int."""
    if not _is_int(seed):
        raise ParameterError(f"{name} must be an integer, got {seed!r}")
    return int(seed)


def seed_key(seed: Any, name: str = "seed") -> Array:
    """``jax.random.key`` of any integer seed, distinct seeds giving distinct keys.

    Seeds in [0, 2**32) give ``jax.random.key(seed)`` exactly. JAX keeps only the low 32 bits of
    a seed (without x64), so for any other seed the higher 32-bit words (sign, count, then each
    word) are folded into the key of the low word: 2**32 no longer collides with 0, and
    2**63 or -2**70 no longer overflow.
    """
    import jax

    s = check_seed(seed, name)
    low, rest = s & 0xFFFFFFFF, s >> 32
    key = jax.random.key(low)
    if rest == 0:
        return key
    words = []
    mag = abs(rest)
    while mag:
        words.append(mag & 0xFFFFFFFF)
        mag >>= 32
    key = jax.random.fold_in(key, 1 if rest < 0 else 0)
    key = jax.random.fold_in(key, len(words))
    for w in words:
        key = jax.random.fold_in(key, np.uint32(w))
    return key


def latent_problem(name: str, values: Any, high: int, dummy_slot: bool = False,
                   what: str = "values", low: int = 0) -> str | None:
    """What is wrong with the latent variables `values` of a state read from a file (host
    array): each must lie in [low, high), and with `dummy_slot` the last entry is a dummy 0.
    None if nothing (a model's ``check_state``)."""
    v = np.asarray(values)
    real = v[:-1] if dummy_slot else v
    if real.size and (int(real.min()) < low or int(real.max()) >= high):
        return f"{name} holds {what} outside [{low}, {high})"
    if dummy_slot and v.size and v[-1] != 0:
        return f"{name}'s last (dummy) slot must be 0"
    return None


#: A ``state_shapes`` dimension that the file's sizes do not fix: any length matches.
ANY_LENGTH = -1


def same_length(i: int) -> int:
    """A ``state_shapes`` dimension of any length, but the same length in every array where
    ``same_length(i)`` appears: a capacity that grows, shared by several tables."""
    return -2 - i


def array_spec(*shape: int, dtype: Any = np.int32) -> Any:
    """``jax.ShapeDtypeStruct(shape, dtype)``, one array of a model's ``state_shapes``; a
    negative length is ``ANY_LENGTH`` or ``same_length(i)``."""
    import jax
    return jax.ShapeDtypeStruct(shape, dtype)


def count_problem(**tables: Any) -> str | None:
    """'negative counts in <name>' for the first count table with a negative entry, else None."""
    for name, table in tables.items():
        if np.asarray(table).size and int(np.min(table)) < 0:
            return f"negative counts in {name}"
    return None
