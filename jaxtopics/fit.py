"""The one driver every model shares: sweeps in jitted chunks, trace, progress, checkpoints.

Sweep t of a chain uses ``jax.random.fold_in(chain_key, t)``, and a chunk of sweeps is one jitted
``fori_loop`` whose bounds are runtime values, so how the sweeps are cut into chunks (eval points,
checkpoints, a stop and a resume) never changes the result: a run saved after 200 sweeps and
resumed for 300 is bitwise identical to 500 straight sweeps on the same backend. Every chunk
also reads the model's invariants (``models.base.Invariants``) on device; a broken one stops
the run with an InvariantError before the state is kept or saved.
"""

from __future__ import annotations

import functools
import sys
import time
from functools import partial
from types import ModuleType
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import memory
from .devices import to_device
from .errors import InvariantError
from .models.base import Carried, Growable, Invariants, Learning, TracedPriors
from .validate import seed_key

__all__ = ["TracePoint", "chain_keys", "check_callback", "check_chunk_memory", "check_invariants",
           "in_32_bits",
           "run_chunk", "run_unchecked_chunk", "run_chains_chunk", "run_sweeps", "run_chains"]


def in_32_bits(fn: Callable) -> Callable:
    """`fn` traced and run with JAX's 64-bit mode off, whatever the caller's setting. The kernels
    are int32 counts and float32 arithmetic by design; under ``jax_enable_x64`` a
    Python integer or an ``arange`` would trace as int64 and break the sweeps' loop carries. The
    facade's entry points and :func:`run_sweeps` wear this, so a user who has x64 on for other
    work gets the same chain, bitwise, as with it off; the model modules' own functions expect it
    off (call them inside ``jax.enable_x64(False)``).

    Args:
        fn: the function (a decorator).

    Returns:
        `fn` wrapped (``functools.wraps``)."""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with _x64_off():
            return fn(*args, **kwargs)
    return wrapped


def _x64_off():
    switch = getattr(jax, "enable_x64", None)          # the context manager (newer JAX)
    if switch is not None:
        return switch(False)
    from jax.experimental import disable_x64           # older JAX
    return disable_x64()


class TracePoint(NamedTuple):
    """One evaluation of a chain (``FittedModel.trace`` holds them).

    Attributes:
        sweep: the sweeps done.
        log_joint_per_token: the collapsed log joint per token.
        changed_fraction: the fraction of the model's latent units (tokens; documents for a
            model with ``CHANGED_UNIT = "documents"``) whose assignment changed in that sweep.
        seconds: wall time since the run started.
        priors: the hyper-parameters the chain learns or samples, at this point ({name: float,
            or a tuple of floats for a vector such as an asymmetric alpha}; the model's
            ``traced_priors``), None for a chain whose priors are fixed.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> [point.sweep for point in model.trace]              # every eval_every=10 sweeps
        [10, 20, 30, 40, 50]
        >>> model.trace[-1]
        TracePoint(sweep=50, log_joint_per_token=..., changed_fraction=..., seconds=..., priors=None)
    """

    sweep: int
    log_joint_per_token: float
    changed_fraction: float
    seconds: float
    priors: dict | None = None


def _traced_priors(model: Any, state: Any, params: Any) -> dict:
    """The model's ``traced_priors(state, params)`` ({} for a model without them)."""
    return model.traced_priors(state, params) if isinstance(model, TracedPriors) else {}


def _host_priors(priors: dict) -> dict | None:
    """A trace point's `priors`: device values as Python floats / tuples (None when empty)."""
    if not priors:
        return None
    return {name: (float(v) if v.ndim == 0 else tuple(float(x) for x in v.ravel()))
            for name, v in ((n, jax.device_get(a)) for n, a in priors.items())}


def chain_keys(seed: int) -> tuple[Array, Array]:
    """The keys of a seeded run; sweep t uses fold_in(chain_key, t).

    Args:
        seed: any integer (``validate.seed_key``: distinct seeds, distinct chains).

    Returns:
        (init_key, chain_key)."""
    root = seed_key(seed)
    return jax.random.fold_in(root, 0), jax.random.fold_in(root, 1)


def _invariants(model: Any, state: Any, data: Any, params: Any) -> dict:
    """The model's ``invariants(state, data, params)`` ({} for a model without them)."""
    return model.invariants(state, data, params) if isinstance(model, Invariants) else {}


def _chunk(model: ModuleType, params: Any, data: Any, state: Any, chain_key: Array,
           start: Array, stop: Array):
    """Sweeps start..stop-1 of `model`; returns (state, log joint, tokens changed in the last
    sweep, sweeps done, the priors the chain learns or samples: ``traced_priors``, the model's
    invariants of the state it ends with). `state` is donated.

    A model whose sweeps carry their state in a layout of their own defines ``to_carry(state,
    data, params)``, ``sweep_carry(key, carry, data, params)`` and ``from_carry(carry, data,
    params)`` (LDA's exact parallel kernel: z in block layout): the state is converted once
    here, not in every sweep, and the chain is the same bitwise.

    A model that learns settings from its state (priors: LDA's ``Params.optimize_alpha``)
    defines ``learn(state, data, params, t) -> state``, called after sweep t (on the carried
    state; it decides itself, from t, when to update, and returns the state untouched when
    there is nothing to learn). Learned values are state, so they resume bitwise too.

    A model that can run out of capacity (it defines ``grow``) reports ``info.overflow`` from a
    sweep that needed more room than its state has: that sweep is discarded (the state before it
    is kept) and the loop stops there, so the driver can grow the state outside jit and redo the
    sweep with the same key. Nothing is capped and no draw is lost.

    The model's invariants (``models.base.Invariants``: {name: bool []}, True where it holds;
    {} for a model without them) are read from the final state in the same program (reads
    only: the chain is the one :func:`run_unchecked_chunk` runs, bitwise); the driver checks
    them and the log joint (:func:`check_invariants`).

    Args:
        model: the model module (static), or a ``distributed.Sharded``.
        params: its Params (static).
        data: the prepared corpus.
        state: the State (donated).
        chain_key: the chain's key (``chain_keys``).
        start, stop: int32 sweep numbers.

    Returns:
        (state, log joint, units changed in the last sweep, sweeps done, traced priors,
        invariants).
    """
    state, lj, changed, done, priors = _sweeps(model, params, data, state, chain_key, start, stop)
    return state, lj, changed, done, priors, _invariants(model, state, data, params)


def _unchecked_chunk(model: ModuleType, params: Any, data: Any, state: Any, chain_key: Array,
                     start: Array, stop: Array):
    """:func:`run_chunk` without the invariants: the same chain, bitwise (what the check
    costs is measured against it, ``scripts/bench_invariants.py``).

    Args:
        model, params, data, state, chain_key, start, stop: as in :func:`run_chunk`.

    Returns:
        ``run_chunk``'s outputs, the invariants {}."""
    return (*_sweeps(model, params, data, state, chain_key, start, stop), {})


def _sweeps(model: ModuleType, params: Any, data: Any, state: Any, chain_key: Array,
            start: Array, stop: Array):
    """:func:`_chunk`'s sweeps: its outputs but the invariants."""
    learn = model.learn if isinstance(model, Learning) else None
    if not isinstance(model, Growable):
        carried = isinstance(model, Carried)
        sweep = model.sweep_carry if carried else model.sweep

        def body(t, carry):
            st, _ = carry
            st, info = sweep(jax.random.fold_in(chain_key, t), st, data, params)
            if learn is not None:
                st = learn(st, data, params, t)
            return st, info.changed

        if carried:
            state = model.to_carry(state, data, params)
        state, changed = jax.lax.fori_loop(start, stop, body, (state, jnp.int32(0)))
        if carried:
            state = model.from_carry(state, data, params)
        return (state, model.log_joint(state, data, params), changed, stop,
                _traced_priors(model, state, params))

    def cond(carry):
        t, _, _, overflow = carry
        return (t < stop) & ~overflow

    def step(carry):
        t, st, changed, _ = carry
        new, info = model.sweep(jax.random.fold_in(chain_key, t), st, data, params)
        overflow = info.overflow
        st = jax.tree.map(lambda a, b: jnp.where(overflow, a, b), st, new)
        return (t + (~overflow).astype(t.dtype), st, jnp.where(overflow, changed, info.changed),
                overflow)

    t, state, changed, _ = jax.lax.while_loop(cond, step, (start, state, jnp.int32(0), jnp.bool_(False)))
    return state, model.log_joint(state, data, params), changed, t, _traced_priors(model, state, params)


run_chunk = partial(jax.jit, static_argnums=(0, 1), donate_argnums=(3,))(_chunk)
run_unchecked_chunk = partial(jax.jit, static_argnums=(0, 1), donate_argnums=(3,))(_unchecked_chunk)


def check_invariants(model: Any, invariants: dict, log_joint: Any, sweep: int,
                     first: int | None = None, chain: int | None = None) -> None:
    """Raise InvariantError when a chunk's state broke an invariant of its model or its log
    joint is not finite (what :func:`run_chunk` returns), naming the sweep and the tables.

    Args:
        model: the model module (or a ``distributed.Sharded``), for the message.
        invariants: ``run_chunk``'s invariants ({name: bool []}, host or device values).
        log_joint: its log joint.
        sweep: the sweeps done (the chunk's end).
        first: the chunk's first sweep (1-based), for the message.
        chain: the chain, for a batch of chains (``run_chains``).

    Raises:
        InvariantError: something failed; nothing is changed."""
    invariants, log_joint = jax.device_get((invariants, log_joint))
    failed = [name for name, ok in invariants.items() if not bool(ok)]
    if not bool(jnp.isfinite(log_joint)):
        failed.append(f"log joint: finite (it is {float(log_joint)})")
    if not failed:
        return
    name = (getattr(model, "MODEL_NAME", None) or getattr(model, "__name__", None)   # HDP's kernels
            or getattr(getattr(model, "module", None), "__name__", ""))             # live in 2 modules
    chunk = f" (the chunk of sweeps {first}-{sweep})" if first is not None and first < sweep else ""
    which = f"chain {chain}: " if chain is not None else ""
    raise InvariantError(
        f"{which}the {name.rsplit('.', 1)[-1]} state after sweep {sweep}{chunk} broke "
        f"{'an invariant' if len(failed) == 1 else f'{len(failed)} invariants'}: "
        f"{'; '.join(failed)}. The run stopped before this state was kept or saved (a defect in "
        f"the kernel, not in the input)", sweep=sweep, failed=tuple(failed))


@partial(jax.jit, static_argnums=(0, 1), donate_argnums=(3,))
def run_chains_chunk(model: ModuleType, params: Any, data: Any, states: Any, chain_keys: Array,
                     start: Array, stop: Array):
    """``run_chunk`` for a batch of chains of a model that does not grow: `states` and
    `chain_keys` carry a leading chain axis, every output gains it (``jax.vmap``; the
    invariants too); `data` is shared. Chain c is the chain ``run_chunk`` runs from states[c]
    with chain_keys[c], up to the order of float reductions XLA picks for the batch.

    Args:
        model, params, data, start, stop: as in ``run_chunk``.
        states: the chains' States stacked (donated).
        chain_keys: [chains] keys.

    Returns:
        ``run_chunk``'s outputs, each with a leading chain axis."""
    return jax.vmap(lambda st, key: _chunk(model, params, data, st, key, start, stop))(
        states, chain_keys)


@partial(jax.jit, static_argnums=(0, 1))
def evaluate_log_joint(model: ModuleType, params: Any, data: Any, state: Any) -> tuple[Array, dict]:
    """`model`'s collapsed log joint of `state` (not donated), as ``run_chunk`` evaluates it,
    and its traced priors."""
    return model.log_joint(state, data, params), _traced_priors(model, state, params)


def _int32(value: int) -> Array:
    """``jnp.int32(value)`` (a sweep number) by a transfer, not a program (``to_device``)."""
    return to_device(np.asarray(value, np.int32))


def check_chunk_memory(model: ModuleType, params: Any, data: Any, state: Any, chain_key: Array,
                       start: int, stop: int, runner: Callable | None = None) -> Callable:
    """Refuse (ParameterError) a chunk of sweeps whose working memory does not fit on its
    devices: XLA's own count of the compiled chunk's temporaries and new outputs
    (``memory.check_fits``), agreed over the processes of a multi-process run. The chunk is
    traced and compiled here once and returned: the caller runs its chunks of this state's
    shapes with it (calling the jitted `runner` again would trace the program a second time:
    2-3 s of a small HDP or DP-MRM fit).

    Args:
        model, params, data, state, chain_key, start, stop: as in ``run_chunk`` (nothing
            donated here).
        runner: the jitted chunk to compile (default ``run_chunk``; ``run_chains_chunk`` for
            a batch).

    Returns:
        The compiled chunk: ``compiled(data, state, chain_key, start, stop)`` (int32 start,
        stop) for any chunk of a state of these shapes.

    Raises:
        ParameterError: the chunk does not fit."""
    jax.block_until_ready(state)           # the free memory read below counts the state
    lowered = (runner or run_chunk).lower(model, params, data, state, chain_key,
                                          _int32(start), _int32(stop))
    compiled = lowered.compile()
    stats = compiled.memory_analysis()
    if stats is None:               # pragma: no cover - a backend that does not say
        return compiled
    needed = stats.temp_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
    devices = {d for leaf in jax.tree.leaves(state) if isinstance(leaf, jax.Array)
               for d in leaf.sharding.addressable_devices} or set(jax.local_devices()[:1])
    from .distributed import on_every_process    # every process stops if one cannot go on
    on_every_process(lambda: memory.check_fits(needed, sorted(devices, key=lambda d: d.id),
                                               "a chunk of sweeps", state, params),
                     "fit a chunk of sweeps in their memory")
    return compiled


def _unshared(state: Any, data: Any) -> Any:
    """`state` with a copy of every array it shares with `data`: the chunks donate the state's
    buffers, and a shared one would be deleted from the data (and from the fitted object that
    keeps it) too."""
    held = {id(leaf) for leaf in jax.tree.leaves(data) if isinstance(leaf, jax.Array)}
    return jax.tree.map(lambda a: jnp.array(a, copy=True) if id(a) in held else a, state)


def _shapes(state: Any) -> list:
    return [getattr(leaf, "shape", None) for leaf in jax.tree.leaves(state)]


def _boundaries(start: int, stop: int, *every: int | None) -> list[int]:
    """Sweep counts at which to stop the jitted loop: multiples of each `every`, and `stop`."""
    points = {stop}
    for e in every:
        if e:
            points.update(range((start // e + 1) * e, stop, e))
    return sorted(p for p in points if start < p <= stop)


@in_32_bits
def run_sweeps(model: ModuleType, params: Any, data: Any, state: Any, chain_key: Array, *,
               start: int, num_sweeps: int, num_tokens: int, eval_every: int = 10,
               num_units: int | None = None,
               progress: bool | None = None, checkpoint_every: int | None = None,
               on_checkpoint: Callable[[Any, int, list[TracePoint]], None] | None = None,
               on_chunk: Callable[[Any, int, list[TracePoint]], None] | None = None,
               invariants: bool = True,
               on_eval: Callable[[TracePoint], Any] | None = None) -> tuple[Any, list[TracePoint]]:
    """Run sweeps start..start+num_sweeps-1; evaluate every `eval_every` sweeps (and at the end).

    A model with a ``grow(state, data, params) -> state`` function (nonparametric models with a
    static capacity) is grown here, outside jit, whenever a sweep reports ``info.overflow``; the
    returned state may then have larger shapes than the one passed in.

    After every jitted chunk the model's invariants (``models.base.Invariants``: count tables
    non-negative and summing to what the model counts) and the finiteness of the log joint are
    checked on device, in the chunk's own program (reads only: the chain is the same bitwise);
    a broken one raises InvariantError naming the sweep and the table, before the state is
    kept (`on_chunk`), traced or checkpointed.

    Args:
        model: the model module (or a ``distributed.Sharded``).
        params: its Params.
        data: the prepared corpus (the module's ``prepare``).
        state: the State (donated: do not reuse the argument).
        chain_key: the chain's key (``chain_keys(seed)[1]``).
        start: the sweeps done so far.
        num_sweeps: the sweeps to run.
        num_tokens: N, for the log joint per token.
        eval_every: sweeps between trace points.
        num_units: what ``info.changed`` counts out of (default `num_tokens`).
        progress: a tqdm bar; None: only when stderr is a terminal.
        checkpoint_every, on_checkpoint: call ``on_checkpoint(state, sweeps_done, trace)``
            every `checkpoint_every` sweeps.
        on_chunk: called as ``on_chunk(state, sweeps_done, trace)`` after every jitted chunk
            (so a caller interrupted by Ctrl-C still holds a valid state: the argument buffer
            was donated).
        invariants: check the model's invariants after every chunk (False: the unchecked
            chunk, ``run_unchecked_chunk``; for measuring what the check costs).
        on_eval: called as ``on_eval(point)`` with every new trace point, after `on_chunk`
            and the checkpoint; a return value that is not None and false (``False``) stops
            the run there, cleanly: the state and trace returned end at that point (the chain
            continues bitwise from it). An exception it raises propagates. In a multi-process
            run every process stops where any process's callback says stop.

    Returns:
        (state, trace); `num_sweeps=0` returns the state and one trace point evaluating it (0
        changed, 0 seconds).

    Raises:
        InvariantError: a chunk's state broke an invariant of its model (a kernel defect).

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import fit
        >>> from jaxtopics.models import lda
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> params = lda.Params(num_topics=2)
        >>> data = lda.prepare(corpus, params)
        >>> init_key, chain_key = fit.chain_keys(0)
        >>> state, trace = fit.run_sweeps(lda, params, data, lda.init(init_key, data, params),
        ...                               chain_key, start=0, num_sweeps=50,
        ...                               num_tokens=corpus.num_tokens, progress=False)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)   # the same chain
        >>> trace[-1].log_joint_per_token == model.log_joint_per_token()
        True
    """
    stop = start + num_sweeps
    state = _unshared(state, data)
    if num_sweeps == 0:                       # no sweep: the trace evaluates the state given
        lj, priors = evaluate_log_joint(model, params, data, state)
        trace = [TracePoint(start, float(lj) / max(num_tokens, 1), 0.0, 0.0, _host_priors(priors))]
        if on_eval is not None:
            on_eval(trace[0])
        return state, trace
    bar = None
    if progress or (progress is None and sys.stderr.isatty()):
        from tqdm.auto import tqdm
        name = getattr(model, "__name__", type(model).__name__)      # a module or a model object
        bar = tqdm(total=num_sweeps, unit="sweep", desc=name.rsplit(".", 1)[-1])
    trace: list[TracePoint] = []
    t0 = time.perf_counter()
    done = start
    checked = None
    runner = run_chunk if invariants else run_unchecked_chunk
    try:
        for point in _boundaries(start, stop, eval_every, checkpoint_every):
            steps = point - done
            while done < point:
                if checked != _shapes(state):          # the first chunk, or the state grew
                    chunk = check_chunk_memory(model, params, data, state, chain_key, done,
                                               point, runner=runner)
                    checked = _shapes(state)
                state, lj, changed, reached, priors, holds = chunk(
                    data, state, chain_key, _int32(done), _int32(point))
                first, done = done + 1, int(reached)
                if done >= first:      # a state no sweep touched was checked already
                    check_invariants(model, holds, lj, done, first)
                if done < point:       # sweep `done` needed more capacity: grow, then redo it
                    state = model.grow(state, data, params)
            if (eval_every and point % eval_every == 0) or point == stop:
                trace.append(TracePoint(point, float(lj) / max(num_tokens, 1),
                                        int(changed) / max(num_units or num_tokens, 1),
                                        time.perf_counter() - t0, _host_priors(priors)))
            if on_chunk is not None:
                on_chunk(state, done, trace)
            if checkpoint_every and on_checkpoint and point % checkpoint_every == 0:
                on_checkpoint(state, point, trace)
            if bar is not None:
                bar.update(steps)
                if trace:
                    bar.set_postfix(ll=f"{trace[-1].log_joint_per_token:.4f}")
            if trace and trace[-1].sweep == point and _stops_everywhere(
                    on_eval is not None and _stops(on_eval(trace[-1]))):
                break
    finally:
        if bar is not None:
            bar.close()
    return state, trace


def check_callback(callback: Any) -> None:
    """Refuse a `callback` that is not callable (before any sweep runs).

    Args:
        callback: what ``fit(..., callback=)`` was given.

    Raises:
        ParameterError: it cannot be called."""
    if not callable(callback):
        from .errors import ParameterError
        raise ParameterError(f"callback must be a function (point, model) -> bool | None, got "
                             f"{type(callback).__name__} {callback!r}"[:200])


def _stops_everywhere(stop: bool) -> bool:
    """One answer for the whole run: in a multi-process run every process stops where any
    process's callback stops it (their sweeps exchange counts: one stopping alone would leave
    the others waiting for it), one small sum at each trace point; one process: `stop`."""
    if jax.process_count() == 1:
        return stop
    from .processes import process_sum
    return process_sum(int(stop)) > 0


def _stops(answer: Any) -> bool:
    """Whether a callback's answer stops the run: not None and false (``False``, ``0``)."""
    return answer is not None and not bool(answer)


@in_32_bits
def run_chains(model: ModuleType, params: Any, data: Any, states: Any, chain_keys: Array, *,
               num_sweeps: int, num_tokens: int, eval_every: int = 10,
               num_units: int | None = None,
               on_eval: Callable[[Any, int, list[list[TracePoint]]], Any] | None = None
               ) -> tuple[Any, list[list[TracePoint]]]:
    """Sweeps 0..num_sweeps-1 of several chains at once (``run_chains_chunk``: one vmapped
    chunk per evaluation), for a model that does not grow.

    Args:
        model, params, data, num_sweeps, num_tokens, eval_every, num_units: as in
            :func:`run_sweeps` (the chains start at sweep 0).
        states: the chains' States stacked along a leading axis (donated).
        chain_keys: [chains] keys.
        on_eval: called as ``on_eval(states, sweeps_done, traces)`` at every evaluation (the
            states not donated yet); an answer that is not None and false stops every chain
            there.

    Returns:
        (states, one trace per chain, as ``run_sweeps``'s).

    Raises:
        InvariantError: a chain's state broke an invariant of its model (as in run_sweeps)."""
    if isinstance(model, Growable):
        raise TypeError(f"{model.__name__} grows its state: its chains run one at a time")
    states = _unshared(states, data)
    count = jax.tree.leaves(chain_keys)[0].shape[0]
    traces: list[list[TracePoint]] = [[] for _ in range(count)]
    t0 = time.perf_counter()
    done = 0
    for point in _boundaries(0, num_sweeps, eval_every):
        if done == 0:
            chunk = check_chunk_memory(model, params, data, states, chain_keys, 0, point,
                                       runner=run_chains_chunk)
        states, lj, changed, _, priors, holds = chunk(
            data, states, chain_keys, _int32(done), _int32(point))
        holds, lj = jax.device_get((holds, lj))
        for c in range(count):
            check_invariants(model, {n: v[c] for n, v in holds.items()}, lj[c], point, done + 1,
                             chain=c)
        done = point
        if (eval_every and point % eval_every == 0) or point == num_sweeps:
            seconds = time.perf_counter() - t0
            lj, changed = jax.device_get((lj, changed))
            for c, trace in enumerate(traces):
                trace.append(TracePoint(point, float(lj[c]) / max(num_tokens, 1),
                                        int(changed[c]) / max(num_units or num_tokens, 1),
                                        seconds, _host_priors({n: v[c] for n, v in priors.items()})))
            if on_eval is not None and _stops(on_eval(states, point, traces)):
                break
    return states, traces
