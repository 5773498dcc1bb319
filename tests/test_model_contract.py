"""Every registered model module satisfies the model contract of jaxtopics.models.base, and the
capabilities the driver, facade and sharding rely on are the ones the module declares."""

from __future__ import annotations

import pytest

import jaxtopics as jt  # noqa: F401  (registers the estimators)
from jaxtopics.estimators import MODELS
from jaxtopics.models import base


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_module_conforms(name):
    module = MODELS[name].module
    assert base.check_module(module) == []
    assert isinstance(module, base.ModelModule)
    hash(MODELS[name]().params)                    # static under jit


def test_every_kernel_module_of_a_model_conforms():
    """A model whose kernels live in several modules sharing one Params (HDP: direct assignment
    in hdp_direct, the CRF in hdp): each kernel's module conforms, with the same capabilities."""
    from jaxtopics.models import hdp, hdp_direct
    for sampler, module in (("parallel", hdp_direct), ("sequential", hdp_direct), ("crf", hdp),
                            ("crf_sequential", hdp)):
        est = MODELS["hdp"](sampler=sampler)
        assert est.module is module and base.kernel_module(hdp, est.params) is module
        assert base.check_module(module) == []
        assert base.capabilities(module) == base.capabilities(hdp)
    assert hdp_direct.Params is hdp.Params


def test_capabilities_are_what_the_modules_provide():
    caps = {name: base.capabilities(MODELS[name].module) for name in MODELS}
    assert "growable" in caps["hdp"] and "growable" in caps["dpmm"] and "growable" in caps["dpmrm"]
    assert "growable" not in caps["lda"] and "carried" in caps["lda"] and "learning" in caps["lda"]
    assert "held_out_exact" in caps["dmm"] and "held_out_prior" in caps["hdp"]
    assert all("shardable" in c for c in caps.values())
    assert all("invariants" in c for c in caps.values())      # the driver checks every model
    lda_sharding = base.sharding(MODELS["lda"].module)
    assert lda_sharding is MODELS["lda"].module.SHARDING
    assert lda_sharding.fields == {"z": "tokens", "doc_topic": "docs"}
    assert lda_sharding.permuted == {"z": "order"}
    assert lda_sharding.replicated == ("alpha", "beta")
    assert lda_sharding.inits == ("random",) and lda_sharding.summed_sizes == ("count_bound",)
    # DPMM shards DMM's layout; its sampled alpha is a global setting, equal on every shard
    dpmm_sharding = base.sharding(MODELS["dpmm"].module)
    assert dpmm_sharding.fields is base.sharding(MODELS["dmm"].module).fields
    assert dpmm_sharding.replicated == ("alpha",)
    assert base.sharding(MODELS["dpmrm"].module).replicated == ("alpha", "gamma")
    import types
    assert base.sharding(types.ModuleType("unshardable")) is None


def test_check_module_names_what_is_missing():
    import types

    fake = types.ModuleType("fake")
    assert "missing sweep" in base.check_module(fake)
    from jaxtopics.models import lda
    broken = types.ModuleType("broken")
    broken.__dict__.update({k: getattr(lda, k) for k in dir(lda) if not k.startswith("__")})
    broken.SHARDING = lda.SHARDING._replace(fields={"nonexistent": "tokens"})
    assert any("SHARDING.fields names ['nonexistent']" in p for p in base.check_module(broken))
    broken.SHARDING = {"z": "tokens"}             # the settings, but not as a base.Sharding
    assert any("not a base.Sharding" in p for p in base.check_module(broken))
    broken.SHARDING = lda.SHARDING
    broken.invariants = lambda state, params: {}  # no data argument
    assert any("invariants takes ['state', 'params']" in p for p in base.check_module(broken))
