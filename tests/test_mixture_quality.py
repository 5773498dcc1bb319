"""Clustering quality of DMM and DPMM on real short texts (../shared/data/gsdmm) and a planted corpus.

- DMM (GSDMM), K=300, alpha=beta=0.1, 30 sweeps, corpora built as the issue says
  (``Corpus.from_texts(texts, tokenizer=str.split)``): the mean NMI of the ``parallel`` kernel
  over CHAINS chains is >= 0.87 on Tweet and >= 0.86 on News-T and within 0.01 of the
  ``sequential`` kernel's mean on Tweet (sequential GSDMM elsewhere: 0.874 / 0.863 after 10
  iterations; on News-T both kernels are compared by ``scripts/bench_short_text.py``).
  Single chains scatter in NMI (standard deviation ~0.009 on Tweet, ~0.005 on News-T), so means
  of 10 / 6 chains are compared (standard error of the difference ~0.004 / ~0.003).
- DPMM (GSDPMM), alpha = 0.1 D, beta = 0.02: on a planted corpus of 15 clusters (documents of
  ~12 words) both kernels find 15 +- 2 clusters holding >= 1 % of the documents, with NMI >= 0.9.
  On Tweet both kernels reach NMI >= 0.85 with cluster counts that agree within their
  seed-to-seed spread (printed; measured over 3 seeds each, 30 sweeps: sequential 149-167
  clusters, 28-29 holding >= 1 %; parallel 144-165, 29-30).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from conftest import SHARED_DATA
from jaxtopics.datasets import synthetic_dmm
from jaxtopics.fit import run_sweeps
from jaxtopics.models import dmm, dpmm

CHAINS = {"Tweet": 10, "News-T": 6}
DMM_BAR = {"Tweet": 0.87, "News-T": 0.86}
DMM_COMPARE = {"Tweet"}     # the kernels' agreement is checked here; News-T's sequential chains
                            # cost 3 minutes of the suite (scripts/bench_short_text.py runs both)


def _short_texts(name: str):
    path = SHARED_DATA / "gsdmm" / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = jt.Corpus.from_texts([r["text"] for r in rows], tokenizer=str.split)
    return corpus, np.array([r["cluster"] for r in rows])


def _dmm_chains(corpus: jt.Corpus, sampler: str, seed: int, chains: int) -> np.ndarray:
    """Final labels [chains, D] of vmapped DMM chains, 30 sweeps each."""
    params = dmm.check_params(dmm.Params(300, alpha=0.1, beta=0.1, sampler=sampler))
    data = dmm.prepare(corpus, params)

    def chain(key):
        st = dmm.init(jax.random.fold_in(key, 0), data, params)
        return jax.lax.fori_loop(
            0, 30, lambda t, s: dmm.sweep(jax.random.fold_in(key, t + 1), s, data, params)[0], st).z

    z = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(seed), chains))
    return np.asarray(z)[:, :-1]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DMM_BAR))
def test_dmm_nmi_on_short_texts(name: str) -> None:
    corpus, gold = _short_texts(name)
    samplers = ("sequential", "parallel") if name in DMM_COMPARE else ("parallel",)
    nmi = {s: np.array([jt.metrics.nmi(gold, z) for z in _dmm_chains(corpus, s, 11, CHAINS[name])])
           for s in samplers}
    print(f"\nDMM {name}: " + "; ".join(f"NMI {s} {v.round(4)} mean {v.mean():.4f}" for s, v in nmi.items()))
    assert nmi["parallel"].mean() >= DMM_BAR[name]
    if name in DMM_COMPARE:
        assert abs(nmi["parallel"].mean() - nmi["sequential"].mean()) <= 0.01


def _dpmm_run(corpus: jt.Corpus, sampler: str, seed: int, sweeps: int):
    params = dpmm.check_params(dpmm.Params(alpha=0.1 * corpus.num_docs, beta=0.02, sampler=sampler,
                                           capacity=256))
    data = dpmm.prepare(corpus, params)
    state = dpmm.init(jax.random.key(seed), data, params)
    state, _ = run_sweeps(dpmm, params, data, state, jax.random.key(seed + 100), start=0,
                          num_sweeps=sweeps, num_tokens=corpus.num_tokens, eval_every=sweeps,
                          progress=False)
    est = dpmm.estimate(state, params)
    big = int(np.sum(est["cluster_sizes"] >= 0.01 * corpus.num_docs))
    return est, big


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["sequential", "parallel"])
def test_dpmm_finds_the_planted_clusters(sampler: str) -> None:
    syn = synthetic_dmm(num_docs=1000, num_words=2000, num_clusters=15, mean_doc_length=12, seed=1)
    gold = syn.corpus.labels
    assert (np.bincount(gold) >= 10).all()                  # every planted cluster holds >= 1 %
    for seed in (0, 1):
        est, big = _dpmm_run(syn.corpus, sampler, seed, 20)
        nmi = jt.metrics.nmi(gold, est["labels"])
        print(f"\nDPMM planted {sampler} seed {seed}: {big} clusters >= 1 % "
              f"({est['num_active_clusters']} active), NMI {nmi:.4f}")
        assert abs(big - 15) <= 2 and nmi >= 0.9


@pytest.mark.slow
def test_dpmm_on_tweet_kernels_agree() -> None:
    corpus, gold = _short_texts("Tweet")
    out = {}
    for sampler in ("sequential", "parallel"):
        est, big = _dpmm_run(corpus, sampler, 0, 30)
        out[sampler] = (est["num_active_clusters"], big, jt.metrics.nmi(gold, est["labels"]))
        print(f"\nDPMM Tweet {sampler}: {out[sampler][0]} clusters, {big} holding >= 1 %, "
              f"NMI {out[sampler][2]:.4f}")
    for sampler in out:
        assert out[sampler][2] >= 0.85
    (c_seq, big_seq, _), (c_par, big_par, _) = out["sequential"], out["parallel"]
    # one chain each: the difference of two chains scatters by ~10 clusters (~3 of them >= 1 %)
    assert abs(c_par - c_seq) <= 0.2 * c_seq and abs(big_par - big_seq) <= 4


def test_dmm_layout_of_the_short_texts() -> None:
    """The issue's corpus recipe keeps News-T's one empty title (DMM/DPMM take it: its cluster
    follows the prior) and short documents (at most 20 tokens, words repeated at most 5 times:
    the product form of the Polya predictive)."""
    corpus, gold = _short_texts("Tweet")
    data = dmm.prepare(corpus, dmm.Params(300))
    assert data.items.shape[1] <= 20 and data.count_range.shape[0] <= 5
    assert corpus.num_docs == gold.shape[0] == 2472
    assert jnp.all(data.length[:-1] > 0)
