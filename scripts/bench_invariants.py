#!/usr/bin/env python
"""What the driver's invariant check costs (``fit.run_chunk`` against ``fit.run_unchecked_chunk``).

After every jitted chunk of sweeps the driver reads the model's invariants (count tables
non-negative, summing to what the model counts) and the log joint's finiteness, in the chunk's
own program, and checks them on the host. This script times LDA on a synthetic corpus of about
1M tokens (default: D=5000, V=10000, mean length 200, as scripts/bench_lda.py) in two ways:

* ``check alone``: the jitted invariants of the state, by themselves (dispatch included: an
  upper bound of what they add inside a chunk), against one sweep, and the log joint alone;
* ``chunks of S sweeps``: the driver's loop (``fit.run_sweeps``'s, without its trace) over
  ``fit.run_chunk`` and ``fit.check_invariants``, against ``fit.run_unchecked_chunk`` alone
  (``run_sweeps(..., invariants=False)``), chunks of S sweeps (S = 1, the worst case:
  ``eval_every=1``; S = 10, the default ``eval_every``), the two interleaved over --repeats
  rounds; seconds per sweep.

Every time is the least of its repeats (the least disturbed by other work on the machine). The
check-alone column is the cost itself, per chunk; over a sweep it is that divided by the
chunk's sweeps. The end-to-end difference of the two loops is within the timing noise of a
shared machine. The log joint, which every chunk evaluates already, is shown for scale.

    python scripts/bench_invariants.py [--ks 50,500] [--repeats 5] [--sweeps 20]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--words", type=int, default=10000)
    parser.add_argument("--doc-length", type=int, default=200)
    parser.add_argument("--ks", default="50,500", help="numbers of topics, comma-separated")
    parser.add_argument("--sweeps", type=int, default=20, help="sweeps per timed run (>= 10)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.sweeps < 10 or args.sweeps % 10:
        parser.error("--sweeps must be a multiple of 10 (chunks of 10 sweeps are timed)")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    import jax
    import jax.numpy as jnp
    from jaxtopics import fit
    from jaxtopics.datasets import synthetic_lda
    from jaxtopics.models import lda

    corpus = synthetic_lda(num_docs=args.docs, num_words=args.words, num_topics=20,
                           mean_doc_length=args.doc_length, seed=args.seed).corpus
    n = corpus.num_tokens
    print(f"corpus: synthetic LDA, D={corpus.num_docs} V={corpus.num_words} N={n}; "
          f"jax {jax.__version__} on {jax.devices()[0].platform}; {args.sweeps} sweeps per run, "
          f"least of {args.repeats} interleaved rounds")
    rows = []
    for k in (int(x) for x in args.ks.split(",")):
        params = lda.Params(num_topics=k)
        data = lda.prepare(corpus, params)
        init_key, chain_key = fit.chain_keys(args.seed)
        start = jax.block_until_ready(lda.init(init_key, data, params))

        def run(invariants: bool, every: int) -> float:
            """Seconds per sweep of the driver's loop (``run_sweeps`` without its trace and
            its memory check): chunks of `every` sweeps, checked on the host or not."""
            runner = fit.run_chunk if invariants else fit.run_unchecked_chunk
            state = jax.tree.map(lambda a: a.copy(), start)
            jax.block_until_ready(state)
            t = time.perf_counter()
            for first in range(0, args.sweeps, every):
                state, lj, _, reached, _, holds = runner(
                    lda, params, data, state, chain_key, jnp.int32(first), jnp.int32(first + every))
                done = int(reached)
                if invariants:
                    fit.check_invariants(lda, holds, lj, done, first + 1)
            jax.block_until_ready(state)
            return (time.perf_counter() - t) / args.sweeps

        def alone(fn) -> float:
            """Least seconds of 20 calls of a jitted function of the state (compiled first)."""
            jax.block_until_ready(fn(start))
            best = float("inf")
            for _ in range(20):
                t = time.perf_counter()
                jax.block_until_ready(fn(start))
                best = min(best, time.perf_counter() - t)
            return best

        check_s = alone(jax.jit(lambda st: lda.invariants(st, data, params)))
        log_joint_s = alone(jax.jit(lambda st: lda.log_joint(st, data, params)))
        times = {}
        for every in (1, 10):
            for invariants in (True, False):
                run(invariants, every)                             # compile and warm up
            got = {True: [], False: []}
            for _ in range(args.repeats):
                for invariants in (True, False):
                    got[invariants].append(run(invariants, every))
            times[every] = {flag: min(v) for flag, v in got.items()}
        rows.append((k, check_s, log_joint_s, times))
    print()
    print("| K | one sweep, unchecked | check alone | check / sweep | the log joint (already "
          "per chunk) | chunks of 1 sweep: checked vs unchecked | chunks of 10 sweeps |")
    print("|---|---|---|---|---|---|---|")
    for k, check_s, log_joint_s, times in rows:
        sweep_s = min(times[1][False], times[10][False])
        ends = [f"{times[e][True] * 1e3:.1f} vs {times[e][False] * 1e3:.1f} ms/sweep "
                f"({100 * (times[e][True] - times[e][False]) / times[e][False]:+.1f} %)"
                for e in (1, 10)]
        print(f"| {k} | {sweep_s * 1e3:.1f} ms | {check_s * 1e3:.2f} ms | "
              f"{100 * check_s / sweep_s:.2f} % (chunks of 10: {100 * check_s / (10 * sweep_s):.3f} %) | "
              f"{log_joint_s * 1e3:.1f} ms | {ends[0]} | {ends[1]} |")


if __name__ == "__main__":
    main()
