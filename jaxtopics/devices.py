"""Where a fit runs: the shard count of ``fit``/``resume``'s ``devices=`` (``resolve_devices``:
an integer, ``"auto"`` or None) and the two guards every entry point of a multi-process run
passes through (``_require_same_settings``: every process was given the same settings;
``_on_every_process``: an error on one process ends them all). The facade's side of
``jaxtopics.processes`` and ``jaxtopics.distributed``, which are imported only when a run needs
them (in one process, a fit on the default device never loads them for these checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import numpy as np

from .errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from .corpus import Corpus

__all__ = ["resolve_devices", "to_device"]


def to_device(x: Any) -> Any:
    """``jnp.asarray(x)`` without a program: a host numpy array is transferred by
    ``jax.device_put``, which gives the same array (the same dtype, canonicalised as
    ``jnp.asarray`` does: int64 -> int32 without x64; the same values), where ``jnp.asarray``
    of a host array runs a small jitted program (``lax.stage``), one per shape and dtype: ~8 ms
    each of a cached run's startup (read from the compilation cache), ~20 ms compiled. The
    array is copied first, as ``jnp.asarray`` copies it.

    Args:
        x: a numpy array (anything else, a Python scalar or a JAX array, goes to ``jnp.asarray``).

    Returns:
        The JAX array on the default device."""
    if isinstance(x, np.ndarray):
        # a copy of its own: on the CPU device_put shares the host array's memory, which the
        # caller (or a JAX array the host array is a view of, donated later) could change
        return jax.device_put(np.array(x, copy=True))
    import jax.numpy as jnp
    return jnp.asarray(x)


def resolve_devices(module, params: NamedTuple, corpus: Corpus,
                    devices: int | str | None) -> int | None:
    """The shard count a fit runs with: `devices` itself, or for ``"auto"`` every device of
    ``jax.devices()`` (at most one per document) when the model's kernel with these params can
    be sharded (``SHARDING`` and no ``shard_refusal``), else None (the default device)."""
    from .distributed import shard_refusal
    from .processes import balanced_ranges
    if devices is not None and not isinstance(devices, (str, int, np.integer)):
        raise ParameterError(f"devices must be a positive integer, 'auto' or None, got "
                             f"{type(devices).__name__} {devices!r}"[:200])
    if isinstance(devices, np.integer):
        devices = int(devices)                 # a numpy count is stored (model.shards) as an int
    if devices is None or not isinstance(devices, str):
        if (not isinstance(devices, bool) and devices == 1 and jax.process_count() == 1
                and shard_refusal(module, params)):
            return None              # one device of a kernel that cannot be sharded: the plain run
        return devices
    if devices != "auto":
        raise ParameterError(f"devices must be a positive integer, 'auto' or None, got {devices!r}")
    refusal = shard_refusal(module, params)
    if refusal:
        if jax.process_count() > 1:
            raise ParameterError(f"a multi-process fit is sharded, which this one cannot be: {refusal}")
        return None
    if jax.process_count() > 1:
        return jax.device_count()
    lengths = np.asarray(corpus.doc_lengths)
    for n in range(min(jax.device_count(), corpus.num_docs), 1, -1):
        ends = np.concatenate([[0], np.cumsum(lengths)])[balanced_ranges(lengths, n)]
        if np.all(np.diff(ends) > 0):           # every shard holds tokens
            return n
    return None


def _require_same_settings(**settings: Any) -> None:
    """In a multi-process run, a ParameterError on every process unless all were given the same
    `settings` (``processes.require_same_settings``); one process: nothing."""
    if jax.process_count() > 1:
        from .processes import require_same_settings
        require_same_settings(settings)


def _on_every_process(fn: Any, what: str = "lay out their documents") -> Any:
    """``fn()``; in a multi-process run a JaxTopicsError or OSError on any process ends every
    process (``processes.on_every_process``), so none waits for one that stopped."""
    from .processes import on_every_process
    return on_every_process(fn, what)
