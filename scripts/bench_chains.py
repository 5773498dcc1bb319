"""Several seeds of one model: vmapped together (``Estimator.fit_chains``) or one after another
(``fit``), wall seconds after compilation, on a planted corpus (300 documents of ~50 tokens,
V = 500, K = 10; 4 seeds, 200 sweeps). Prints a table.

    python scripts/bench_chains.py
"""

from __future__ import annotations

import time

import jax

import jaxtopics as jt
import jaxtopics.datasets


def main() -> None:
    corpus = jt.datasets.synthetic_lda(num_docs=300, num_words=500, num_topics=10,
                                       mean_doc_length=50, seed=0).corpus
    seeds, sweeps = (0, 1, 2, 3), 200
    print(f"backend {jax.default_backend()}, {corpus.num_tokens} tokens, {len(seeds)} seeds, "
          f"{sweeps} sweeps")
    print(f"{'model':<6} {'vmapped s':>10} {'one by one s':>13} {'ratio':>6}")
    for name, est in (("LDA", jt.LDA(10)), ("PTM", jt.PTM(10, num_pseudo_docs=30)),
                      ("DMM", jt.DMM(10))):
        est.fit_chains(corpus, 2, seeds=seeds, eval_every=sweeps)          # compile both
        for s in seeds:
            est.fit(corpus, 2, seed=s, eval_every=sweeps)
        t = time.perf_counter()
        est.fit_chains(corpus, sweeps, seeds=seeds, eval_every=sweeps)
        together = time.perf_counter() - t
        t = time.perf_counter()
        for s in seeds:
            est.fit(corpus, sweeps, seed=s, eval_every=sweeps)
        apart = time.perf_counter() - t
        print(f"{name:<6} {together:>10.2f} {apart:>13.2f} {apart / together:>6.2f}")


if __name__ == "__main__":
    main()
