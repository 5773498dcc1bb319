"""Quality of the sharded LDA sweep against how often the shards exchange their moves.

Reuters (K=20, alpha=0.1, beta=0.01), documents sharded over 4 XLA CPU devices of one process,
500 sweeps, seeds 0-2: log p(w, z)/N for ``sync_every`` = 1 (after every block, the exact
blocked sweep), 4, 16 and 64 (= once per sweep, AD-LDA-like), against the exact-Gibbs
reference -7.841 (DESIGN.md). Collectives per sweep = 64 / sync_every.

    python scripts/exchange_quality.py [--sweeps 500] [--seeds 0 1 2] [--sync 1 4 16 64]
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
    args = ap.parse_args()
    corpus = load_shared("reuters")
    print(f"| sync_every | exchanges/sweep | log joint/token @{args.sweeps} (chains) | mean "
          "| gap vs -7.841 | s/run |")
    print("|---|---|---|---|---|---|")
    for e in args.sync:
        finals, t0 = [], time.perf_counter()
        for seed in args.seeds:
            m = jt.LDA(num_topics=20, alpha=0.1, beta=0.01, sync_every=e).fit(
                corpus, num_sweeps=args.sweeps, seed=seed, eval_every=args.sweeps,
                progress=False, devices=args.devices)
            finals.append(m.log_joint_per_token())
        mean = float(np.mean(finals))
        secs = (time.perf_counter() - t0) / len(args.seeds)
        print(f"| {e} | {-(-64 // e)} | {', '.join(f'{x:.4f}' for x in finals)} | {mean:.4f} | "
              f"{(mean - REFERENCE) / abs(REFERENCE):+.2%} | {secs:.0f} |", flush=True)


if __name__ == "__main__":
    main()
