"""Long deterministic computations of the quality tests, done once per test run instead of once
per pytest-xdist worker.

Several tests compare against the same chains (e.g. the exact kernel's chains, or a negative
control, in tests/test_hdp_quality.py and tests/test_kernel_quality.py). ``functools.lru_cache``
shares them between the tests of one process, but pytest-xdist spreads a module's tests over
its workers, and each worker ran the same chains again (up to ~45 s of CPU each). ``shared``
stores a result (numpy arrays) in the run's own directory (``conftest.RESULTS_ENV``, made by the
process that starts the run and removed when it ends), under a lock: the first process to need
it computes it; the others wait for it and read it back. XLA:CPU is deterministic for a given
program, options and flags, so the value read back is bitwise the one the reader would have
computed; the key holds the optimisation level, XLA_FLAGS, the jax, jaxlib and numpy versions
and a digest of the package's and the tests' sources, so a result is never read by code that
would compute another one. Without the directory (a test imported outside pytest), ``shared``
just computes.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
from pathlib import Path
from typing import Callable

import numpy as np

RESULTS_ENV = "JAXTOPICS_TEST_RESULTS"
_ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def _sources_digest() -> str:
    h = hashlib.sha256()
    for folder in ("jaxtopics", "tests"):
        for path in sorted((_ROOT / folder).rglob("*.py")):
            h.update(str(path.relative_to(_ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _key(name: str) -> str:
    import jax
    import jaxlib

    setting = (f"{name}|opt-off={jax.config.read('jax_disable_most_optimizations')}"
               f"|{os.environ.get('XLA_FLAGS', '')}|{jax.__version__}|{jaxlib.__version__}"
               f"|{np.__version__}|{_sources_digest()}")
    readable = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)[:80]
    return f"{readable}-{hashlib.sha256(setting.encode()).hexdigest()[:16]}"


def shared(name: str, compute: Callable[[], object]):
    """`compute()` (an array, or a tuple of arrays and Nones), computed once per test run under
    the key `name` (which must name everything the result depends on besides the sources)."""
    root = os.environ.get(RESULTS_ENV)
    if not root or not Path(root).is_dir():
        return compute()
    path = Path(root) / f"{_key(name)}.npz"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)       # released when the file closes
        if not path.exists():
            value = compute()
            parts = value if isinstance(value, tuple) else (value,)
            arrays = {f"a{i}": np.asarray(p) for i, p in enumerate(parts) if p is not None}
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, tuple=np.bool_(isinstance(value, tuple)), n=len(parts), **arrays)
            os.replace(tmp, path)
            return value
        with np.load(path) as f:
            parts = tuple(f[f"a{i}"] if f"a{i}" in f else None for i in range(int(f["n"])))
            return parts if bool(f["tuple"]) else parts[0]
