"""Clustering quality of DMM and DPMM on real short texts (../shared/data/gsdmm) and a planted corpus.

- DMM (GSDMM), K=300, alpha=beta=0.1, 30 sweeps, corpora built as the issue says
  (``Corpus.from_texts(texts, tokenizer=str.split)``): the mean NMI of the default ``parallel``
  kernel over CHAINS chains is >= 0.87 on Tweet and >= 0.86 on News-T (sequential GSDMM
  elsewhere: 0.874 / 0.863 after 10 iterations). Single chains scatter in NMI (standard
  deviation ~0.009 on Tweet, ~0.005 on News-T), so means of 10 / 6 chains are compared.
  The parallel kernel against the exact one (log joint, two-sided, with a negative control) is
  tests/test_kernel_quality.py, for DMM and DPMM on Tweet.
- DPMM (GSDPMM), alpha = 0.1 D, beta = 0.02: on a planted corpus of 15 well-separated clusters
  (documents of ~12 words) both kernels find exactly the 15 clusters, every document matched to
  its planted cluster by a square Hungarian matching (missing and extra clusters cost).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import jaxtopics as jt
from conftest import SHARED_DATA
from jaxtopics.datasets import synthetic_dmm
from jaxtopics.fit import run_sweeps
from jaxtopics.models import dmm, dpmm

CHAINS = {"Tweet": 10, "News-T": 6}
DMM_BAR = {"Tweet": 0.87, "News-T": 0.86}


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
    nmi = np.array([jt.metrics.nmi(gold, z) for z in _dmm_chains(corpus, "parallel", 11, CHAINS[name])])
    print(f"\nDMM {name}: NMI parallel {nmi.round(4)} mean {nmi.mean():.4f}")
    assert nmi.mean() >= DMM_BAR[name]


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


def _square_matching(gold: np.ndarray, found: np.ndarray) -> tuple[int, int]:
    """(found clusters holding a document, documents off the best one-to-one matching): the
    Hungarian matching of planted x found clusters on a square table padded with empty rows or
    columns, so that a planted cluster left unmatched (missing, or merged into another) and a
    found cluster matched to no planted one (an extra, or one planted cluster split in two)
    both cost their documents."""
    _, g = np.unique(gold, return_inverse=True)
    _, f = np.unique(found, return_inverse=True)
    n = max(g.max(), f.max()) + 1
    table = np.zeros((n, n), np.int64)
    np.add.at(table, (g, f), 1)
    rows, cols = linear_sum_assignment(-table)
    return int(f.max() + 1), int(gold.size - table[rows, cols].sum())


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["sequential", "parallel"])
def test_dpmm_finds_the_planted_clusters(sampler: str) -> None:
    """A planted corpus of 15 well-separated clusters (1,000 documents of ~12 words; the
    smallest cluster holds >= 1 % of the documents): from GSDPMM's incremental start, 20 sweeps
    of either kernel find exactly the 15 planted clusters, every document in its planted one
    (the square matching below misplaces none and no extra cluster holds a document)."""
    syn = synthetic_dmm(num_docs=1000, num_words=2000, num_clusters=15, mean_doc_length=12, seed=1)
    gold = syn.corpus.labels
    assert (np.bincount(gold) >= 10).all()                  # every planted cluster holds >= 1 %
    for seed in (0, 1):
        est, big = _dpmm_run(syn.corpus, sampler, seed, 20)
        found, off = _square_matching(gold, est["labels"])
        print(f"\nDPMM planted {sampler} seed {seed}: {found} clusters ({big} >= 1 %), "
              f"{off} documents off the matching, NMI {jt.metrics.nmi(gold, est['labels']):.4f}")
        assert found == 15 and off == 0, (found, off)


def test_square_matching_counts_missing_and_extra_clusters() -> None:
    """The matching's negative controls: a merged pair, a split cluster and one stray document
    in an extra cluster each cost their documents."""
    gold = np.repeat(np.arange(3), 4)
    assert _square_matching(gold, gold + 7) == (3, 0)
    assert _square_matching(gold, np.minimum(gold, 1)) == (2, 4)           # clusters 1, 2 merged
    split = gold.copy()
    split[:2] = 5
    assert _square_matching(gold, split) == (4, 2)
    stray = gold.copy()
    stray[0] = 9
    assert _square_matching(gold, stray) == (4, 1)


def test_dmm_layout_of_the_short_texts() -> None:
    """The issue's corpus recipe keeps News-T's one empty title (DMM/DPMM take it: its cluster
    follows the prior) and short documents (at most 20 tokens, words repeated at most 5 times:
    the product form of the Polya predictive)."""
    corpus, gold = _short_texts("Tweet")
    data = dmm.prepare(corpus, dmm.Params(300))
    assert data.items.shape[1] <= 20 and data.count_range.shape[0] <= 5
    assert corpus.num_docs == gold.shape[0] == 2472
    assert jnp.all(data.length[:-1] > 0)
