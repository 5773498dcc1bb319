"""jaxtopics.validate: the shared checks every model uses for its own parameters."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxtopics.errors import ParameterError
from jaxtopics.validate import (
    FLOAT32_MAX,
    FLOAT32_TINY,
    check_float32,
    check_int,
    check_positive_int,
    check_seed,
    seed_key,
)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 2.0, "3", None, 0, -1, 2**31])
def test_check_positive_int_refuses(value):
    with pytest.raises(ParameterError, match="num_clusters"):
        check_positive_int(value, "num_clusters")


def test_check_positive_int_accepts_and_normalises():
    assert check_positive_int(np.int64(7), "k") == 7 and type(check_positive_int(np.int64(7), "k")) is int
    assert check_positive_int(2**31 - 1, "k") == 2**31 - 1
    assert check_positive_int(2**40, "k", high=None) == 2**40
    assert check_int(0, "steps", low=0) == 0
    with pytest.raises(ParameterError, match="steps must be an integer >= 0, got -1"):
        check_int(-1, "steps", low=0)


@pytest.mark.parametrize("value", [0.0, -1.0, 1e-39, 1e39, float("nan"), float("inf"), True, "0.1",
                                   None, 1 + 1j])
def test_check_float32_refuses(value):
    with pytest.raises(ParameterError, match="lam"):
        check_float32(value, "lam")


def test_check_float32_accepts():
    for v in (FLOAT32_TINY, 1e-30, 0.1, 1, np.float32(2), 1e30, FLOAT32_MAX):
        assert check_float32(v, "lam") == float(v)
    assert check_float32(0.5, "p", low=0.0, high=1.0) == 0.5
    with pytest.raises(ParameterError, match="outside"):
        check_float32(1.5, "p", low=0.0, high=1.0)


def test_seeds():
    assert check_seed(np.int64(3)) == 3 and check_seed(2**100) == 2**100
    for bad in (True, 1.0, "1", None):
        with pytest.raises(ParameterError, match="seed"):
            check_seed(bad)
    data = {s: tuple(jax.random.key_data(seed_key(s)).tolist())
            for s in (0, 1, 2**32 - 1, 2**32, 2**63, 2**64, -1, -(2**32), 2**200)}
    assert len(set(data.values())) == len(data)               # distinct seeds, distinct keys
    assert data[2**63] == tuple(jax.random.key_data(seed_key(2**63)).tolist())   # reproducible
