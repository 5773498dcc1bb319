"""Recovery of planted Dirichlet priors: jaxtopics' learned alpha / beta vs tomotopy's optimiser.

    python scripts/hyper_recovery.py [--sweeps 300] [--seed 0]

Two corpora from ``jaxtopics.datasets.synthetic_lda`` (2000 documents of ~100 words, V = 3000,
K = 20, beta = 0.02 over a symmetric Dir(beta): ``zipf_exponent=0``): one with a symmetric
alpha = 0.3, one with alpha_k spread over 0.05..0.6 (a seeded permutation). Every fit starts at
alpha = 1.0, beta (eta) = 0.1. jaxtopics learns alpha (symmetric, or asymmetric) and beta with
its defaults (Minka's fixed point every 10 sweeps after 50); tomotopy's ``LDAModel`` learns its
asymmetric alpha (``optim_interval=10``, ``burn_in=50``; it cannot learn eta). Asymmetric
values are compared after matching the fitted topics to the planted ones by phi (Hungarian on
cosine similarity): Spearman rank correlation, the sum, and the smallest alpha_k (a collapsed
topic has alpha_k ~ 0).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import spearmanr

import jaxtopics as jt
import jaxtopics.datasets

K, V, D, LENGTH, BETA = 20, 3000, 2000, 100, 0.02


def planted(asymmetric: bool):
    truth = np.random.default_rng(1).permutation(np.linspace(0.05, 0.6, K)) if asymmetric else 0.3
    syn = jt.datasets.synthetic_lda(num_docs=D, num_words=V, num_topics=K, mean_doc_length=LENGTH,
                                    alpha=truth, beta=BETA, zipf_exponent=0.0, seed=0)
    return truth, syn


def matched(truth_phi: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """For each planted topic, the fitted topic matched to it (Hungarian on cosine)."""
    cos = (truth_phi @ phi.T / np.linalg.norm(truth_phi, axis=1)[:, None]
           / np.linalg.norm(phi, axis=1)[None])
    rows, cols = linear_sum_assignment(-cos)
    return cols[np.argsort(rows)]


def tomotopy_fit(corpus, sweeps: int, seed: int):
    import tomotopy as tp
    model = tp.LDAModel(k=K, alpha=1.0, eta=0.1, seed=seed)
    model.optim_interval, model.burn_in = 10, 50
    for d in range(corpus.num_docs):
        ids = corpus.word_ids[corpus.doc_offsets[d]:corpus.doc_offsets[d + 1]]
        model.add_doc([corpus.vocab[i] for i in ids])
    model.train(sweeps, workers=1)
    vocab = {w: i for i, w in enumerate(model.used_vocabs)}
    order = np.array([vocab[w] for w in corpus.vocab if w in vocab])
    phi = np.zeros((K, V))
    known = np.array([w in vocab for w in corpus.vocab])
    for k in range(K):
        phi[k, known] = np.asarray(model.get_topic_word_dist(k))[order]
    return np.asarray(model.alpha, np.float64), float(model.eta), phi


def row(name: str, truth, alpha, beta, seconds: float, order=None) -> str:
    if np.ndim(truth) == 0:
        a = float(np.mean(alpha))
        shown = f"{a:.4f} ({a / truth - 1:+.1%})" + ("" if np.ndim(alpha) == 0 else
                                                     f", spread {np.min(alpha):.3f}..{np.max(alpha):.3f}")
        return f"| {name} | {shown} | {beta:.5f} ({beta / BETA - 1:+.1%}) | {seconds:.1f} |"
    a = np.asarray(alpha)[order]
    rho = spearmanr(truth, a).correlation
    return (f"| {name} | Spearman {rho:.2f}, sum {a.sum():.2f} ({a.sum() / truth.sum() - 1:+.1%}), "
            f"min {a.min():.4f} | {beta:.5f} ({beta / BETA - 1:+.1%}) | {seconds:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"synthetic_lda: D={D}, mean length {LENGTH}, V={V}, K={K}, beta={BETA}; "
          f"start alpha=1.0, beta=0.1; {args.sweeps} sweeps, seed {args.seed}\n")
    print("| corpus / fit | alpha learned | beta learned | seconds |")
    print("|---|---|---|---|")
    for asymmetric in (False, True):
        truth, syn = planted(asymmetric)
        label = "alpha_k 0.05..0.6" if asymmetric else "alpha 0.3"
        print(f"| **{label}** (truth) | {'sum %.2f' % np.sum(truth) if asymmetric else truth} | {BETA} | |")
        modes = ("asymmetric",) if asymmetric else ("symmetric", "asymmetric")
        for mode in modes:
            t0 = time.perf_counter()
            m = jt.LDA(K, alpha=1.0, beta=0.1, optimize_alpha=mode, optimize_beta=True).fit(
                syn.corpus, args.sweeps, seed=args.seed, progress=False)
            seconds = time.perf_counter() - t0
            print(row(f"jaxtopics {mode} alpha + beta", truth, m.alpha, m.beta, seconds,
                      matched(syn.phi, m.topic_word)))
        t0 = time.perf_counter()
        alpha, eta, phi = tomotopy_fit(syn.corpus, args.sweeps, args.seed)
        print(row("tomotopy 0.14 (alpha only)", truth, alpha, eta, time.perf_counter() - t0,
                  matched(syn.phi, phi)))


if __name__ == "__main__":
    main()
