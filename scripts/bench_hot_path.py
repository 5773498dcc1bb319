#!/usr/bin/env python
"""Seconds per sweep of every model's default kernel, this checkout against another revision, in
one run: did a change touch a sweep's hot path?

Each (revision, model) runs in its own subprocess (the revision's code from a ``git worktree``
on ``PYTHONPATH``): one fit of --sweeps sweeps compiles and warms up, a second fit of the same
length is timed (wall clock, ``eval_every`` = the sweep count, so the trace costs one
evaluation). The corpora are planted (``jaxtopics.datasets``): LDA, Sentence-LDA and PTM on
~100k tokens, DMM and DPMM on 2,000 short documents. Revisions alternate, --repeats times, and
the table shows the median of each.

    python scripts/bench_hot_path.py --against f372d82
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("lda", "slda", "ptm", "dmm", "dpmm")

CHILD = r"""
import json, sys, time
import jaxtopics as jt, jaxtopics.datasets as ds
name, sweeps = sys.argv[1], int(sys.argv[2])
if name in ("lda", "ptm"):
    corpus = ds.synthetic_lda(num_docs=1000, num_words=2000, num_topics=20, mean_doc_length=100,
                              seed=0).corpus
    est = jt.LDA(20) if name == "lda" else jt.PTM(20, num_pseudo_docs=100)
elif name == "slda":
    corpus = ds.synthetic_slda(num_docs=1000, num_words=2000, num_topics=20, mean_sentences=10,
                               mean_sentence_length=10, seed=0).corpus
    est = jt.SentenceLDA(20)
else:
    corpus = ds.synthetic_dmm(num_docs=2000, num_words=1000, num_clusters=20, seed=0).corpus
    est = jt.DMM(40) if name == "dmm" else jt.DPMM(alpha=1.0)
est.fit(corpus, sweeps, seed=0, eval_every=sweeps, progress=False)
t = time.perf_counter()
est.fit(corpus, sweeps, seed=0, eval_every=sweeps, progress=False)
print(json.dumps({"seconds_per_sweep": (time.perf_counter() - t) / sweeps,
                  "tokens": corpus.num_tokens}))
"""


def run(path: Path, name: str, sweeps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(sweeps)], env=env, cwd=path,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the revision to compare with (git rev)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), args.against],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            print(f"seconds per sweep (median of {args.repeats}), {args.sweeps} sweeps timed")
            print(f"| model | tokens | this checkout | {args.against} | ratio |")
            print("|---|---:|---:|---:|---:|")
            for name in args.models.split(","):
                here, there, tokens = [], [], 0
                for _ in range(args.repeats):
                    r = run(ROOT, name, args.sweeps)
                    here.append(r["seconds_per_sweep"])
                    tokens = r["tokens"]
                    there.append(run(other, name, args.sweeps)["seconds_per_sweep"])
                a, b = statistics.median(here), statistics.median(there)
                print(f"| {name} | {tokens} | {a:.4f} | {b:.4f} | {a / b:.2f} |", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT,
                           capture_output=True)


if __name__ == "__main__":
    main()
