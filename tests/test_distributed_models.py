"""Sharded parallel sweeps of DMM, DPMM, Sentence-LDA and PTM (``jaxtopics.distributed``) on the
four CPU devices conftest.py creates, through the facade (``fit(..., devices=P)``):

- one device is bitwise the unsharded parallel kernel;
- after a sharded fit the gathered global tables are the counts of the gathered assignments;
- the same seed gives the same chain, and a saved and resumed sharded run equals the straight one.

Quality: the sharded chains of DMM, DPMM and Sentence-LDA are held two-sided to the exact kernel
in test_kernel_quality.py, PTM's in test_ptm_quality.py.

LDA's sharded sweep is tested in test_distributed.py.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import jax
import jaxtopics as jt
from jaxtopics import distributed as dist
from jaxtopics.datasets import synthetic_dmm, synthetic_lda
from jaxtopics.errors import ParameterError

CPUS = jax.devices("cpu")
needs_4_default_devices = pytest.mark.skipif(len(jax.devices()) < 4,
                                             reason="fewer than 4 devices on the default backend")

# DPMM starts with 4 cluster slots: its sharded runs grow the capacity on the way (alpha = 30
# keeps new clusters opening, so that chains of different seeds differ on this clean corpus)
MODELS = {
    "dmm": lambda: jt.DMM(num_clusters=8, num_blocks=8),
    "dpmm": lambda: jt.DPMM(alpha=30.0, beta=0.05, num_blocks=8, capacity=4),
    "slda": lambda: jt.SentenceLDA(num_topics=4, num_blocks=8),
    "ptm": lambda: jt.PTM(num_topics=4, num_pseudo_docs=6, num_blocks=8),
    # the sparse token draw: the shards' token blocks list their own words (padded alike)
    "ptm-sparse": lambda: jt.PTM(num_topics=4, num_pseudo_docs=6, num_blocks=8, draw="sparse"),
}


def _with_sentences(corpus: jt.Corpus, per: int = 5) -> jt.Corpus:
    """The corpus with every document cut into sentences of `per` tokens."""
    docs = []
    for d in range(corpus.num_docs):
        words = corpus.words(d)
        docs.append([words[i:i + per] for i in range(0, len(words), per)])
    return jt.Corpus.from_token_lists(docs, sentences=True)


@pytest.fixture(scope="module")
def corpora():
    short = synthetic_dmm(num_docs=120, num_words=60, num_clusters=4, mean_doc_length=8, seed=0).corpus
    long = synthetic_lda(num_docs=40, num_words=80, num_topics=4, mean_doc_length=30, seed=2).corpus
    return {"dmm": short, "dpmm": short, "ptm": short, "ptm-sparse": short,
            "slda": _with_sentences(long)}


def _same_state(a, b) -> None:
    for name, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def _lj(model: jt.FittedModel) -> list[float]:
    return [p.log_joint_per_token for p in model.trace]


@pytest.mark.parametrize("name", list(MODELS))
def test_one_device_is_the_default_run(name, corpora):
    corpus = corpora[name]
    a = MODELS[name]().fit(corpus, num_sweeps=4, seed=3, eval_every=2, progress=False)
    b = MODELS[name]().fit(corpus, num_sweeps=4, seed=3, eval_every=2, progress=False, devices=1)
    _same_state(a.state, b.state)
    assert _lj(a) == _lj(b)
    assert [p.changed_fraction for p in a.trace] == [p.changed_fraction for p in b.trace]


@needs_4_default_devices
@pytest.mark.parametrize("name", list(MODELS))
def test_four_devices_keep_counts_consistent(name, corpora):
    corpus = corpora[name]
    model = MODELS[name]().fit(corpus, num_sweeps=6, seed=1, progress=False, devices=4)
    module = model._module
    state = model.state
    recount = module.rebuild(state, module.prepare(corpus, model.params), model.params)
    _same_state(state, recount)
    assert model.assignments.shape == (corpus.num_tokens,)
    assert model.doc_topic.shape[0] == corpus.num_docs
    # the sharded log joint (the trace) is the one-device log joint of the gathered state
    assert model.log_joint_per_token() == pytest.approx(model.trace[-1].log_joint_per_token, rel=1e-5)


@needs_4_default_devices
@pytest.mark.parametrize("name", list(MODELS))
def test_four_devices_reproducible_and_resume_bitwise(name, corpora, tmp_path):
    corpus = corpora[name]
    run = dict(seed=1, eval_every=4, progress=False, devices=4)
    straight = MODELS[name]().fit(corpus, num_sweeps=8, **run)
    again = MODELS[name]().fit(corpus, num_sweeps=8, **run)
    _same_state(straight.state, again.state)
    assert _lj(straight) == _lj(again)
    other = MODELS[name]().fit(corpus, num_sweeps=8, **(run | dict(seed=2)))
    assert not np.array_equal(np.asarray(straight.state.z), np.asarray(other.state.z))
    part = MODELS[name]().fit(corpus, num_sweeps=4, **run)
    part.save(tmp_path / "m.jtm")
    resumed = jt.load(tmp_path / "m.jtm").resume(corpus, 4, eval_every=4, progress=False, devices=4)
    _same_state(straight.state, resumed.state)
    assert _lj(straight) == _lj(resumed)


@pytest.mark.parametrize("name", list(MODELS))
def test_low_level_init_and_recount_count_no_padding(name, corpora):
    """distributed.init / sweep / recount on 4 unequal shards: the gathered tables are the counts
    of the gathered latents (padding tokens, sentences and documents counted nowhere)."""
    corpus, params = corpora[name], MODELS[name]().params
    if hasattr(params, "capacity"):          # no growth here: the driver grows, not dist.sweep
        params = params._replace(capacity=64)
    module = dist.module_of(params)
    mesh = dist.make_mesh(4, CPUS)
    sdata = dist.prepare(corpus, params, 4)
    assert sdata.module is module and len(set(np.asarray(sdata.num_docs))) > 1
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)
    data = module.prepare(corpus, params)
    _same_state(dist.gather(state, sdata), module.rebuild(dist.gather(state, sdata), data, params))
    state, info = dist.sweep(jax.random.key(1), state, sdata, params, mesh)
    assert int(info.changed) > 0
    merged = dist.gather(state, sdata)
    _same_state(merged, module.rebuild(merged, data, params))
    _same_state(merged, dist.gather(dist.recount(state, sdata, params), sdata))
    lj = float(module.log_joint(merged, data, params))
    assert float(dist.log_joint(state, sdata, params)) == pytest.approx(lj, rel=1e-5)


def test_models_without_a_sharded_kernel_are_refused(corpora):
    corpus = corpora["dmm"]
    with pytest.raises(ParameterError, match="mh_steps"):
        jt.LDA(num_topics=3, mh_steps=2).fit(corpus, num_sweeps=1, devices=2)
    # every model of the library has a sharded kernel now; a module without the hooks is refused
    assert dist.shard_refusal(types.ModuleType("toy"), None) == "toy has no sharded kernel"
    with pytest.raises(ParameterError, match="'parallel' kernel"):
        jt.DMM(num_clusters=4, sampler="sequential").fit(corpus, num_sweeps=1, devices=2)
