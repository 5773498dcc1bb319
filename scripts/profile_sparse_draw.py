#!/usr/bin/env python
"""Would a sparse exact draw beat LDA's dense one on this backend? (issue 34, item 2)

Times, per token, on one block of the throughput corpus's shape (15,616 tokens, D=5000,
V=6725, uint16 count tables as the CPU kernel carries them, random counts):

* ``dense``: the blocked kernel's exact draw (``ops.collapsed_topic_draw`` on the two gathered
  [K] rows), O(K) per token;
* ``doc part, M listed topics``: the cheapest piece of a sparse exact draw, the document bucket
  sum_{k in the document's M listed topics} (n_dk - [k=old]) phi'_kw (SparseLDA's / CuLDA's
  split), M cell gathers from the word's row and from n_k, then a draw among the M. A whole
  sparse draw adds to it the smoothing bucket alpha sum_k phi'_kw (per distinct word of the
  block: O(K) once, then a two-level draw) and the upkeep of the per-document topic lists.

``python scripts/profile_sparse_draw.py --ks 500,1000 --lists 32,64`` (NPROC=1: one thread).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="500,1000")
    ap.add_argument("--lists", default="32,64", help="topics listed per document (M)")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp
    from jaxtopics.ops import categorical, chunked_map, collapsed_topic_draw

    d, v, c, alpha, beta = 5000, 6725, 15616, 0.1, 0.01
    rng = np.random.default_rng(0)
    doc = jnp.asarray(rng.integers(0, d, c), jnp.int32)
    word = jnp.asarray(rng.integers(0, v, c), jnp.int32)
    u = jnp.asarray(rng.random(c), jnp.float32)

    def timed(fn, *xs):
        fn(*xs).block_until_ready()
        ts = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn(*xs).block_until_ready()
            ts.append(time.perf_counter() - t)
        return np.median(ts) / c * 1e9

    print(f"jax {jax.__version__}, {jax.devices()[0]}, load {os.getloadavg()[0]:.2f}")
    print("| K | draw | ns / token |\n|---|---|---|")
    for k in (int(x) for x in args.ks.split(",")):
        doc_topic = jnp.asarray(rng.integers(0, 5, (d, k)), jnp.uint16)
        word_topic = jnp.asarray(rng.integers(0, 50, (v, k)), jnp.uint16)
        topic = jnp.asarray(rng.integers(500, 2000, (k,)), jnp.int32)
        old = jnp.asarray(rng.integers(0, k, c), jnp.int32)
        chunk = max(64, 2**18 // k)          # lda._draw_chunk's CPU rule

        @jax.jit
        def dense(u, doc, word, old):
            return chunked_map(lambda x: collapsed_topic_draw(
                x[0], doc_topic[x[1]], word_topic[x[2]], topic, x[3], alpha, beta, v),
                (u, doc, word, old), chunk)
        print(f"| {k} | dense | {timed(dense, u, doc, word, old):.0f} |", flush=True)
        for m in (int(x) for x in args.lists.split(",")):
            listed = jnp.asarray(rng.integers(0, k, (d, m)), jnp.int32)
            counts = jnp.asarray(rng.integers(1, 5, (d, m)), jnp.float32)

            @jax.jit
            def doc_part(u, doc, word, old, listed=listed, counts=counts, m=m):
                def draw(x):
                    uu, dd, ww, oo = x
                    top = listed[dd]                                        # [chunk, M]
                    n_kw = jnp.take_along_axis(word_topic[ww], top, 1).astype(jnp.float32)
                    own = (top == oo[:, None]).astype(jnp.float32)
                    w = ((counts[dd] - own) * (n_kw + beta - own)
                         / (topic[top].astype(jnp.float32) + v * beta - own))
                    return jnp.take_along_axis(top, categorical(uu, w)[:, None], 1)[:, 0]
                return chunked_map(draw, (u, doc, word, old), max(64, 2**18 // m))
            print(f"| {k} | doc part, M={m} listed topics | "
                  f"{timed(doc_part, u, doc, word, old):.0f} |", flush=True)


if __name__ == "__main__":
    main()
