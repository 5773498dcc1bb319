"""Document-sharded sweeps of any model's ``parallel`` kernel over the devices of a mesh
(``shard_map``), one or many hosts.

The corpus is cut into contiguous document ranges of about equal token counts, one per device of
the mesh axis ``"shards"``. Every device holds its documents' latents and per-document tables
(topics of their tokens or sentences, document-topic rows, pseudo-document labels, ...) and a copy
of the model's global tables (word-topic, topic totals, cluster sizes, pseudo-document tables,
...). A sweep is the model's blocked ``parallel`` sweep run with ``axis_name="shards"``: the
devices visit their blocks in step, each drawing its block against the counts at the block's
start, and after each block the devices exchange that block's moves of the global tables
(``ops.exchange``: one packed ``all_gather`` of the move arrays) and apply all of them to their copies.
So a sweep on P devices is the single-device blocked sweep whose block b is the union of the
devices' blocks b: the same staleness (1/blocks of the corpus), the same quality, with the draws
split P ways. One device gives exactly the model's ``sweep``. (For LDA a plain AD-LDA sweep,
re-summing the copies once per sweep, was measured 1 % worse in log joint on Reuters with 4
shards at 500 sweeps, hence the per-block exchange. LDA by default does not exchange moves at
all: its words are cut into groups that rotate over the devices, ``ops.rotation``, each n_kw
row updated by one device at a time; with ``exchange="moves"`` its ``sync_every``, 4 by
default, exchanges every few blocks.)

What a model module declares to be sharded (module-level hooks; this file never names a model,
and reads the settings only through ``models.base.sharding``):

- ``SHARDING = base.Sharding(...)``, the module's sharding settings in one constant (a module
  without it has no sharded kernel). Its ``fields``: {State field: axis} for the per-shard
  fields and the axis of the shard's layout they run along ("tokens", "docs", "sentences");
  every other State field is a global table, replicated on every device. Optional
  ``index_fields``: {field: axis} for per-shard fields whose values are positions along an axis
  (shard-local, shifted by the shard's offset when gathered).
- ``shard_sizes(data, num_shards) -> dict[str, int]``: the sizes of a shard's layout (of
  `num_shards` shards in all), among them the real
  length of every axis of ``SHARDING.fields``; ``pad_shard(data, sizes) -> Data``: the layout
  padded to `sizes` (the largest over the shards; optional ``SHARDING.summed_sizes``: the names of
  sizes that are bounds of global quantities, summed over the shards instead). Padding items
  are visited by no block and, in a state that ``recount_shard`` made, counted in no table.
- ``recount_shard(state, data, params, sizes) -> State``: a shard's state with every table
  rebuilt from its latents (padding counted nowhere; `sizes` are the shard's real sizes); its
  global tables are the shard's part, which ``init`` and ``recount`` sum over the shards.
- ``sweep(key, state, data, params, axis_name=None)``: with `axis_name`, the parallel kernel
  exchanges its global-table moves over that axis and returns the whole sweep's info (equal on
  every shard); ``log_joint(state, None, params)`` must score the stacked per-shard tables
  (padding rows add nothing).
- optional ``check_shard_params(params)`` (refuse what the sharded kernel cannot run; the
  ``parallel`` sampler is required of every model), ``SHARDING.inits`` (the ``init`` settings
  ``init`` below supports), ``SHARDING.replicated`` (global State fields that are settings,
  e.g. sampled concentrations: equal on every shard, never summed over the shards) and
  ``SHARDING.max_fields`` (global State fields that are no counts but labels of slots, e.g. a
  topic slot's owner: a shard's part is the label where its own items use the slot, 0
  elsewhere, and the parts combine by their largest value).
- optional ``SHARDING.permuted``: {State field: Data field} for per-shard fields a shard holds in a
  layout of its own rather than in corpus order (LDA's z in the word-rotation layout, so that no
  sweep converts it): the Data field, an int32 array of the field's shape, names the item each
  slot holds (a value >= the shard's item count: no item). ``prepare`` keeps that Data field on
  the host (``ShardedData.host``; no device memory), ``shard_state`` and ``gather`` reorder with
  it; the field's corpus order form ends with one 0 (a dummy slot).

The same code runs on the CPU devices of one process (``jax_num_cpu_devices``), on the GPUs of
one host, and over several processes (``jax.distributed``: ``initialize``, each process reads
its own documents, ``place`` assembles global arrays, ``gather`` reads them back on every host).
Shards are padded to common shapes.

This module is the sharding of a model's sweep (mesh, shard layouts, sharded init / sweep /
gather). The multi-process plumbing it builds on (joining the run, agreement across processes,
values summed or gathered over them, per-process reading of a corpus) is
``jaxtopics.processes``, which never imports this module; its public names are re-exported
here (``jt.distributed.initialize``, ``read_process_corpus``, ``process_sum``, ...).
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from dataclasses import dataclass, field
from functools import partial
from types import ModuleType
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .corpus import Corpus
from .devices import to_device
from .errors import ParameterError
from .models.base import kernel_module, sharding as _sharding
from .processes import (_allgather_host, _host_value, balanced_ranges, global_fingerprint,
                        initialize, on_every_process, process_sum, read_process_corpus,
                        require_same_local_devices, require_same_settings)

try:                                    # jax >= 0.6 exports shard_map at the top level
    from jax import shard_map as _shard_map
except ImportError:                     # pragma: no cover - older jax
    from jax.experimental.shard_map import shard_map as _shard_map

__all__ = ["AXIS", "ShardedData", "Sharded", "ShardedLDA", "bytes_per_device", "initialize",
           "read_process_corpus", "global_fingerprint", "balanced_ranges", "split_documents",
           "make_mesh", "prepare", "init",
           "shard_state", "recount", "place", "sweep", "log_joint", "gather", "module_of",
           "shard_refusal", "process_sum",
           # multi-process plumbing, re-exported from jaxtopics.processes (callers import them here)
           "on_every_process", "require_same_settings", "require_same_local_devices"]

AXIS = "shards"


@dataclass(frozen=True)
class ShardedData:
    """A corpus laid out in shards for a model's sharded sweep (what :func:`prepare` returns).

    Attributes:
        data: the model's ``Data`` with a leading shard axis on every array (padded to equal
            shapes).
        sizes: {name: [shards] int32} the unpadded ``shard_sizes`` of every shard (among them
            the real length of each axis).
        module: the model module (static).
        shapes: the per-shard State fields' padded shapes (static).
        host: this process's shards' Data fields named by the module's ``SHARDING.permuted``
            ({name: [local shards, ...] numpy}), kept on the host (static, compared by
            identity)."""

    data: Any
    sizes: dict
    module: ModuleType = field(metadata={"static": True})
    shapes: tuple = field(default=(), metadata={"static": True})
    host: Any = field(default=None, metadata={"static": True})

    @property
    def num_tokens(self) -> Array:
        """[shards] real tokens of each shard (where the model's layout has a token axis)."""
        return self.sizes["tokens"]

    @property
    def num_docs(self) -> Array:
        """[shards] real documents of each shard."""
        return self.sizes["docs"]

    @property
    def num_shards(self) -> int:
        """The number of shards (over all processes)."""
        return next(iter(self.sizes.values())).shape[0]


jax.tree_util.register_dataclass(ShardedData, data_fields=["data", "sizes"],
                                 meta_fields=["module", "shapes", "host"])


class _HostArrays(dict):
    """Host arrays carried as static metadata of a ShardedData, hashed and compared by a digest
    of their contents taken once: a later fit or resume of the same layout finds its chunk of
    sweeps in jit's cache (compared by identity, every call had compiled it anew), and no lookup
    compares arrays."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        super().__init__(arrays)
        digest = hashlib.blake2b(digest_size=16)
        for name in sorted(self):
            a = np.ascontiguousarray(self[name])
            digest.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
            digest.update(a.data)
        self._digest = digest.digest()

    def __hash__(self) -> int:
        return hash(self._digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _HostArrays) and self._digest == other._digest


def _permuted(module: ModuleType, sdata: ShardedData, name: str) -> np.ndarray | None:
    """[local shards, ...] host slot -> item of per-shard field `name`, or None (corpus order)."""
    layout = _sharding(module).permuted.get(name)
    return None if layout is None or not sdata.host else sdata.host.get(layout)


def module_of(params: Any) -> ModuleType:
    """The model module whose ``Params`` `params` is.

    Args:
        params: a model module's Params.

    Returns:
        The module (e.g. ``models.lda`` for ``lda.Params``)."""
    return kernel_module(sys.modules[type(params).__module__], params)


def _is_sharded(module: ModuleType, name: str) -> bool:
    return name in _sharding(module).fields


def split_documents(corpus: Corpus, num_shards: int) -> list[np.ndarray]:
    """Contiguous document ranges, one per shard, with about equal token counts.

    Args:
        corpus: the documents.
        num_shards: the shards; every shard gets at least one document that holds tokens
            (empty documents are refused only where fewer than `num_shards` documents hold any).

    Returns:
        The document indices of each shard.

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import distributed
        >>> corpus = jt.Corpus.from_texts(["apple banana", "car road", "apple", "car"])
        >>> [ix.tolist() for ix in distributed.split_documents(corpus, 2)]
        [[0, 1], [2, 3]]
    """
    if not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
        raise ParameterError(f"num_shards must be a positive integer, got {num_shards!r}")
    if num_shards > corpus.num_docs:
        whose = ("the corpus's" if jax.process_count() == 1 else
                 f"process {jax.process_index()}'s share of the corpus:")   # its own documents
        raise ParameterError(f"{num_shards} devices (shards, devices={num_shards}) are more than "
                             f"{whose} {corpus.num_docs} "
                             f"document{'s' if corpus.num_docs != 1 else ''}")
    lengths = corpus.doc_lengths
    bounds = balanced_ranges(lengths, num_shards)
    if any(lengths[a:b].sum() == 0 for a, b in zip(bounds[:-1], bounds[1:])):
        # balance the documents that hold tokens instead, each range starting at one of them
        # (empty documents join the range before them); only where the plain rule left a shard
        # without tokens, so that every split that worked before stays the same
        holding = np.flatnonzero(lengths)
        if holding.size < num_shards:
            many = holding.size != 1
            raise ParameterError(f"{num_shards} devices (shards, devices={num_shards}) are more "
                                 f"than the {holding.size} document{'s' if many else ''} that "
                                 f"hold{'' if many else 's'} tokens")
        inner = balanced_ranges(lengths[holding], num_shards)
        bounds = [0, *(int(holding[j]) for j in inner[1:-1]), corpus.num_docs]
    return [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def make_mesh(num_shards: int, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-d mesh over the first `num_shards` devices, its axis named ``AXIS`` ("shards").

    Args:
        num_shards: the devices used.
        devices: the devices to take them from (default: ``jax.devices()``, by process).

    Returns:
        A ``jax.sharding.Mesh``.

    Raises:
        ParameterError: fewer devices than `num_shards` (on a CPU, start the process with
            ``jax.config.update("jax_num_cpu_devices", P)``).

    Example:
        >>> from jaxtopics import distributed
        >>> dict(distributed.make_mesh(1).shape)
        {'shards': 1}
    """
    if devices is None:
        devices = sorted(jax.devices(), key=lambda dv: (dv.process_index, dv.id))
    devices = list(devices)
    if num_shards > len(devices):
        raise ParameterError(
            f"{num_shards} devices (shards) asked for, but {len(devices)} visible; on a CPU start "
            f"the process with jax.config.update('jax_num_cpu_devices', {num_shards})")
    return Mesh(np.array(devices[:num_shards]), (AXIS,))


def shard_refusal(module: ModuleType, params: Any) -> str | None:
    """Why a model cannot run sharded with these settings.

    Args:
        module: the model module.
        params: its Params.

    Returns:
        None where it can; else why not: no sharded kernel, a sampler other than ``parallel``,
        or the module's own ``check_shard_params`` refusing.

    Example:
        >>> from jaxtopics import distributed
        >>> from jaxtopics.models import lda
        >>> distributed.shard_refusal(lda, lda.Params(num_topics=2, sampler="serial"))
        "sharded sweeps run the 'parallel' kernel, got sampler='serial'"
    """
    module = kernel_module(module, params)
    name = module.__name__.rsplit(".", 1)[-1]
    if _sharding(module) is None:
        return f"{name} has no sharded kernel"
    kernels = getattr(module, "SHARDED_SAMPLERS", ("parallel",))
    if getattr(params, "sampler", "parallel") not in kernels:
        return (f"sharded sweeps run the {' or '.join(repr(k) for k in kernels)} kernel, got "
                f"sampler={params.sampler!r}")
    check = getattr(module, "check_shard_params", None)
    try:
        if check is not None:
            check(params)
    except ParameterError as e:
        return str(e)
    return None


def prepare(corpus: Corpus, params: Any, num_shards: int,
            module: ModuleType | None = None) -> ShardedData:
    """Split the corpus into `num_shards` document ranges and lay each out as the model's
    ``prepare`` does, padded to common shapes (``pad_shard``) and stacked along a leading shard
    axis.

    In a multi-process run (``initialize``), `corpus` is this process's own documents
    (``read_process_corpus``) and `num_shards` the global number of shards; this process lays
    out its ``num_shards / process_count`` shards (host arrays), padded to the shapes common to
    all processes. ``place`` then assembles the global arrays.

    Args:
        corpus: the documents (of this process).
        params: the model's Params (checked, and refused where ``shard_refusal`` says why).
        num_shards: the shards over all processes.
        module: the model module (default: the one `params` belong to).

    Returns:
        A :class:`ShardedData` (see :func:`sweep` for the whole flow)."""
    module = module_of(params) if module is None else kernel_module(module, params)
    checked = module.check_params(params) if hasattr(module, "check_params") else None
    params = params if checked is None else checked
    refusal = shard_refusal(module, params)
    if refusal:
        raise ParameterError(refusal)
    processes = jax.process_count()
    if num_shards % processes:
        raise ParameterError(f"{num_shards} shards cannot be split evenly over {processes} processes")
    parts = on_every_process(lambda: [module.prepare(corpus.subset(ix), params)
                                       for ix in split_documents(corpus, num_shards // processes)])
    names = list(module.shard_sizes(parts[0], num_shards))
    local = np.array([[int(module.shard_sizes(p, num_shards)[k]) for p in parts] for k in names],
                     np.int64)
    all_sizes = _allgather_host(local).transpose(1, 0, 2).reshape(len(names), -1)   # [keys, shards]
    summed = _sharding(module).summed_sizes
    top = {k: int(all_sizes[i].sum() if k in summed else all_sizes[i].max())
           for i, k in enumerate(names)}
    padded = [module.pad_shard(p, top) for p in parts]
    host = {}
    for name in set(_sharding(module).permuted.values()):
        if getattr(padded[0], name) is not None:        # kept on the host, not on the devices
            host[name] = np.stack([np.asarray(getattr(p, name)) for p in padded])
            padded = [dataclasses.replace(p, **{name: None}) for p in padded]
    stack = to_device if processes == 1 else np.asarray
    data = jax.tree.map(lambda *a: stack(np.stack([np.asarray(x) for x in a])), *padded)
    probe = jax.eval_shape(lambda d: module.init(jax.random.key(0), d, params),
                           jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), data))
    shapes = tuple((f, tuple(getattr(probe, f).shape)) for f in _sharding(module).fields)
    sizes = {k: to_device(np.asarray(all_sizes[i], np.int32)) for i, k in enumerate(names)}
    return ShardedData(data=data, sizes=sizes, module=module, shapes=shapes, host=_HostArrays(host))


def _local_shards(num_shards: int) -> range:
    """Indices of this process's shards (contiguous: the mesh orders devices by process)."""
    per = num_shards // jax.process_count()
    return range(jax.process_index() * per, (jax.process_index() + 1) * per)


def _shard_axis_of(module: ModuleType, state: Any) -> Any:
    """A State of 0 (per-shard field: leading shard axis) or None (global table), for vmap."""
    return type(state)(*(0 if _is_sharded(module, f) else None for f in state._fields))


def _sum_globals(module: ModuleType, state: Any) -> Any:
    """Per-shard states stacked on axis 0 -> global tables summed over the shards (the
    ``SHARDING.replicated`` fields, equal on every shard, taken from the first; the
    ``SHARDING.max_fields`` their largest value over the shards)."""
    same = _sharding(module).replicated
    largest = _sharding(module).max_fields
    return type(state)(*(x if _is_sharded(module, f) else x[0] if f in same
                         else jnp.max(x, 0) if f in largest
                         else jnp.sum(x, 0, dtype=x.dtype) for f, x in zip(state._fields, state)))


def _init_shards(keys: Array, sdata: ShardedData, params: Any) -> Any:
    module = sdata.module

    def one(key, data, sizes):
        return module.recount_shard(module.init(key, data, params), data, params, sizes)

    return _sum_globals(module, jax.vmap(one)(keys, sdata.data, sdata.sizes))


def _recount_shards(state: Any, sdata: ShardedData, params: Any) -> Any:
    module = sdata.module
    counted = jax.vmap(lambda st, data, sizes: module.recount_shard(st, data, params, sizes),
                       in_axes=(_shard_axis_of(module, state), 0, 0))(state, sdata.data, sdata.sizes)
    return _sum_globals(module, counted)


def _mesh_of(state: Any) -> Mesh | None:
    sharding = getattr(state[0], "sharding", None)
    return sharding.mesh if isinstance(sharding, NamedSharding) else None


def _specs(module: ModuleType, state: Any) -> Any:
    """A State of PartitionSpec: per-shard fields split over the mesh axis, global ones replicated."""
    return type(state)(*(PartitionSpec(AXIS) if _is_sharded(module, f) else PartitionSpec()
                         for f in state._fields))


def recount(state: Any, sdata: ShardedData, params: Any) -> Any:
    """Rebuild every count table of a placed sharded state from its latents (``recount_shard`` on
    every shard; the global tables are summed over the shards, in a multi-process run over all
    processes' tokens).

    Args:
        state: the placed sharded State.
        sdata: its placed ShardedData.
        params: the model's Params.

    Returns:
        The State with its tables recounted, placed as `state`."""
    mesh = _mesh_of(state)
    out = None
    if mesh is not None:
        out = jax.tree.map(lambda spec: NamedSharding(mesh, spec), _specs(sdata.module, state))
    return jax.jit(_recount_shards, static_argnums=2, out_shardings=out)(state, sdata, params)


def init(key: Array, sdata: ShardedData, params: Any) -> Any:
    """The model's ``init`` on every shard (key ``fold_in(key, shard)``; one shard: `key`, so the
    state is the model's ``init`` of the whole corpus), tables recounted without the padding.
    Per-shard fields carry the shard axis; the global tables are the sums over the shards.

    Args:
        key: the PRNG key of the initialisation.
        sdata: the corpus's ShardedData (from :func:`prepare`).
        params: the model's Params.

    Returns:
        The sharded State (not yet placed: :func:`place`)."""
    module = sdata.module
    inits = _sharding(module).inits
    if inits is not None and params.init not in inits:
        raise ParameterError(f"sharded sweeps support init={' or '.join(map(repr, inits))} only, "
                             f"got {params.init!r}")
    shards = sdata.num_shards
    keys = key[None] if shards == 1 else jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(shards))
    return jax.jit(_init_shards, static_argnums=2)(keys, sdata, params)


def shard_state(state: Any, sdata: ShardedData, *, local: bool = False) -> Any:
    """Split a model State in corpus order into the shards of `sdata` (the inverse of
    ``gather``): every per-shard field (``SHARDING.fields``) gets the shard axis and its padded
    shape, padding filled with 0; global tables are kept as they are.

    Args:
        state: a model State in corpus order.
        sdata: the ShardedData to split it into.
        local: multi-process: `state` holds this process's documents only (else the whole
            corpus's, e.g. a loaded model's).

    Returns:
        The sharded State; multi-process: only this process's shards (host arrays for
        ``place``)."""
    module = sdata.module
    sizes = {k: np.asarray(v) for k, v in sdata.sizes.items()}
    shards = _local_shards(sdata.num_shards)
    index = _sharding(module).index_fields
    shapes = dict(sdata.shapes)
    starts = {k: np.concatenate([[0], np.cumsum(v)]) for k, v in sizes.items()}
    out = []
    for f, value in zip(state._fields, state):
        if not _is_sharded(module, f):
            out.append(np.asarray(value) if jax.process_count() > 1 else value)
            continue
        axis, full = _sharding(module).fields[f], np.asarray(value)
        t0 = starts[axis]
        base = t0[shards[0]] if local else 0
        slots = _permuted(module, sdata, f)
        if slots is not None:           # item order[i] of the shard goes into slot i
            pieces = np.zeros(slots.shape, full.dtype)
            for i, s in enumerate(shards):
                rows = full[t0[s] - base:t0[s + 1] - base]
                held = slots[i] < rows.shape[0]
                pieces[i][held] = rows[slots[i][held]]
            out.append(pieces if jax.process_count() > 1 else to_device(pieces))
            continue
        # trailing axes: at least the state's own (a capacity grown since ``prepare``)
        tail = tuple(max(a, b) for a, b in zip(shapes[f][1:], full.shape[1:]))
        pieces = np.zeros((len(shards), shapes[f][0]) + tail, full.dtype)
        for i, s in enumerate(shards):
            rows = full[t0[s] - base:t0[s + 1] - base]
            if f in index:
                rows = rows - (starts[index[f]][s] - (starts[index[f]][shards[0]] if local else 0))
            pieces[(i, slice(0, rows.shape[0])) + tuple(slice(0, n) for n in rows.shape[1:])] = rows
        out.append(pieces if jax.process_count() > 1 else to_device(pieces))
    return type(state)(*out)


def bytes_per_device(state: Any, sdata: ShardedData) -> int:
    """Bytes a device holds of a sharded state: every global table (replicated) and one shard
    of each per-shard field.

    Args:
        state: a sharded State (``shard_state``'s, before ``place``).
        sdata: its ShardedData.

    Returns:
        The bytes, an int."""
    from .memory import state_bytes
    return sum(state_bytes(x) // (x.shape[0] if _is_sharded(sdata.module, f) else 1)
               for f, x in zip(state._fields, state))


def _flat(module: ModuleType, state: Any) -> Any:
    """The per-shard fields with the shard axis merged into their first axis (a global view)."""
    return type(state)(*(x.reshape((-1,) + x.shape[2:]) if _is_sharded(module, f) else x
                         for f, x in zip(state._fields, state)))


def _unflat(module: ModuleType, state: Any, like: Any) -> Any:
    return type(state)(*(x.reshape(y.shape[:2] + x.shape[1:]) if _is_sharded(module, f) else x
                         for f, x, y in zip(state._fields, state, like)))


def sweep(key: Array, state: Any, sdata: ShardedData, params: Any, mesh: Mesh) -> tuple[Any, Any]:
    """One sharded sweep: every shard runs the model's ``sweep(fold_in(key, shard), ...,
    axis_name="shards")`` on its documents (module docstring); with one shard, exactly
    ``sweep(key, ...)``.

    Args:
        key: the sweep's PRNG key.
        state: the placed sharded State.
        sdata: the placed ShardedData.
        params: the model's Params.
        mesh: the mesh they are placed on.

    Returns:
        (state, the sweep's info over all shards).

    Example:
        >>> import jax
        >>> import jaxtopics as jt
        >>> from jaxtopics import distributed
        >>> from jaxtopics.models import lda
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> params = lda.Params(num_topics=2)
        >>> mesh = distributed.make_mesh(1)           # on a CPU: jax_num_cpu_devices for more
        >>> sdata = distributed.prepare(corpus, params, num_shards=1)
        >>> state = distributed.init(jax.random.key(0), sdata, params)
        >>> state, sdata = distributed.place(state, sdata, mesh)
        >>> state, info = distributed.sweep(jax.random.key(1), state, sdata, params, mesh)
        >>> distributed.gather(state, sdata).z.shape             # corpus order (and LDA's dummy)
        (81,)
    """
    return _per_shard(sdata.module.sweep, key, state, sdata, params, mesh)


def _per_shard(fn, key: Array | None, state: Any, sdata: ShardedData, params: Any,
               mesh: Mesh) -> Any:
    """``fn(shard_key, state, data, params, axis_name="shards") -> (state, info)`` on every
    shard (``shard_map``; shard_key = fold_in(key, shard), or `key` itself with one shard; info
    equal on every shard), or with ``key=None`` ``fn(state, data, params, axis_name="shards")
    -> state``."""
    module = sdata.module
    specs = _specs(module, state)
    one_shard = mesh.shape[AXIS] == 1

    def unstack(state, data):
        return (type(state)(*(x[0] if _is_sharded(module, f) else x
                              for f, x in zip(state._fields, state))),
                jax.tree.map(lambda a: a[0], data))

    def stack(state):
        return type(state)(*(x[None] if _is_sharded(module, f) else x
                             for f, x in zip(state._fields, state)))

    if key is None:
        def local(state, data):
            return stack(fn(*unstack(state, data), params, axis_name=AXIS))
        return _shard_map(local, mesh=mesh, in_specs=(specs, PartitionSpec(AXIS)),
                          out_specs=specs, check_vma=False)(state, sdata.data)

    def local_sweep(key, state, data):
        shard_key = key if one_shard else jax.random.fold_in(key, jax.lax.axis_index(AXIS))
        mine, info = fn(shard_key, *unstack(state, data), params, axis_name=AXIS)
        return stack(mine), info

    return _shard_map(local_sweep, mesh=mesh, in_specs=(PartitionSpec(), specs, PartitionSpec(AXIS)),
                      out_specs=(specs, PartitionSpec()), check_vma=False)(key, state, sdata.data)


def log_joint(state: Any, sdata: ShardedData, params: Any) -> Array:
    """The model's collapsed log joint of the whole corpus, from the per-shard tables stacked
    (padding rows are empty and add 0) and the global tables.

    Args:
        state: the sharded State.
        sdata: its ShardedData.
        params: the model's Params.

    Returns:
        float32 [] log p(w, z)."""
    return sdata.module.log_joint(_flat(sdata.module, state), None, params)


def gather(state: Any, sdata: ShardedData) -> Any:
    """The global State in corpus order (host-side concatenation of the shards' real rows, then
    the dummy rows the model's layout ends with; in a multi-process run every process receives
    all shards).

    Args:
        state: the sharded State.
        sdata: its ShardedData.

    Returns:
        The model's State in corpus order (as the one-device chain holds it)."""
    module = sdata.module
    host = _host_value
    sizes = {k: host(v) for k, v in sdata.sizes.items()}
    starts = {k: np.concatenate([[0], np.cumsum(v)]) for k, v in sizes.items()}
    index = _sharding(module).index_fields
    out = []
    for f, value in zip(state._fields, state):
        slots = _permuted(module, sdata, f)
        if slots is not None:
            out.append(_gather_permuted(value, slots, sizes[_sharding(module).fields[f]]))
            continue
        x = host(value)
        if not _is_sharded(module, f):
            out.append(to_device(x))
            continue
        n = sizes[_sharding(module).fields[f]]
        top = int(n.max())
        rows = [x[s, :n[s]] + (starts[index[f]][s] if f in index else 0) for s in range(len(n))]
        out.append(to_device(np.concatenate(rows + [x[-1, top:]]).astype(x.dtype)))
    return type(state)(*out)


def _gather_permuted(value: Array, slots: np.ndarray, n: np.ndarray) -> Array:
    """A per-shard field held in a layout of its own (``SHARDING.permuted``) in corpus order: each
    process puts its own shards' slots back in order (its `slots` stay on its host), the
    processes exchange those, and the shards' real items are concatenated, then a dummy 0."""
    if jax.process_count() == 1:
        mine = np.asarray(value)
    else:                       # this process's shards, in shard order (each held once)
        pieces = {p.index[0].start: p.data for p in value.addressable_shards}
        mine = np.concatenate([np.asarray(pieces[k]) for k in sorted(pieces)])
    top = int(n.max())
    rows = np.zeros((len(mine), top), mine.dtype)
    for i, held_slots in enumerate(slots):
        held = held_slots < top
        rows[i][held_slots[held]] = mine[i][held]
    rows = _allgather_host(rows).reshape((-1, top))
    return to_device(np.concatenate([rows[s, :n[s]] for s in range(len(n))]
                                    + [np.zeros(1, rows.dtype)]))


def place(state: Any, sdata: ShardedData, mesh: Mesh) -> tuple[Any, ShardedData]:
    """Put the shard axis of `state` and `sdata` on the mesh devices, the global tables on all.

    Args:
        state: the sharded State (multi-process: this process's shards, host arrays).
        sdata: its ShardedData (likewise).
        mesh: the mesh (:func:`make_mesh`).

    Returns:
        (state, sdata) on the devices; multi-process: global arrays assembled from every
        process's part (``make_array_from_process_local_data``)."""
    module = sdata.module
    sharded, replicated = NamedSharding(mesh, PartitionSpec(AXIS)), NamedSharding(mesh, PartitionSpec())
    where = [sharded if _is_sharded(module, f) else replicated for f in state._fields]
    if jax.process_count() > 1:
        shards = sdata.num_shards

        def put(x, where):
            x = np.asarray(x)
            shape = x.shape if where is replicated else (shards,) + x.shape[1:]
            return jax.make_array_from_process_local_data(where, x, shape)
    else:
        put = jax.device_put
    state = type(state)(*(put(x, w) for x, w in zip(state, where)))
    sdata = ShardedData(jax.tree.map(lambda a: put(a, sharded), sdata.data),
                        {k: put(v, replicated) for k, v in sdata.sizes.items()},
                        sdata.module, sdata.shapes, sdata.host)
    return state, sdata


@dataclass(frozen=True)
class Sharded:
    """A model module's ``sweep`` / ``log_joint`` (and ``grow``, ``learn`` and the sweep-carry
    hooks ``to_carry`` / ``sweep_carry`` / ``from_carry``, where it has them) bound to a mesh, in the
    signature the driver (``fit.run_chunk``) calls: a drop-in model for sharded states and
    ``ShardedData``.

    Attributes:
        module: the model module.
        mesh: the mesh its states are placed on."""

    module: ModuleType
    mesh: Mesh

    def sweep(self, key: Array, state: Any, sdata: ShardedData, params: Any) -> tuple[Any, Any]:
        """:func:`sweep` on this mesh.

        Args:
            key, state, sdata, params: as in :func:`sweep`.

        Returns:
            (state, info)."""
        return sweep(key, state, sdata, params, self.mesh)

    def log_joint(self, state: Any, sdata: ShardedData, params: Any) -> Array:
        """:func:`log_joint`.

        Args:
            state, sdata, params: as in :func:`log_joint`.

        Returns:
            float32 [] log p(w, z)."""
        return log_joint(state, sdata, params)

    def __getattr__(self, name: str) -> Any:
        if (name in ("grow", "to_carry", "sweep_carry", "from_carry", "learn")
                and hasattr(self.module, name)):
            return getattr(self, "_" + name)
        if name == "traced_priors" and hasattr(self.module, name):     # replicated settings
            return self.module.traced_priors
        if name == "invariants" and hasattr(self.module, name):
            return self._invariants
        raise AttributeError(name)

    def _invariants(self, state: Any, sdata: ShardedData, params: Any) -> dict:
        """The model's ``invariants`` of the global view (as :func:`log_joint` scores it: the
        per-shard tables stacked, padding counted nowhere), without Data: the tables are
        checked against each other."""
        return self.module.invariants(_flat(self.module, state), None, params)

    def _learn(self, state: Any, sdata: ShardedData, params: Any, t: Array) -> Any:
        """The model's ``learn`` (settings fitted to the state, e.g. LDA's priors) on every
        shard, with ``axis_name``: the documents' statistics are summed over the shards. A chain
        that learns nothing (the module's ``learns(params)`` is False) is left as it is."""
        learns = getattr(self.module, "learns", None)
        if learns is not None and not learns(params):
            return state

        def learn(state, data, params, axis_name):
            return self.module.learn(state, data, params, t, axis_name=axis_name)
        return _per_shard(learn, None, state, sdata, params, self.mesh)

    def _to_carry(self, state: Any, sdata: ShardedData, params: Any) -> Any:
        return _per_shard(self.module.to_carry, None, state, sdata, params, self.mesh)

    def _sweep_carry(self, key: Array, carry: Any, sdata: ShardedData, params: Any) -> Any:
        return _per_shard(self.module.sweep_carry, key, carry, sdata, params, self.mesh)

    def _from_carry(self, carry: Any, sdata: ShardedData, params: Any) -> Any:
        def back(carry, data, params, axis_name):
            return self.module.from_carry(carry, data, params)
        return _per_shard(back, None, carry, sdata, params, self.mesh)

    def _grow(self, state: Any, sdata: ShardedData, params: Any) -> Any:
        """The model's ``grow`` (more capacity in the global tables) of the global view of the
        sharded state, with the state's layout kept. Called outside jit, as the driver grows a
        one-device state: how much a model grows may depend on the state's values."""
        shardings = jax.tree.map(lambda spec: NamedSharding(self.mesh, spec),
                                 _specs(self.module, state))
        grown = self.module.grow(_flat(self.module, state), sdata, params)
        return jax.jit(partial(_unflat, self.module), out_shardings=shardings)(grown, state)


class ShardedLDA(Sharded):
    """``Sharded(models.lda, mesh)`` (kept for older code; the rest of this module names no
    model).

    Args:
        mesh: the mesh."""

    def __init__(self, mesh: Mesh):
        from .models import lda
        super().__init__(lda, mesh)
