"""Whether a fit's arrays fit in its devices' memory, checked before they are allocated.

A table that int32 can index may still not fit: ``DMM(num_clusters=10**8)`` on any corpus asks
for a [V, 10^8] word-cluster table and the blocks' [documents, 10^8] probabilities. Allocating
first would leave the operating system to kill the process (a CPU's memory is overcommitted)
or the run to fail deep inside XLA, or after the sweeps, in the read-outs. So the facade sizes
the state with ``jax.eval_shape``, with its initialisation and read-outs, and a sharded state's
copy on each device; the driver asks XLA how much a compiled chunk of sweeps needs
(``Compiled.memory_analysis``); all refuse with a :class:`~jaxtopics.errors.ParameterError`
that names the largest tables and the parameters that size them.

Free memory: a GPU's or TPU's ``memory_stats()`` (limit minus in use); a CPU's host memory
(``MemAvailable``, bounded by the process's cgroup and address-space limits). Where a backend
reports neither, nothing is checked.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable
from typing import Any

import jax
import numpy as np

from .errors import ParameterError

__all__ = ["available_bytes", "check_fits", "format_bytes", "state_bytes"]


def format_bytes(n: int) -> str:
    """`n` bytes for a message: "2.4 GB", "512.0 MB", "900 bytes"."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None          # cgroup v2 writes "max" for none


def _stat_field(path: str, name: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == name:
                    return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def _host_available() -> int | None:
    """Bytes this process can still allocate on the host: the kernel's MemAvailable, less where
    a cgroup (a container) or an address-space limit (``ulimit -v``) allows less."""
    limits = []
    available = _stat_field("/proc/meminfo", "MemAvailable:")
    if available:
        limits.append(available * 1024)
    for limit, usage, stat, cache in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
             "/sys/fs/cgroup/memory.stat", "inactive_file"),                       # cgroup v2
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes",
             "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file")):          # cgroup v1
        cap, used = _read_int(limit), _read_int(usage)
        if cap is not None and used is not None and cap < 2 ** 60:
            limits.append(cap - max(used - _stat_field(stat, cache), 0))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        size = _stat_field(f"/proc/{os.getpid()}/status", "VmSize:") * 1024
        limits.append(soft - size)
    return max(min(limits), 0) if limits else None


def available_bytes(device: Any) -> int | None:
    """Bytes free on `device` (None where its backend does not say)."""
    if device.platform == "cpu":
        return _host_available()
    try:
        stats = device.memory_stats()
    except Exception:                   # pragma: no cover - a backend without memory stats
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def state_bytes(tree: Any) -> int:
    """Bytes of the arrays (or ``jax.ShapeDtypeStruct``) in `tree`."""
    return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in jax.tree.leaves(tree)
               if hasattr(a, "shape") and hasattr(a, "dtype"))


#: integer parameters that count sweeps, never array sizes (learned priors' schedule)
_SCHEDULES = frozenset({"optimize_every", "burn_in"})


def _largest(state: Any, params: Any, resize: Callable[[Any], Any] | None = None,
             top: int = 2) -> str:
    """The `top` largest fields of a NamedTuple state, and the integer parameters that size
    them: "its largest tables: word_cluster [6, 100000000] int32 (2.4 GB); lower
    num_clusters=100000000". A parameter sizes a table when its value is the table's longest
    axis (else any axis); where none is, and `resize(params)` gives the state's shapes for other
    parameters, the parameters whose doubling changes those tables' shapes (e.g. DP-MRM's
    ``initial_topics``, which sets a capacity several times larger)."""
    fields = getattr(state, "_asdict", lambda: {})()
    arrays = sorted(((state_bytes(a), name, a) for name, a in fields.items() if hasattr(a, "shape")),
                    key=lambda t: -t[0])[:top]
    if not arrays:
        return ""
    text = "; ".join(f"{name} {list(a.shape)} {np.dtype(a.dtype).name} ({format_bytes(size)})"
                     for size, name, a in arrays)
    sizes = {k: int(v) for k, v in getattr(params, "_asdict", lambda: {})().items()
             if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
             and k not in _SCHEDULES}
    named = []
    for _, _, a in arrays:          # the parameters that set a table's longest axis, else any
        for dims in ({max(a.shape, default=0)}, set(a.shape)):
            found = [f"{k}={v}" for k, v in sizes.items() if v > 1 and v in dims]
            if found:
                named += [f for f in found if f not in named]
                break
    if not named and resize is not None:
        named = [f"{k}={v}" for k, v in sizes.items() if v >= 1
                 and _reshapes(resize, params, k, 2 * v, [name for _, name, _ in arrays], state)]
    return f"its largest tables: {text}" + (f"; lower {' or '.join(named)}" if named else "")


def _reshapes(resize: Callable[[Any], Any], params: Any, name: str, value: int,
              fields: list[str], state: Any) -> bool:
    """Whether setting parameter `name` to `value` changes the shape of one of `fields`."""
    try:
        other = resize(params._replace(**{name: value}))
    except Exception:           # an invalid combination of parameters: it does not tell
        return False
    return any(getattr(other, f).shape != getattr(state, f).shape for f in fields)


def check_fits(needed: int, devices: Iterable[Any], what: str, state: Any = None,
               params: Any = None, resize: Callable[[Any], Any] | None = None) -> None:
    """Refuse (ParameterError) when `needed` bytes more per device do not fit on `devices`.

    CPU devices share the host's memory, so their needs add up; other devices each have their
    own. `state`, `params` and `resize` only word the message (:func:`_largest`)."""
    devices = list(devices)
    cpu = [d for d in devices if d.platform == "cpu"]
    checks = [(needed * len(cpu), cpu[0], "the host")] if cpu else []
    checks += [(needed, d, str(d)) for d in devices if d.platform != "cpu"]
    for need, device, where in checks:
        free = available_bytes(device)
        if free is not None and need > free:
            detail = _largest(state, params, resize) if state is not None else ""
            raise ParameterError(
                f"{what} needs {format_bytes(need)} of memory and {where} has "
                f"{format_bytes(free)} free" + (f" ({detail})" if detail else ""))
