#!/usr/bin/env python
"""Convergence per sweep of LDA's `parallel` kernel against its number of blocks.

Fewer, larger blocks cost fewer collectives in a sharded CPU run (faster per second) but leave
more staleness in each block (slower per sweep). For each --blocks setting, --chains chains
(vmapped, one device) run from the same keys and the mean log p(w, z)/N (± its standard error
over the chains) is printed at every --checks sweep.

    python scripts/blocks_convergence.py                       # Reuters, K=20, 64 vs 16 blocks
    python scripts/blocks_convergence.py --corpus synthetic --k 500 --checks 5 10 20 40 --chains 4
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from jaxtopics.datasets import load_shared, synthetic_lda
from jaxtopics.models import lda


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", choices=("reuters", "synthetic"), default="reuters")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--blocks", type=int, nargs="+", default=[64, 16])
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--checks", type=int, nargs="+", default=[5, 10, 20, 50, 100, 200])
    args = ap.parse_args()
    if args.chains < 2:
        ap.error("--chains must be at least 2 (the standard error of the mean needs two chains)")
    if args.corpus == "reuters":
        corpus = load_shared("reuters")
    else:                                     # the throughput benchmark's corpus
        corpus = synthetic_lda(num_docs=5000, num_words=10000, num_topics=50, mean_doc_length=200,
                               alpha=0.1, beta=0.01, seed=0).corpus
    keys = jax.random.split(jax.random.key(0), args.chains)
    print("| blocks | " + " | ".join(f"@{t}" for t in args.checks) + " |")
    print("|---|" + "---|" * len(args.checks))
    for blocks in args.blocks:
        p = lda.Params(num_topics=args.k, num_blocks=blocks)
        data = lda.prepare(corpus, p)
        states = jax.vmap(lambda k: lda.init(k, data, p))(keys)

        @jax.jit
        def run(states, start, stop):
            def sweep(t, s):
                return jax.vmap(lambda k, x: lda.sweep(jax.random.fold_in(k, t), x, data, p)[0])(keys, s)
            return jax.lax.fori_loop(start, stop, sweep, states)

        done, cells = 0, []
        for t in args.checks:
            states, done = run(states, done, t), t
            ll = np.asarray(jax.vmap(lambda x: lda.log_joint(x, data, p))(states)) / corpus.num_tokens
            cells.append(f"{ll.mean():.4f} ± {ll.std(ddof=1) / np.sqrt(args.chains):.4f}")
        print(f"| {blocks} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
