#!/usr/bin/env python
"""Where an LDA `parallel` sweep spends its time: the sweep cut into its parts, each timed alone.

On the benchmark corpus (``datasets.synthetic_lda``; default D=5000, V=10000, mean length 200,
N ~ 1M tokens), for every K in --ks, each part is one jitted ``lax.scan`` over the sweep's
blocks, exactly as ``lda._parallel_sweep`` runs them, compiled first and then timed over --reps
runs (best of):

* ``sweep``: the whole blocked sweep (``lda.sweep``).
* ``rows``: reading each token's count rows n_d. and n_.w (the gathers of the draw).
* ``draw``: rows + eq. (1) + the two-level categorical (``ops.collapsed_topic_draw``), against
  fixed counts.
* ``moves``: writing a block's moves into n_dk, n_kw, n_k (``ops.move_counts``; exact sweeps
  write z once per sweep).

``draw`` + ``moves`` should come close to ``sweep``; the remainder is the scan's own cost.
Prints a markdown table (ms per sweep, share of the sweep, M tokens/s).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp


def _best(fn, *args, reps: int) -> float:
    jax.block_until_ready(fn(*args))                 # compile + warm
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return min(times)


def profile(num_topics: int, corpus, reps: int) -> dict[str, float]:
    from jaxtopics.models import lda
    from jaxtopics.ops import chunked_map, to_strided

    params = lda.Params(num_topics=num_topics, alpha=0.1, beta=0.01)
    data = lda.prepare(corpus, params)
    state = lda.init(jax.random.key(0), data, params)
    v = corpus.num_words
    old = to_strided(state.z[:-1], data.word.shape[0], width=data.word.shape[1])
    xs = (lda._valid(data), data.doc, data.word, old,
          jax.random.uniform(jax.random.key(1), data.word.shape))
    chunk = lda._draw_chunk(params, data.word.shape[1])       # the sweep's own chunking

    def summed_over_blocks(per_token):
        """jit of: per_token(state, u, doc, word, old) for every block's tokens (chunked as the
        sweep chunks them), summed so that nothing is optimised away."""
        def run(state):
            def block(acc, x):
                _, doc, word, old, u = x
                out = chunked_map(lambda c: per_token(state, *c), (u, doc, word, old), chunk)
                return acc + out.sum(), None
            return jax.lax.scan(block, jnp.int32(0), xs)[0]
        return jax.jit(run)

    @jax.jit
    def sweep(state):
        return lda.sweep(jax.random.key(2), state, data, params)[0].topic

    rows = summed_over_blocks(lambda st, u, doc, word, old:
                              (st.doc_topic[doc] + st.word_topic[word]).sum(1))
    draw = summed_over_blocks(lambda st, u, doc, word, old:
                              lda._dense_block_draw(u, doc, word, old, st, params, v))

    @jax.jit
    def moves(state):
        def block(st, x):
            valid, doc, word, old, _ = x
            new = (old + 1) % num_topics
            return lda._apply_moves(st, None, doc, word, old, new, valid), None
        return jax.lax.scan(block, state, xs)[0].topic

    return {name: _best(fn, state, reps=reps)
            for name, fn in (("sweep", sweep), ("rows", rows), ("draw", draw), ("moves", moves))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", default="50,500")
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--doc-length", type=float, default=200)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from jaxtopics.datasets import synthetic_lda

    corpus = synthetic_lda(num_docs=args.docs, num_words=args.words, num_topics=50,
                           mean_doc_length=args.doc_length, seed=0).corpus
    n = corpus.num_tokens
    print(f"corpus: {corpus.num_docs} docs, {n} tokens, V={corpus.num_words}; jax {jax.__version__} "
          f"on {jax.default_backend()} ({jax.device_count()} device)")
    print("\n| K | part | ms / sweep | share of sweep | M tokens/s |\n|---|---|---|---|---|")
    for k in (int(x) for x in args.ks.split(",")):
        t = profile(k, corpus, args.reps)
        for name in ("sweep", "rows", "draw", "moves"):
            print(f"| {k} | {name} | {1e3 * t[name]:.0f} | {t[name] / t['sweep']:.0%} | "
                  f"{n / t[name] / 1e6:.2f} |", flush=True)


if __name__ == "__main__":
    main()
