#!/usr/bin/env python
"""LDA's or PTM's exact parallel sweep with the dense draw against the sparse one (issue 34,
item 2).

On bench_lda.py's corpus (D=5000, V=10000 cut to the words used, mean length 200, K_true=50;
~1M tokens), for every K in --ks: ``lda.Params(K, draw=...)`` for draw in dense and sparse,
from the same start (--init, default incremental), one jitted sweep each (compiled and run once
first), then --repeats timed sweeps of each draw,
alternated (dense, sparse, dense, ...) so that both see the same machine load. Prints the
median seconds per sweep, tokens/s and the speed-up (dense time / sparse time), with the load.

``python scripts/profile_sparse_draw.py --ks 500,1000,2000,5000``

``--model ptm``: PTM (``ptm.Params(K, P, draw=...)``, P = --pseudo-docs) on short texts
(default --docs 100000 --doc-length 10: ~1M tokens), from the state after --warmup dense sweeps
of a random start (pseudo-documents then hold few topics, as in a running chain); the sparse
draw's lists cost P K per token block, so the ratio depends on the tokens per block and
pseudo-document (printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="lda", choices=("lda", "ptm"))
    ap.add_argument("--ks", default="500,1000,2000,5000")
    ap.add_argument("--pseudo-docs", type=int, default=1000, help="PTM's P")
    ap.add_argument("--num-blocks", type=int, default=64, help="PTM's token blocks per sweep")
    ap.add_argument("--warmup", type=int, default=10,
                    help="PTM: dense sweeps from the random start before timing")
    ap.add_argument("--draws", default="dense,sparse")
    ap.add_argument("--repeats", type=int, default=3, help="timed sweeps per draw and K")
    ap.add_argument("--docs", type=int, default=None, help="default 5000 (lda), 100000 (ptm)")
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--doc-length", type=float, default=None, help="default 200 (lda), 10 (ptm)")
    ap.add_argument("--init", default="incremental", choices=("incremental", "random"),
                    help="the chain's start: incremental (each block drawn from (1) given those "
                         "before: documents already hold few topics, as in a running chain) or "
                         "random (uniform topics: every document spread over ~its length in "
                         "topics, the sparse draw's worst case)")
    args = ap.parse_args(argv)
    short = args.model == "ptm"
    args.docs = args.docs if args.docs is not None else (100000 if short else 5000)
    args.doc_length = args.doc_length if args.doc_length is not None else (10 if short else 200)
    try:
        ks = [int(x) for x in args.ks.split(",")]
    except ValueError:
        ap.error(f"--ks must be a comma-separated list of integers, got {args.ks!r}")
    draws = args.draws.split(",")
    for name, values, low in (("--ks", ks, 1), ("--repeats", [args.repeats], 1),
                              ("--docs", [args.docs], 1), ("--words", [args.words], 1),
                              ("--pseudo-docs", [args.pseudo_docs], 1),
                              ("--num-blocks", [args.num_blocks], 1), ("--warmup", [args.warmup], 0)):
        if min(values) < low:
            ap.error(f"{name} must be >= {low}, got {min(values)}")
    if args.doc_length <= 0:
        ap.error(f"--doc-length must be > 0, got {args.doc_length}")
    if unknown := [d for d in draws if d not in ("dense", "sparse")]:
        ap.error(f"--draws must be dense and/or sparse, got {unknown}")
    import jax
    from bench_lda import build_corpus
    from jaxtopics.models import lda, ptm

    corpus = build_corpus(argparse.Namespace(
        docs=args.docs, words=args.words, doc_length=args.doc_length, true_topics=50,
        alpha=0.1, beta=0.01, seed=0, keep_unused_words=False))
    n = corpus.num_tokens
    start = (f"P={args.pseudo_docs}, {args.num_blocks} token blocks "
             f"({n / args.num_blocks / args.pseudo_docs:.1f} tokens per block and pseudo-document), "
             f"{args.warmup} dense sweeps first" if short else f"init {args.init}")
    print(f"jax {jax.__version__}, {jax.devices()[0]}, model {args.model}, N={n:,}, "
          f"D={corpus.num_docs}, V={corpus.num_words}, {start}, load {os.getloadavg()}")
    print("| K | " + " | ".join(f"{d} s/sweep | {d} M tokens/s" for d in draws)
          + " | dense / sparse time |")
    print("|---|" + "---|---|" * len(draws) + "---|")
    for k in ks:
        runs = {}
        warm = _ptm_warm_state(corpus, k, args) if short else None
        for draw in draws:
            if short:
                module, params = ptm, ptm.Params(k, args.pseudo_docs, draw=draw,
                                                 num_blocks=args.num_blocks)
            else:
                module, params = lda, lda.Params(k, draw=draw, init=args.init)
            data = module.prepare(corpus, params)
            state = warm if short else lda.init(jax.random.key(0), data, params)
            step = jax.jit(lambda key, st, data, params=params, module=module:
                           module.sweep(key, st, data, params)[0])
            state = step(jax.random.key(1), state, data)
            state.z.block_until_ready()
            runs[draw] = [step, state, data, []]
        for r in range(args.repeats):
            for draw in draws:
                step, state, data, times = runs[draw]
                t = time.perf_counter()
                state = step(jax.random.key(2 + r), state, data)
                state.z.block_until_ready()
                times.append(time.perf_counter() - t)
                runs[draw][1] = state
        med = {d: float(np.median(runs[d][3])) for d in draws}
        ratio = med["dense"] / med["sparse"] if {"dense", "sparse"} <= set(med) else float("nan")
        print(f"| {k} | " + " | ".join(f"{med[d]:.3f} | {n / med[d] / 1e6:.2f}" for d in draws)
              + f" | {ratio:.2f} |", flush=True)
    print(f"load after: {os.getloadavg()}")


def _ptm_warm_state(corpus, k: int, args):
    """PTM's state after ``args.warmup`` dense sweeps from a random start."""
    import jax
    from jaxtopics.models import ptm

    params = ptm.Params(k, args.pseudo_docs, draw="dense", num_blocks=args.num_blocks)
    data = ptm.prepare(corpus, params)
    step = jax.jit(lambda key, st: ptm.sweep(key, st, data, params)[0])
    state = ptm.init(jax.random.key(0), data, params)
    for t in range(args.warmup):
        state = step(jax.random.fold_in(jax.random.key(9), t), state)
    return jax.block_until_ready(state)


if __name__ == "__main__":
    main()
