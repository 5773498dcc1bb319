#!/usr/bin/env python
"""Sentence-LDA on the Lee background corpus: parallel vs sequential log joint, sentences/s.

Lee (../shared/data/lee/lee_background.cor, ``Corpus.from_text_file(path, sentences=True)``:
300 news texts, 2,619 sentences, 31,228 tokens), ``jt.SentenceLDA`` with alpha=0.1, beta=0.01.
Each sampler runs one chain per seed through the facade (one chain at a time, so the throughput
is that of a single chain). Reported: the log joint per token (collapsed log p(w, z) / N) at the
end of every chain, the mean and spread per sampler, the relative gap of the parallel mean to
the sequential (exact) mean (target |gap| <= 0.5 %), and sentences/s and tokens/s measured
between the first and last evaluation (compilation excluded).

    PYTHONPATH=. python scripts/slda_lee.py --k 20 --sweeps 300 --seeds 0,1,2,3
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import jaxtopics as jt

LEE = Path(__file__).resolve().parents[2] / "shared" / "data" / "lee" / "lee_background.cor"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--input", default=str(LEE))
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--sweeps", type=int, default=300)
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--samplers", default="sequential,parallel")
    ap.add_argument("--num-blocks", type=int, default=64)
    args = ap.parse_args(argv)

    corpus = jt.Corpus.from_text_file(args.input, sentences=True)
    print(f"corpus: {corpus}")
    seeds = [int(s) for s in args.seeds.split(",")]
    eval_every = max(args.sweeps // 10, 1)
    means = {}
    for sampler in args.samplers.split(","):
        finals, rates = [], []
        for seed in seeds:
            est = jt.SentenceLDA(num_topics=args.k, alpha=0.1, beta=0.01, sampler=sampler,
                                 num_blocks=args.num_blocks)
            m = est.fit(corpus, num_sweeps=args.sweeps, seed=seed, eval_every=eval_every,
                        progress=False)
            first, last = m.trace[0], m.trace[-1]
            rates.append((last.sweep - first.sweep) / max(last.seconds - first.seconds, 1e-9))
            finals.append(last.log_joint_per_token)
            print(f"  {sampler:10s} seed {seed}: log joint/token {last.log_joint_per_token:.4f}  "
                  f"{rates[-1] * corpus.num_sentences:9.0f} sentences/s")
        means[sampler] = float(np.mean(finals))
        rate = float(np.median(rates))
        print(f"{sampler:10s} mean {means[sampler]:.4f} (min {min(finals):.4f}, max "
              f"{max(finals):.4f}); median {rate * corpus.num_sentences:,.0f} sentences/s, "
              f"{rate * corpus.num_tokens:,.0f} tokens/s, {1e3 / rate:.1f} ms/sweep")
    if "sequential" in means:
        ref = means["sequential"]
        for name, value in means.items():
            if name != "sequential":
                print(f"gap {name} vs sequential: {100 * (value - ref) / abs(ref):+.3f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
