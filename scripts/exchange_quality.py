"""Quality of the sharded LDA sweep against how the shards share the word-topic counts.

Reuters (K=20, alpha=0.1, beta=0.01), documents sharded over 4 XLA CPU devices of one process,
500 sweeps, seeds 0-2: log p(w, z)/N for ``exchange="rotate"`` (word groups rotate over the
devices: 2P + 1 collectives a sweep, n_kw never stale) and for ``exchange="moves"`` with
``sync_every`` = 1 (after every block, the exact blocked sweep), 4, 16 and 64 (= once per
sweep, AD-LDA-like; 64 / sync_every collectives a sweep), against the exact-Gibbs reference
-7.841 (DESIGN.md).

    python scripts/exchange_quality.py [--sweeps 500] [--seeds 0 1 2] [--sync 1 4 16 64]
                                       [--no-rotate]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_num_cpu_devices", 4)

import numpy as np  # noqa: E402

import jaxtopics as jt  # noqa: E402
from jaxtopics.datasets import load_shared  # noqa: E402

REFERENCE = -7.841


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--sync", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--no-rotate", action="store_true", help="skip exchange='rotate'")
    args = ap.parse_args()
    corpus = load_shared("reuters")
    print(f"| exchange | collectives/sweep | log joint/token @{args.sweeps} (chains) | mean "
          "| gap vs -7.841 | s/run |")
    print("|---|---|---|---|---|---|")
    runs = [] if args.no_rotate else [("rotate", 4, 2 * args.devices + 1)]
    runs += [(f"moves, sync_every={e}", e, -(-64 // e)) for e in args.sync]
    for name, e, collectives in runs:
        finals, t0 = [], time.perf_counter()
        for seed in args.seeds:
            m = jt.LDA(num_topics=20, alpha=0.1, beta=0.01, sync_every=e,
                       exchange=name.split(",")[0]).fit(
                corpus, num_sweeps=args.sweeps, seed=seed, eval_every=args.sweeps,
                progress=False, devices=args.devices)
            finals.append(m.log_joint_per_token())
        mean = float(np.mean(finals))
        secs = (time.perf_counter() - t0) / len(args.seeds)
        print(f"| {name} | {collectives} | {', '.join(f'{x:.4f}' for x in finals)} | "
              f"{mean:.4f} | {(mean - REFERENCE) / abs(REFERENCE):+.2%} | {secs:.0f} |", flush=True)


if __name__ == "__main__":
    main()
