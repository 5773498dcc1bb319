"""DP-MRM's sharded parallel kernel (``jaxtopics.distributed``, ``dpmrm.sweep(..., axis_name=)``)
on the four CPU devices conftest.py creates:

- one device (``devices=1``) is bitwise the default run, capacity growth included;
- after a sharded fit the gathered global tables are the counts of the gathered latents, every
  token's topic belongs to a label of its document, and the sharded log joint is the
  one-device log joint of the gathered state;
- the same seed gives the same chain, and a saved and resumed sharded run equals the straight
  one, with topic and table slots grown (grow + redo) on the way;
- ``distributed.init`` / ``sweep`` / ``recount`` on unequal shards count no padding;
- quality: the sharded chains against the exact kernel's (two-sided) are in
  test_kernel_quality.py, on ``_planted()``.

The shared data holds no multi-label corpus (Reuters, Tweet and News-T carry one label per
document, Lee none), so the corpus is synthetic: label-specific planted topics (``_planted``).
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics import distributed as dist
from jaxtopics.models import dpmrm

CPUS = jax.devices("cpu")
needs_4_default_devices = pytest.mark.skipif(len(jax.devices()) < 4,
                                             reason="fewer than 4 devices on the default backend")


@functools.lru_cache(maxsize=None)
def _planted(num_docs: int = 120, labels: int = 4, per_label: int = 2, words: int = 10,
             shared: int = 20, mean_length: int = 30, seed: int = 0) -> jt.Corpus:
    """Documents with 1-2 of `labels` labels; label l owns `per_label` topics, each with 85 % of
    its mass on its own `words` words and 15 % on `shared` words common to all topics. A
    document mixes its labels (psi ~ Dir(1)) and prefers one topic per label (Dir(0.1)).
    Lengths vary (Poisson), so the shards are unequal."""
    rng = np.random.default_rng(seed)
    v = labels * per_label * words + shared
    phi = np.zeros((labels * per_label, v))
    for t in range(labels * per_label):
        phi[t, t * words:(t + 1) * words] = 0.85 / words
        phi[t, v - shared:] = 0.15 / shared
    docs, sets = [], []
    for _ in range(num_docs):
        own = np.sort(rng.choice(labels, size=int(rng.integers(1, 3)), replace=False))
        psi = rng.dirichlet(np.ones(own.size))
        theta = rng.dirichlet(np.full(per_label, 0.1), size=own.size)
        n = max(2, int(rng.poisson(mean_length)))
        r = rng.choice(own.size, size=n, p=psi)
        topic = own[r] * per_label + np.array([rng.choice(per_label, p=theta[x]) for x in r])
        docs.append([f"w{rng.choice(v, p=phi[t])}" for t in topic])
        sets.append([f"L{x}" for x in own])
    return jt.Corpus.from_token_lists(docs, labels=sets, label_names=[f"L{x}" for x in range(labels)])


def _growing() -> jt.DPMRM:
    """16 topic slots and 8 table slots per document to start with: a fit on ``_planted()``
    soon needs more and grows both (to 32 and 16; every test here ends at those capacities, so
    the compiled sweeps are shared)."""
    return jt.DPMRM(alpha=1.0, beta=0.05, gamma=1.0, eta=1.0, num_blocks=8, topic_capacity=16,
                    table_capacity=8, initial_topics=1)


def _same_state(a, b) -> None:
    for name, x, y in zip(a._fields, a, b):
        assert np.shape(x) == np.shape(y), name
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def _trace(model: jt.FittedModel) -> list[tuple]:
    return [tuple(p[:3]) for p in model.trace]


RUN = dict(num_sweeps=8, seed=1, eval_every=4, progress=False)


@functools.lru_cache(maxsize=None)
def _straight(devices: int | None) -> jt.FittedModel:
    return _growing().fit(_planted(), **RUN, devices=devices)


def _grown(model: jt.FittedModel) -> bool:
    state = model.state
    return state.word_topic.shape[1] > 16 and state.dish.shape[1] > 8


def test_one_device_is_the_default_run_with_growth():
    """``devices=1`` runs the sharded code path (one shard, the collectives over one device):
    the chain, the trace and the growth are bitwise the plain run's."""
    plain, one = _straight(None), _straight(1)
    assert _grown(plain)
    _same_state(plain.state, one.state)
    assert _trace(plain) == _trace(one)


@needs_4_default_devices
def test_four_devices_keep_counts_consistent():
    corpus = _planted()
    model = _straight(4)
    assert _grown(model) and model.shards == 4
    state, params = model.state, model.params
    data = dpmrm.prepare(corpus, params)
    _same_state(state, dpmrm.rebuild(state, data, params))
    # a token's topic is owned by one of its document's labels (the r_j mask, sharded)
    tok_label = model.topic_label[model.assignments]
    doc_sets = [{corpus.label_names.index(x) for x in s} for s in corpus.label_sets]
    assert all(tok_label[i] in doc_sets[d] for i, d in enumerate(corpus.doc_index))
    # the sharded log joint (the trace) is the one-device log joint of the gathered state
    one_device = float(dpmrm.log_joint(state, data, params)) / corpus.num_tokens
    assert model.trace[-1].log_joint_per_token == pytest.approx(one_device, rel=1e-5)


@needs_4_default_devices
def test_four_devices_reproducible_and_resume_bitwise(tmp_path):
    """Same seed, same chain; another seed, another chain; 4 sweeps + save + load + 4 more
    sweeps on 4 devices is the straight 8-sweep chain, though both capacities grew."""
    corpus, straight = _planted(), _straight(4)
    again = _growing().fit(corpus, **RUN, devices=4)
    _same_state(straight.state, again.state)
    assert _trace(straight) == _trace(again)
    other = _growing().fit(corpus, **(RUN | dict(seed=2)), devices=4)
    assert not np.array_equal(np.asarray(straight.state.table), np.asarray(other.state.table))
    part = _growing().fit(corpus, **(RUN | dict(num_sweeps=4)), devices=4)
    assert _grown(part)                                  # grown before the save
    part.save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert loaded.shards == 4
    resumed = loaded.resume(corpus, 4, eval_every=4, progress=False)     # on its 4 devices
    _same_state(straight.state, resumed.state)
    assert _trace(straight) == _trace(resumed)


def test_low_level_init_and_recount_count_no_padding():
    """distributed.init / sweep / recount on 4 unequal shards: the gathered tables are the counts
    of the gathered latents (padding tokens and documents counted nowhere; the owner of a topic
    slot combined over the shards, not summed)."""
    corpus = _planted()
    params = _growing().params._replace(topic_capacity=32, table_capacity=16)   # no growth here
    mesh = dist.make_mesh(4, CPUS)
    sdata = dist.prepare(corpus, params, 4)
    assert sdata.module is dpmrm and len(set(np.asarray(sdata.num_tokens))) > 1
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    data = dpmrm.prepare(corpus, params)
    start = dist.gather(state, sdata)
    _same_state(start, dpmrm.rebuild(start, data, params))
    assert int(np.sum(np.asarray(start.topic))) == corpus.num_tokens
    state, info = dist.sweep(jax.random.key(1), state, sdata, params, mesh)
    assert int(info.changed) > 0 and not bool(info.overflow)
    merged = dist.gather(state, sdata)
    _same_state(merged, dpmrm.rebuild(merged, data, params))
    _same_state(merged, dist.gather(dist.recount(state, sdata, params), sdata))
    lj = float(dpmrm.log_joint(merged, data, params))
    assert float(dist.log_joint(state, sdata, params)) == pytest.approx(lj, rel=1e-5)
