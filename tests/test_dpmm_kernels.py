"""Correctness of the DPMM kernels (jaxtopics.models.dpmm).

1. Exact enumeration over the set partitions of tiny corpora: many independent chains (vmap),
   from GSDPMM's incremental seating or from one cluster, must follow the exact posterior of
   the Chinese-restaurant-process mixture, for the sequential kernel and the parallel kernel in
   its exact limit (one document per block). Negative control: the seed's "+ j + 1" typo.
2. Capacity: a sweep that needs a new cluster with every slot taken reports overflow; ``grow``
   doubles the slots; the driver's grow-and-redo gives the same chain whatever the starting
   capacity; count tables stay consistent; runs are reproducible.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mixture_enumeration import (
    MixtureCase,
    canonical,
    dpmm_enumeration,
    incremental_law,
    typo_log_weight,
)
from test_dmm_kernels import run_chains
from test_lda_kernels import FAMILY_ALPHA, _pooled_chisquare_p, _tv, _tv_bound

from jaxtopics import Corpus, metrics
from jaxtopics.datasets import synthetic_dmm
from jaxtopics.fit import run_sweeps
from jaxtopics.models import dmm, dpmm

# P6: 6 documents (203 partitions); P5: 5 documents (52). Repeated words inside documents.
CASES = {
    "P6": dict(docs=[[0, 0, 1], [1, 2], [0, 0, 0, 2], [3], [3, 1, 1], [2, 3]], alpha=0.5,
               beta=0.3, chains=130_000),
    "P5": dict(docs=[[0, 0, 1], [1, 2], [0, 0, 0, 2], [3], [3, 1, 1]], alpha=1.0, beta=0.3,
               chains=70_000),
}
# Sweeps (the first one seats the documents): the exact law after them is within TV 1e-4 of
# the posterior (test_enumeration_sweeps_suffice), 200x below the test's TV resolution 0.02 and
# negligible in the chi-square (non-centrality n sum (law - p)^2 / p < 0.01).
SWEEPS = {"P6": 8, "P5": 6}
BIAS = 1e-4

KERNELS = {
    "sequential": dict(sampler="sequential"),
    "parallel-exact": dict(sampler="parallel", num_blocks=64),       # >= D: one document a block
    "sequential-one": dict(sampler="sequential", init="one"),        # start: all in one cluster
}


@functools.lru_cache(maxsize=None)
def _case(name: str) -> MixtureCase:
    return MixtureCase(CASES[name]["docs"], beta=CASES[name]["beta"])


@functools.lru_cache(maxsize=None)
def _enum(name: str):
    return dpmm_enumeration(_case(name), CASES[name]["alpha"])


def _params(name: str, kernel: str, **kw) -> dpmm.Params:
    c = CASES[name]
    # capacity D: a free slot always exists (vmapped chains cannot grow)
    return dpmm.check_params(dpmm.Params(alpha=c["alpha"], beta=c["beta"], capacity=_case(name).d,
                                         **{**KERNELS[kernel], **kw}))


def _start_law(name: str, init: str) -> np.ndarray:
    e = _enum(name)
    if init == "one":
        start = np.zeros(len(e.states))
        start[e.index[(0,) * _case(name).d]] = 1.0
        return start
    return incremental_law(e, _case(name), CASES[name]["alpha"])


def _law(name: str, init: str, sweeps: int, log_weight=None) -> np.ndarray:
    """Exact law after `sweeps` sweeps (the incremental start's first sweep is the seating)."""
    e = _enum(name)
    p = e.sweep_matrix(log_weight=log_weight)
    if init == "one":
        return e.law_after(_start_law(name, "one"), p, sweeps)
    return e.law_after(_start_law(name, "incremental"), p, sweeps - 1)


def _counts(name: str, final) -> np.ndarray:
    e = _enum(name)
    d = _case(name).d
    idx = [e.index[canonical(z)] for z in final.z[:, :d].tolist()]
    return np.bincount(idx, minlength=len(e.states))


def _accepts(counts: np.ndarray, law: np.ndarray) -> tuple[bool, str]:
    n = int(counts.sum())
    tv = _tv(counts / n, law)
    bound = _tv_bound(law, n, FAMILY_ALPHA / 2)
    p = _pooled_chisquare_p(counts, law)
    return tv < bound and p > FAMILY_ALPHA / 2, f"TV={tv:.4f} (bound {bound:.4f}), chi-square p={p:.3g}"


# ------------------------------------------------------------------------------------------
# the reference


@pytest.mark.parametrize("name", list(CASES))
def test_log_joint_matches_numpy_formula(name: str) -> None:
    e = _enum(name)
    params = _params(name, "sequential")
    data = dpmm.prepare(_case(name).corpus, params)
    states = jnp.asarray(np.array(e.states, np.int32))
    got = jax.jit(jax.vmap(lambda z: dpmm.log_joint(
        dmm.state_from_assignments(z, data, params, params.capacity), data, params)))(states)
    np.testing.assert_allclose(np.asarray(got, np.float64), e.lj, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_enumeration_sweeps_suffice(name: str) -> None:
    """Design check: a sweep's transition matrix leaves the posterior invariant; from the starts
    the tests use, SWEEPS[name] sweeps reach it (TV < BIAS); the seating law is a distribution."""
    e = _enum(name)
    post = e.posterior()
    p = e.sweep_matrix()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert _tv(post @ p, post) < 1e-12
    assert abs(_start_law(name, "incremental").sum() - 1.0) < 1e-12
    for init in ("incremental", "one") if name == "P5" else ("incremental",):
        law = _law(name, init, SWEEPS[name])
        assert _tv(law, post) < BIAS
        assert CASES[name]["chains"] * np.sum((law - post) ** 2 / post) < 0.01


# ------------------------------------------------------------------------------------------
# the kernels against the posterior


@functools.lru_cache(maxsize=None)
def _empirical(name: str, kernel: str) -> np.ndarray:
    params = _params(name, kernel)
    data = dpmm.prepare(_case(name).corpus, params)
    final = run_chains(dpmm, params, data, CASES[name]["chains"], SWEEPS[name],
                       100 * list(CASES).index(name) + list(KERNELS).index(kernel))
    _assert_consistent(final, data, batched=True)
    return _counts(name, final)


@pytest.mark.slow
@pytest.mark.parametrize("name,kernel", [("P6", "sequential"), ("P6", "parallel-exact"),
                                         ("P5", "sequential-one")])
def test_enumeration_matches_exact_posterior(name: str, kernel: str) -> None:
    post = _enum(name).posterior()
    counts = _empirical(name, kernel)
    assert _tv_bound(post, int(counts.sum()), FAMILY_ALPHA / 2) <= 0.02, "too few chains"
    ok, msg = _accepts(counts, post)
    assert ok, f"{kernel} on {name}: {msg}"


def test_negative_control_seed_typo_is_rejected(monkeypatch) -> None:
    """Power: the seed's "+ j + 1" word product (eq. 31 and 32 both start the rising factorial
    at n + beta + 2) run through the real sweep is rejected against the posterior, and matches
    its own exact law."""
    name = "P5"
    e = _enum(name)
    post = e.posterior()
    original = dmm.block_log_predictive

    def typo(rows, counts, totals, length, smoothing, total_smoothing, max_count=None):
        return original(rows, counts, totals, length, smoothing + 2.0, total_smoothing, max_count)

    monkeypatch.setattr(dmm, "block_log_predictive", typo)
    monkeypatch.setattr(dpmm, "block_log_predictive", typo)
    params = _params(name, "sequential-one")
    data = dpmm.prepare(_case(name).corpus, params)
    counts = _counts(name, run_chains(dpmm, params, data, 20_000, SWEEPS[name], 7))
    alpha = CASES[name]["alpha"]
    law = _law(name, "one", SWEEPS[name],
               typo_log_weight(_case(name), lambda m: m if m > 0 else alpha))
    assert _tv(law, post) > 0.3
    assert not _accepts(counts, post)[0]
    ok, msg = _accepts(counts, law)
    assert ok, msg


# ------------------------------------------------------------------------------------------
# capacity, counts, reproducibility


def _assert_consistent(st: dmm.State, data: dmm.Data, batched: bool) -> None:
    d = data.items.shape[0] - 1
    cap = st.cluster_docs.shape[-1]
    z = np.asarray(st.z)[..., :d]
    assert z.dtype == np.int32 and (z >= 0).all() and (z < cap).all()
    params = dpmm.Params()
    rebuild = functools.partial(dmm.state_from_assignments, data=data, params=params, capacity=cap)
    ref = jax.vmap(rebuild)(jnp.asarray(z)) if batched else rebuild(jnp.asarray(z))
    for name in ("cluster_docs", "word_cluster", "cluster_tokens"):
        got = np.asarray(getattr(st, name))
        assert got.dtype == np.int32 and (got >= 0).all(), name
        np.testing.assert_array_equal(got, np.asarray(getattr(ref, name)), err_msg=name)


@functools.lru_cache(maxsize=None)
def _planted():
    return synthetic_dmm(num_docs=300, num_words=400, num_clusters=8, mean_doc_length=10, seed=4)


@pytest.mark.parametrize("sampler", ["sequential", "parallel"])
def test_overflow_reported_and_grow_pads(sampler: str) -> None:
    """Two slots cannot hold 8 planted clusters: the first sweep reports overflow (the driver
    then discards it). grow doubles the slots with empty columns; the counts stay valid."""
    corpus = _planted().corpus
    params = dpmm.check_params(dpmm.Params(alpha=30.0, sampler=sampler, capacity=2, num_blocks=8))
    data = dpmm.prepare(corpus, params)
    state = dpmm.init(jax.random.key(0), data, params)
    _, info = jax.jit(lambda k, s: dpmm.sweep(k, s, data, params))(jax.random.key(1), state)
    assert bool(info.overflow)
    start = dpmm.init(jax.random.key(0), data, params._replace(init="random", init_clusters=2))
    grown = dpmm.grow(start, data, params)
    assert grown.cluster_docs.shape == (4,) and grown.word_cluster.shape == (400, 4)
    np.testing.assert_array_equal(np.asarray(grown.cluster_docs)[2:], 0)
    np.testing.assert_array_equal(np.asarray(grown.word_cluster)[:, :2], np.asarray(start.word_cluster))
    _assert_consistent(grown, data, batched=False)
    assert dpmm.grow(dpmm.grow(grown, data, params), data, params).cluster_docs.shape == (16,)


def test_growth_gives_the_same_chain_as_a_large_capacity() -> None:
    """Parallel kernel (the grow-and-redo path is the same code in both kernels): a run started
    with 4 slots (grown by the driver on overflow, sweeps redone with the same
    key) ends with the same statistics as one started with 512: the same clusters, sizes, log
    joint and NMI with the plant. (The draws differ only through float rounding of the
    categorical's group sums, which depend on the number of slots.)"""
    syn = _planted()
    corpus = syn.corpus
    out = {}
    for cap in (4, 512):
        params = dpmm.check_params(dpmm.Params(alpha=30.0, sampler="parallel", capacity=cap))
        data = dpmm.prepare(corpus, params)
        state = dpmm.init(jax.random.key(0), data, params)
        state, trace = run_sweeps(dpmm, params, data, state, jax.random.key(1), start=0,
                                  num_sweeps=15, num_tokens=corpus.num_tokens, eval_every=5,
                                  progress=False)
        _assert_consistent(state, data, batched=False)
        est = dpmm.estimate(state, params)
        out[cap] = (state.cluster_docs.shape[0], est, trace[-1].log_joint_per_token)
    (cap_small, small, lj_small), (cap_big, big, lj_big) = out[4], out[512]
    assert cap_small > 4 and cap_big == 512                         # the small run grew
    assert small["num_active_clusters"] == big["num_active_clusters"]
    np.testing.assert_array_equal(small["cluster_sizes"], big["cluster_sizes"])
    assert abs(lj_small - lj_big) < 1e-4
    nmi_small = metrics.nmi(corpus.labels, small["labels"])
    assert abs(nmi_small - metrics.nmi(corpus.labels, big["labels"])) < 1e-9
    assert nmi_small > 0.9


MEDIUM = {
    "sequential": dict(sampler="sequential"),
    "parallel-5": dict(sampler="parallel", num_blocks=5, chunk_size=20, init="random",
                       init_clusters=3),
}


@functools.lru_cache(maxsize=None)
def _medium(kernel: str):
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 12, size=40)
    lengths[[4, 17]] = 0                                    # empty documents are allowed
    words = rng.integers(0, 27, size=int(lengths.sum())).astype(np.int32)
    corpus = Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                                [f"w{i}" for i in range(30)])
    params = dpmm.check_params(dpmm.Params(alpha=2.0, beta=0.05, capacity=64, **MEDIUM[kernel]))
    data = dpmm.prepare(corpus, params)

    @jax.jit
    def run(key, state):
        def body(st, t):
            new, info = dpmm.sweep(jax.random.fold_in(key, t), st, data, params)
            return new, (info.changed, jnp.sum(new.z != st.z, dtype=jnp.int32), info.overflow,
                         info.num_active, jnp.sum(new.cluster_docs > 0, dtype=jnp.int32))
        return jax.lax.scan(body, state, jnp.arange(3))

    return corpus, params, data, run


@pytest.mark.parametrize("kernel", list(MEDIUM))
def test_counts_consistent_changed_and_reproducible(kernel: str) -> None:
    corpus, params, data, run = _medium(kernel)
    state = dpmm.init(jax.random.key(1), data, params)
    final, (changed, differ, overflow, active, recount) = run(jax.random.key(2), state)
    _assert_consistent(final, data, batched=False)
    np.testing.assert_array_equal(np.asarray(changed), np.asarray(differ))
    np.testing.assert_array_equal(np.asarray(active), np.asarray(recount))
    assert not np.asarray(overflow).any() and int(changed[0]) > 0
    again, _ = run(jax.random.key(2), state)
    for x, y in zip(final, again):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    other, _ = run(jax.random.key(3), state)
    assert (np.asarray(other.z) != np.asarray(final.z)).any()
    est = dpmm.estimate(final, params)
    c = est["num_active_clusters"]
    assert est["theta"].shape == (40, c) and est["phi"].shape == (c, 30)
    np.testing.assert_allclose(est["theta"].sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(est["phi"].sum(1), 1.0, rtol=1e-5)
    assert sorted(set(est["labels"].tolist())) == list(range(c))        # compacted 0..C-1
    assert (np.diff(est["cluster_sizes"]) <= 0).all()                   # by decreasing size
    np.testing.assert_array_equal(np.bincount(est["labels"], minlength=c), est["cluster_sizes"])
    np.testing.assert_array_equal(dpmm.assignments(final), est["labels"][corpus.doc_index])
