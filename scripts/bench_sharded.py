#!/usr/bin/env python
"""Sharded speed of any model: seconds per sweep of its ``parallel`` kernel on 1 and on N devices.

For every model in --models and corpus in --corpora, each device count in --devices runs in its
own subprocess (the script re-invoking itself with the hidden ``--one``), because the number of
XLA CPU devices (``jax_num_cpu_devices``) is fixed before JAX starts. In each subprocess the
model is fitted for --warmup sweeps through the facade (compilation included), then
``resume(..., --sweeps)`` is timed with one log-joint evaluation at its end. Capacities of the
nonparametric models are set large enough (``CAPACITY``) that no growth recompiles in the timed
part. A model that needs label sets (DP-MRM) gets the same tokens with label sets {a, b} on
two documents in three and {a} on the third; a model that needs sentences is not supported here.

    python scripts/bench_sharded.py --models hdp,dpmrm --corpora lee,reuters --devices 1,2

Prints a markdown table (and --json OUT): s/sweep per device count and the speed-up against the
first device count. On a CPU, N devices split its cores (each device's ops use the shared
intra-op thread pool).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
#: slots enough for the timed sweeps of these corpora: no capacity growth (a recompile) there
CAPACITY = {"hdp": dict(topic_capacity=128, table_capacity=64), "dpmrm": dict(topic_capacity=128),
            "dpmm": dict(capacity=256)}
#: required arguments of an estimator
REQUIRED = {"lda": dict(num_topics=20), "dmm": dict(num_clusters=20),
            "ptm": dict(num_topics=20, num_pseudo_docs=100)}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _counts(text: str) -> list[int]:
    try:
        return [_positive(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts >= 1, got {text!r}") from None


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--models", default="hdp,dpmrm", help="comma-separated model names (CLI names)")
    ap.add_argument("--corpora", default="lee,reuters", help="shared data sets (../shared/data)")
    ap.add_argument("--devices", type=_counts, default="1,2", help="comma-separated device counts")
    ap.add_argument("--warmup", type=_positive, default=3, help="sweeps before timing (compilation)")
    ap.add_argument("--sweeps", type=_positive, default=20, help="timed sweeps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=SHARED, help="folder of the shared data sets")
    ap.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def run_one(model: str, corpus_name: str, devices: int, args) -> dict:
    """Time one (model, corpus, device count) in this process."""
    import jax
    jax.config.update("jax_num_cpu_devices", devices)
    import jaxtopics as jt
    from jaxtopics.datasets import load_shared
    from jaxtopics.estimators import MODELS

    estimator = MODELS[model]
    corpus = load_shared(corpus_name, root=args.data)
    if getattr(estimator, "needs_labels", False):
        docs = [list(corpus.words(d)) for d in range(corpus.num_docs)]
        corpus = jt.Corpus.from_token_lists(docs, labels=[["a", "b"] if d % 3 else ["a"]
                                                          for d in range(len(docs))])
    make = estimator(**REQUIRED.get(model, {}), **CAPACITY.get(model, {}))
    fitted = make.fit(corpus, num_sweeps=args.warmup, seed=args.seed, progress=False,
                      devices=None if devices == 1 else devices)
    start = time.perf_counter()
    fitted = fitted.resume(corpus, args.sweeps, progress=False, eval_every=args.sweeps)
    seconds = (time.perf_counter() - start) / args.sweeps
    return dict(model=model, corpus=corpus_name, devices=devices, tokens=corpus.num_tokens,
                s_per_sweep=seconds, log_joint=fitted.trace[-1].log_joint_per_token)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.one:
        model, corpus, devices = args.one.split(",")
        print("RESULT " + json.dumps(run_one(model, corpus, int(devices), args)), flush=True)
        return 0
    counts = args.devices
    rows, failed = [], 0
    for model in args.models.split(","):
        for corpus in args.corpora.split(","):
            times = {}
            for n in counts:
                cmd = [sys.executable, os.path.abspath(__file__), "--one", f"{model},{corpus},{n}",
                       "--warmup", str(args.warmup), "--sweeps", str(args.sweeps),
                       "--seed", str(args.seed), "--data", args.data]
                env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
                env.pop("XLA_FLAGS", None)
                done = subprocess.run(cmd, capture_output=True, text=True, env=env)
                line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
                if done.returncode or not line:
                    print(f"{model} {corpus} {n} devices failed:\n{done.stderr[-2000:]}",
                          file=sys.stderr)
                    failed += 1
                    continue
                result = json.loads(line[0][len("RESULT "):])
                times[n] = result["s_per_sweep"]
                result["speedup"] = times[counts[0]] / result["s_per_sweep"] if counts[0] in times else None
                rows.append(result)
                print(f"{model} {corpus} {n} devices: {result['s_per_sweep']:.4f} s/sweep",
                      file=sys.stderr, flush=True)
    print(f"\n{args.warmup} warm-up + {args.sweeps} timed sweeps, jaxtopics' default settings "
          f"(capacities: {CAPACITY})\n")
    print(f"| model | corpus | tokens | devices | s/sweep | vs {counts[0]} device(s) | log joint/token |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        speed = "-" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        print(f"| {r['model']} | {r['corpus']} | {r['tokens']:,} | {r['devices']} | "
              f"{r['s_per_sweep']:.3f} | {speed} | {r['log_joint']:.4f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if failed:
        print(f"{failed} run(s) failed (above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
