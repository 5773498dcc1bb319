"""Sharded parallel sweeps of HDP (``jaxtopics.distributed``) on the four CPU devices conftest.py
creates, through the facade (``fit(..., devices=P)``), on Lee news texts, for both blocked
kernels (``kernel``: the default direct-assignment "parallel" and the CRF's "crf"):

- one device is bitwise the unsharded parallel kernel (split-merge and concentrations on);
- after a sharded fit that grows its capacities, the gathered global tables are the counts of
  the gathered seating, and the sharded log joint is the one-device log joint of that state;
- the same seed gives the same chain, and a saved and resumed sharded run equals the straight one.

Quality: sharded chains (with split-merge moves) are held two-sided to the exact kernel's, from a
common state, in test_hdp_quality.py.

Every run shares one parameter set (or, for growth, one more), so that the file compiles the
sweep a handful of times only (a compile, not the sweeps, is what costs here).
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jaxtopics as jt
from jaxtopics import distributed as dist
from jaxtopics.errors import ParameterError
from jaxtopics.models import hdp
from jaxtopics.models.base import kernel_module

needs_4_default_devices = pytest.mark.skipif(len(jax.devices()) < 4,
                                             reason="fewer than 4 devices on the default backend")

DOCS = 60                     # Lee: 5707 tokens
# split-merge moves and concentration draws on in every run; capacities that never run out...
SETTINGS = dict(num_blocks=16, split_merge_steps=3, resample_concentrations=True)
ROOMY = dict(SETTINGS, topic_capacity=64, table_capacity=32)
# ...except here: 20 topics and 6 tables per document, grown once on the way (to 40 and 12;
# Lee chains hold ~29 topics and <= 5 tables per document after 8 sweeps, 27-35 topics later)
TIGHT = dict(SETTINGS, topic_capacity=20, table_capacity=6)


@pytest.fixture(scope="module", params=["parallel", "crf"])
def kernel(request):
    return request.param


@pytest.fixture(scope="module")
def corpus():
    from conftest import SHARED_DATA
    from jaxtopics.datasets import load_shared

    try:
        return load_shared("lee", root=SHARED_DATA).subset(np.arange(DOCS))
    except FileNotFoundError:
        pytest.skip("shared data set lee not present")


def _same_state(a, b) -> None:
    for name, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def _lj(model: jt.FittedModel) -> list[float]:
    return [p.log_joint_per_token for p in model.trace]


def test_one_device_is_the_default_run(corpus, kernel):
    a = jt.HDP(**ROOMY, sampler=kernel).fit(corpus, num_sweeps=4, seed=3, eval_every=2,
                                            progress=False)
    b = jt.HDP(**ROOMY, sampler=kernel).fit(corpus, num_sweeps=4, seed=3, eval_every=2,
                                            progress=False, devices=1)
    _same_state(a.state, b.state)
    assert _lj(a) == _lj(b)
    assert [p.changed_fraction for p in a.trace] == [p.changed_fraction for p in b.trace]


def test_sequential_sampler_is_refused(corpus):
    for exact, blocked in (("sequential", "parallel"), ("crf_sequential", "crf")):
        with pytest.raises(ParameterError, match=f"'{blocked}' kernel"):
            jt.HDP(sampler=exact).fit(corpus, num_sweeps=1, devices=2)
        params = hdp.Params(sampler=exact)
        with pytest.raises(ParameterError, match=f"'{blocked}' kernel"):
            kernel_module(hdp, params).check_shard_params(params)


@needs_4_default_devices
def test_low_level_init_and_recount_count_no_padding(corpus, kernel):
    """distributed.init / recount on 4 unequal shards: the gathered tables are the counts of the
    gathered seating (padding tokens and documents counted nowhere), alpha and gamma the
    chain's (replicated, not summed over the shards)."""
    params = hdp.check_params(hdp.Params(**ROOMY, alpha=0.7, gamma=1.3, sampler=kernel))
    module = kernel_module(hdp, params)
    mesh = dist.make_mesh(4, jax.devices("cpu"))
    sdata = dist.prepare(corpus, params, 4)
    assert len(set(np.asarray(sdata.num_tokens))) > 1
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    data = module.prepare(corpus, params)
    merged = dist.gather(state, sdata)
    _same_state(merged, module.rebuild(merged, data, params))
    _same_state(merged, dist.gather(dist.recount(state, sdata, params), sdata))
    assert float(merged.alpha) == pytest.approx(0.7) and float(merged.gamma) == pytest.approx(1.3)
    assert int(merged.topic.sum()) == corpus.num_tokens
    lj = float(module.log_joint(merged, data, params))
    assert float(dist.log_joint(state, sdata, params)) == pytest.approx(lj, rel=1e-5)


@pytest.fixture(scope="module")
def tight_runs(corpus, kernel, tmp_path_factory):
    """4-device runs that grow: straight (8 sweeps), again (same seed), part (4) saved and
    resumed (4 more)."""
    run = dict(seed=1, eval_every=4, progress=False, devices=4)
    # direct assignment opens topics more slowly from one (its moves run in a quarter of the
    # sweeps): it starts from 4 topic slots, so that it grows too
    est = jt.HDP(**{**TIGHT, "topic_capacity": 4 if kernel == "parallel" else 20}, sampler=kernel)
    straight = est.fit(corpus, num_sweeps=8, **run)
    again = est.fit(corpus, num_sweeps=8, **run)
    part = est.fit(corpus, num_sweeps=4, **run)
    path = tmp_path_factory.mktemp("hdp") / "m.jtm"
    part.save(path)
    resumed = jt.load(path).resume(corpus, 4, eval_every=4, progress=False, devices=4)
    return straight, again, resumed


@needs_4_default_devices
def test_four_devices_keep_counts_consistent(corpus, tight_runs):
    model = tight_runs[0]
    state = model.state
    assert state.word_topic.shape[1] > model.params.topic_capacity              # it grew
    module = kernel_module(hdp, model.params)
    recount = module.rebuild(state, module.prepare(corpus, model.params), model.params)
    _same_state(state, recount)
    assert int(state.topic.sum()) == corpus.num_tokens
    assert model.assignments.shape == (corpus.num_tokens,)
    assert model.doc_topic.shape[0] == corpus.num_docs
    assert float(state.alpha) != TIGHT.get("alpha", 1.0)       # the concentrations moved
    # the sharded log joint (the trace) is the one-device log joint of the gathered state
    assert model.log_joint_per_token() == pytest.approx(model.trace[-1].log_joint_per_token, rel=1e-5)


@needs_4_default_devices
def test_four_devices_reproducible_and_resume_bitwise(tight_runs):
    straight, again, resumed = tight_runs
    _same_state(straight.state, again.state)
    assert _lj(straight) == _lj(again)
    _same_state(straight.state, resumed.state)
    assert _lj(straight) == _lj(resumed)
