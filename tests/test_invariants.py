"""The driver's on-device invariant check (``fit.run_chunk``, ``models.base.Invariants``): after
every jitted chunk the count tables must be non-negative and sum to what the model counts, and
the log joint must be finite; a broken state stops the run with an InvariantError naming the
sweep and the table, before the state is kept, traced or checkpointed. A normal run is the same
chain, bitwise, with and without the check (it only reads)."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import fit
from jaxtopics.datasets import synthetic_lda
from jaxtopics.errors import InvariantError, JaxTopicsError
from jaxtopics.estimators import MODELS
from jaxtopics.models import base

#: small settings of every model (few blocks, one split-merge move: cheap to compile and run)
SETTINGS = {"lda": dict(num_topics=3, num_blocks=4), "slda": dict(num_topics=3, num_blocks=4),
            "ptm": dict(num_topics=3, num_pseudo_docs=3, num_blocks=4),
            "dmm": dict(num_clusters=4, num_blocks=4), "dpmm": dict(num_blocks=4),
            "dpmrm": dict(num_blocks=4), "hdp": dict(num_blocks=4, split_merge_steps=1)}
#: a table each model's sweep keeps, the cell the broken sweep corrupts
BROKEN = {"lda": ("word_topic", (0, 0)), "dmm": ("cluster_docs", (0,)), "hdp": ("word_topic", (0, 0))}


def _corpus(name: str) -> jt.Corpus:
    corpus = synthetic_lda(num_docs=16, num_words=30, num_topics=3, mean_doc_length=12,
                           seed=2).corpus
    docs = [[corpus.vocab[w] for w in corpus.word_ids[a:b]]
            for a, b in zip(corpus.doc_offsets[:-1], corpus.doc_offsets[1:])]
    if name == "slda":
        return jt.Corpus.from_token_lists([[d[i:i + 4] for i in range(0, len(d), 4)] for d in docs],
                                          sentences=True)
    if name == "dpmrm":
        return jt.Corpus.from_token_lists(docs, labels=[["a", "b"][: 1 + d % 2] for d in range(16)])
    return corpus


def _start(name: str, module=None):
    """(module, params, data, state, chain_key, num_tokens) of a fresh chain of `name`."""
    est = MODELS[name](**SETTINGS[name])
    module = module or est.module
    corpus = _corpus(name)
    data = module.prepare(corpus, est.params)
    init_key, chain_key = fit.chain_keys(0)
    return module, est.params, data, module.init(init_key, data, est.params), chain_key, corpus.num_tokens


def _broken(module, field: str, cell: tuple, log_joint_nan: bool = False) -> types.ModuleType:
    """`module` with a sweep that subtracts 1000 from `cell` of the State's table `field` (or,
    with `log_joint_nan`, a NaN log joint): a kernel defect, as the driver meets it. The carry
    hooks are left out, so the driver calls this sweep."""
    proxy = types.ModuleType(module.__name__)
    proxy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")
                           and k not in ("to_carry", "sweep_carry", "from_carry")})

    def sweep(key, state, data, params):
        state, info = module.sweep(key, state, data, params)
        table = getattr(state, field)
        return state._replace(**{field: table.at[cell].add(-1000)}), info
    proxy.sweep = sweep
    if log_joint_nan:
        proxy.sweep = module.sweep
        proxy.log_joint = lambda state, data, params: jnp.float32(jnp.nan)
    return proxy


def _assert_stopped(error: InvariantError, name: str, first: int, last: int, field: str) -> None:
    """`error` stops the chunk of sweeps first..last of model `name` at its end, naming `field`;
    a growable model's chunk also ends early where a sweep needs more capacity (the broken state
    is caught there, before it is grown)."""
    assert isinstance(error, JaxTopicsError)
    growable = isinstance(MODELS[name].module, base.Growable)
    assert error.sweep == last or (growable and first <= error.sweep < last), str(error)
    chunk = f" (the chunk of sweeps {first}-{error.sweep})" if error.sweep > first else ""
    assert f"the {name} state after sweep {error.sweep}{chunk} broke" in str(error)
    assert any(f.startswith(f"{field}:") for f in error.failed), error.failed


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_sweep_that_breaks_a_count_stops_the_run_naming_the_sweep_and_table(name):
    """10 good sweeps, then a kernel that corrupts a count in every sweep: the chunk of sweeps
    11-15 ends in an InvariantError naming sweep 15 and the table, and neither on_chunk nor
    on_checkpoint sees that state. (A growable model's chunk also ends where a sweep needs more
    capacity: HDP's broken state is caught there, before it is grown.)"""
    module, params, data, state, key, n = _start(name)
    state, _ = fit.run_sweeps(module, params, data, state, key, start=0, num_sweeps=10,
                              num_tokens=n, progress=False)
    field, cell = BROKEN[name]
    seen = []
    with pytest.raises(InvariantError) as caught:
        fit.run_sweeps(_broken(module, field, cell), params, data, state, key, start=10,
                       num_sweeps=10, num_tokens=n, eval_every=5, progress=False,
                       checkpoint_every=5, on_checkpoint=lambda *a: seen.append(("save", a[1])),
                       on_chunk=lambda *a: seen.append(("chunk", a[1])))
    _assert_stopped(caught.value, name, 11, 15, field)
    assert seen == []


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_negative_count_injected_before_a_chunk_stops_the_run(name):
    """The real kernels, from a state with a negative count: whether a sweep keeps the cell
    negative or the table's sums off, the chunk after it raises, naming the table."""
    module, params, data, state, key, n = _start(name)
    state, _ = fit.run_sweeps(module, params, data, state, key, start=0, num_sweeps=5,
                              num_tokens=n, progress=False)
    field, cell = BROKEN[name]
    state = state._replace(**{field: getattr(state, field).at[cell].set(-7)})
    with pytest.raises(InvariantError) as caught:
        fit.run_sweeps(module, params, data, state, key, start=5, num_sweeps=5, num_tokens=n,
                       progress=False)
    _assert_stopped(caught.value, name, 6, 10, field)


def test_a_non_finite_log_joint_stops_the_run():
    module, params, data, state, key, n = _start("lda")
    with pytest.raises(InvariantError, match=r"after sweep 2 \(the chunk of sweeps 1-2\).*log "
                                             r"joint: finite \(it is nan\)"):
        fit.run_sweeps(_broken(module, "topic", (0,), log_joint_nan=True), params, data, state,
                       key, start=0, num_sweeps=4, num_tokens=n, eval_every=2, progress=False)


def test_no_checkpoint_is_written_from_a_broken_state(tmp_path, monkeypatch):
    """Through the facade: a kernel that breaks a count from the first sweep never reaches the
    checkpoint of sweep 5; the file is not written."""
    monkeypatch.setattr(jt.DMM, "module", _broken(jt.DMM.module, "cluster_docs", (0,)))
    path = tmp_path / "run.jtm"
    with pytest.raises(InvariantError, match=r"dmm state after sweep 5 \(the chunk of sweeps 1-5\)"):
        jt.DMM(**SETTINGS["dmm"]).fit(_corpus("dmm"), num_sweeps=10, eval_every=10,
                                      checkpoint_path=path, checkpoint_every=5, progress=False)
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_chains_in_one_loop_are_checked_each():
    module, params, data, state, key, n = _start("lda")
    broken = _broken(module, "doc_topic", (0, 0))
    states = jax.tree.map(lambda a: jnp.stack([a, a]), state)
    keys = jnp.stack([fit.chain_keys(0)[1], fit.chain_keys(1)[1]])
    with pytest.raises(InvariantError, match=r"chain 0: the lda state after sweep 3 .*doc_topic"):
        fit.run_chains(broken, params, data, states, keys, num_sweeps=3, num_tokens=n)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_normal_run_is_the_same_chain_bitwise_with_and_without_the_check(name):
    """Every model declares its invariants, and they hold on its chain (with and without Data:
    the sharded view checks a subset); the check only reads: states and traced log joints equal
    bitwise (HDP and DPMM grow on the way, so the check runs on grown states too)."""
    assert isinstance(MODELS[name].module, base.Invariants)
    runs = []
    for invariants in (True, False):
        module, params, data, state, key, n = _start(name)
        state, trace = fit.run_sweeps(module, params, data, state, key, start=0, num_sweeps=6,
                                      num_tokens=n, eval_every=3, progress=False,
                                      invariants=invariants)
        runs.append((jax.device_get(state), [p.log_joint_per_token for p in trace]))
    (checked, trace_checked), (plain, trace_plain) = runs
    assert trace_checked == trace_plain
    holds = jax.device_get(module.invariants(state, data, params))
    assert holds and all(bool(v) for v in holds.values()), holds
    without_data = jax.device_get(module.invariants(state, None, params))
    assert set(without_data) <= set(holds) and all(bool(v) for v in without_data.values())
    for field, a, b in zip(checked._fields, checked, plain):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=field)


def test_a_sharded_run_checks_its_global_view():
    from jaxtopics import distributed as dist
    from jaxtopics.models import lda

    params = MODELS["lda"](**SETTINGS["lda"]).params
    mesh = dist.make_mesh(2)
    sdata = dist.prepare(_corpus("lda"), params, 2)
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    model = dist.Sharded(lda, mesh)
    assert isinstance(model, base.Invariants)
    holds = jax.device_get(model.invariants(state, sdata, params))
    assert "word_topic: sums over words to topic" in holds and all(map(bool, holds.values()))
    broken = state._replace(topic=state.topic.at[0].add(1))
    assert not bool(jax.device_get(model.invariants(broken, sdata, params))[
        "word_topic: sums over words to topic"])


def test_invariant_error_pickles():
    import pickle

    error = pickle.loads(pickle.dumps(InvariantError("broken", sweep=3, failed=("topic: x",))))
    assert (str(error), error.sweep, error.failed) == ("broken", 3, ("topic: x",))
