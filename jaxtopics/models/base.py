"""The model contract in code: what a model module provides, as ``typing.Protocol``s.

Every module in ``jaxtopics.models`` is a set of pure functions over NamedTuples (``Params``,
``State``, ``SweepInfo``) and satisfies :class:`ModelModule`; optional capabilities are their own
protocols (:class:`Growable`, :class:`Carried`, :class:`Learning`, :class:`Shardable`,
:class:`HeldOutPrior`, :class:`HeldOutExact`, :class:`Invariants`), and a shardable module
declares its sharding settings in one constant, ``SHARDING``, a :class:`Sharding` NamedTuple
read through :func:`sharding`. ``check_module`` lists what a module lacks;
``tests/test_model_contract.py`` runs it over every registered model, so adding a model ("one
module and a short estimator class") is checked by these types rather than by prose.
The shape follows BlackJAX's ``base.py`` and optax's ``_src/base.py``.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Mapping, NamedTuple, Protocol, runtime_checkable

__all__ = ["ModelModule", "Growable", "Carried", "Learning", "TracedPriors", "Shardable", "HeldOutPrior",
           "HeldOutExact", "Invariants", "Sharding", "sharding", "kernel_module", "capabilities",
           "check_module"]


@runtime_checkable
class ModelModule(Protocol):
    """Required of every model module.

    ``Params`` (hashable NamedTuple: static under jit), ``State`` (NamedTuple of arrays, a pytree),
    ``SweepInfo`` (NamedTuple; ``changed`` counts the units whose assignment moved), ``SAMPLERS``
    (kernel names; ``params.sampler`` picks one), and the pure functions below."""

    Params: type
    State: type
    SweepInfo: type
    SAMPLERS: tuple[str, ...]

    def check_params(self, params: Any) -> Any: ...                     # validated params
    def prepare(self, corpus: Any, params: Any) -> Any: ...              # device layout (Data)
    def init(self, key: Any, data: Any, params: Any) -> Any: ...         # initial State
    def sweep(self, key: Any, state: Any, data: Any, params: Any) -> Any: ...   # (State, SweepInfo)
    def log_joint(self, state: Any, data: Any, params: Any) -> Any: ...  # collapsed log p(w, z)
    def estimate(self, state: Any, params: Any) -> Any: ...              # {"theta", "phi", ...}
    def fold_in(self, key: Any, state: Any, new_data: Any, params: Any, num_sweeps: int) -> Any: ...
    def assignments(self, state: Any) -> Any: ...                        # topic of every token
    def state_shapes(self, params: Any, num_tokens: int, num_docs: int, num_words: int) -> Any: ...
    def check_state(self, state: Any, params: Any) -> Any: ...          # problem text or None


@runtime_checkable
class Growable(Protocol):
    """A nonparametric model with static capacities: ``sweep``'s info has ``overflow``, and the
    driver calls ``grow`` outside jit (doubling a capacity) and redoes the sweep."""

    def grow(self, state: Any, data: Any, params: Any) -> Any: ...


@runtime_checkable
class Carried(Protocol):
    """Sweeps that run on the state in a layout of their own, converted once per jitted chunk."""

    def to_carry(self, state: Any, data: Any, params: Any) -> Any: ...
    def sweep_carry(self, key: Any, carry: Any, data: Any, params: Any) -> Any: ...
    def from_carry(self, carry: Any, data: Any, params: Any) -> Any: ...


@runtime_checkable
class Learning(Protocol):
    """Settings learned from the chain (priors), kept in the State: ``learn`` runs after sweep t
    (a module may add ``learns(params) -> bool``, False when the chain learns nothing)."""

    def learn(self, state: Any, data: Any, params: Any, t: Any) -> Any: ...


@runtime_checkable
class TracedPriors(Protocol):
    """Hyper-parameters that move along the chain (learned priors; sampled concentrations),
    recorded at every trace point: ``traced_priors(state, params)`` -> {name: float32 array},
    {} when they are fixed for these params."""

    def traced_priors(self, state: Any, params: Any) -> dict: ...


@runtime_checkable
class Shardable(Protocol):
    """A ``parallel`` kernel that runs sharded over devices (``jaxtopics.distributed``): ``sweep``
    also takes ``axis_name=``; the settings are the module's ``SHARDING`` (:func:`sharding`)."""

    SHARDING: Sharding

    def shard_sizes(self, data: Any, num_shards: int) -> Any: ...
    def pad_shard(self, data: Any, sizes: Any) -> Any: ...
    def recount_shard(self, state: Any, data: Any, params: Any, sizes: Any) -> Any: ...


@runtime_checkable
class HeldOutPrior(Protocol):
    """Left-to-right held-out likelihood (``jaxtopics.evaluation``): the prior of a new document's
    topic proportions and log phi (LDA's alpha is the default where a module lacks it)."""

    def held_out_prior(self, state: Any, params: Any) -> Any: ...


@runtime_checkable
class HeldOutExact(Protocol):
    """An exact held-out likelihood per document (one cluster per document: DMM, DPMM)."""

    def held_out_exact(self, state: Any, new_data: Any, params: Any) -> Any: ...


@runtime_checkable
class Invariants(Protocol):
    """What the driver checks on device after every jitted chunk of sweeps (``fit.run_chunk``):
    ``invariants(state, data, params)`` -> {name: bool [] array}, True where the invariant
    holds; a name says the table and the rule ("word_topic: non-negative", "topic: sums to the
    tokens"). Cheap (sums and signs of the count tables, no recount from the latents). `data`
    is None for the global view of a sharded state (``distributed.Sharded``): the tables are
    then checked against each other only. A broken one stops the run (``InvariantError``)."""

    def invariants(self, state: Any, data: Any, params: Any) -> dict: ...


class Sharding(NamedTuple):
    """How a shardable module's State is split over devices.

    fields: per-shard State fields -> the axis each runs along ("tokens", "docs", "sentences");
    every other State field is a global table, replicated and kept in step. index_fields:
    per-shard fields holding positions along an axis. replicated: global fields that are
    settings (equal on every shard, never summed). max_fields: global labels of slots, combined
    by their largest value. permuted: per-shard fields kept in a kernel layout -> the Data field
    mapping its slots to items. inits: the ``Params.init`` values a sharded run accepts (None:
    all). summed_sizes: Data sizes that bound global quantities (summed over shards)."""

    fields: Mapping[str, str]
    index_fields: Mapping[str, str] = {}
    replicated: tuple[str, ...] = ()
    max_fields: tuple[str, ...] = ()
    permuted: Mapping[str, str] = {}
    inits: tuple[str, ...] | None = None
    summed_sizes: tuple[str, ...] = ()


def kernel_module(module: ModuleType, params: Any) -> ModuleType:
    """The module whose kernel runs `params`: ``module.kernel_module(params)`` where a model
    keeps its kernels in several modules that share one Params (HDP: the direct-assignment
    kernels in ``hdp_direct``, the CRF's in ``hdp``), else `module` itself."""
    pick = getattr(module, "kernel_module", None)
    return module if pick is None else pick(params)


def sharding(module: ModuleType) -> Sharding | None:
    """The module's sharding settings (its ``SHARDING`` constant), or None when not shardable
    (a module is shardable exactly when it declares ``SHARDING``)."""
    return getattr(module, "SHARDING", None)


_CAPABILITIES = {"growable": Growable, "carried": Carried, "learning": Learning,
                 "traced_priors": TracedPriors, "shardable": Shardable, "held_out_prior": HeldOutPrior,
                 "held_out_exact": HeldOutExact, "invariants": Invariants}


def capabilities(module: ModuleType) -> frozenset[str]:
    """Names of the optional capabilities the module provides (keys of ``_CAPABILITIES``)."""
    return frozenset(name for name, proto in _CAPABILITIES.items() if isinstance(module, proto)
                     and (name != "shardable" or sharding(module) is not None))


def _parameters(fn: Any) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def check_module(module: ModuleType) -> list[str]:
    """What `module` lacks or gets wrong against the contract (empty: it conforms)."""
    problems = [f"missing {name}" for name in _members(ModelModule) if not hasattr(module, name)]
    if problems:
        return problems
    for name in ("Params", "State", "SweepInfo"):
        cls = getattr(module, name)
        if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
            problems.append(f"{name} is not a NamedTuple")
    if "changed" not in getattr(module.SweepInfo, "_fields", ()):
        problems.append("SweepInfo has no 'changed' field")
    if _parameters(module.sweep)[:4] != ["key", "state", "data", "params"]:
        problems.append(f"sweep takes {_parameters(module.sweep)}, not (key, state, data, params, ...)")
    if isinstance(module, Growable) and "overflow" not in module.SweepInfo._fields:
        problems.append("grow without SweepInfo.overflow (the driver cannot tell when to grow)")
    if isinstance(module, Invariants) and _parameters(module.invariants)[:3] != ["state", "data", "params"]:
        problems.append(f"invariants takes {_parameters(module.invariants)}, not (state, data, params)")
    shard = sharding(module)
    if shard is not None:
        if not isinstance(module, Shardable):
            problems.append("SHARDING without shard_sizes / pad_shard / recount_shard")
        if not isinstance(shard, Sharding):
            problems.append(f"SHARDING is a {type(shard).__name__}, not a base.Sharding")
            return problems
        if "axis_name" not in inspect.signature(module.sweep).parameters:
            problems.append("SHARDING, but sweep takes no axis_name")
        state_fields = set(module.State._fields)
        for what, names in (("SHARDING.fields", shard.fields),
                            ("SHARDING.index_fields", shard.index_fields),
                            ("SHARDING.replicated", shard.replicated),
                            ("SHARDING.max_fields", shard.max_fields),
                            ("SHARDING.permuted", shard.permuted)):
            unknown = set(names) - state_fields
            if unknown:
                problems.append(f"{what} names {sorted(unknown)}, not State fields")
        bad_axes = set(shard.fields.values()) - {"tokens", "docs", "sentences"}
        if bad_axes:
            problems.append(f"SHARDING.fields axes {sorted(bad_axes)} (tokens, docs or sentences)")
    return problems


def _members(proto: type) -> list[str]:
    return [name for name in proto.__dict__.get("__annotations__", {})] + [
        name for name, value in proto.__dict__.items() if callable(value) and not name.startswith("_")]
