#!/usr/bin/env python
"""Scaling of the LDA `parallel` sweep: tokens/s and memory against N and against K.

Synthetic LDA corpora (``datasets.synthetic_lda``, V=10000, mean length 200, 50 planted topics)
of about --ns tokens (default 1M, 4M, 16M) are fitted at K=--base-k, and the --base-n corpus at
every K of --ks (default 50, 500, 5000). Each point runs in its own subprocess through
``scripts/bench_lda.py``'s engine runner (``--one``): --sweeps warm-up sweeps (compilation
included), then --sweeps timed ones. Memory: the engine's own peak resident memory (CPU; RSS
high-water mark after jax and the corpus are loaded) and the device's peak bytes in use where
the backend reports it (GPU); "bytes/token" is that memory minus the int32 count tables
(4 (V + D + 1) K bytes), per token; the last column is XLA's own account of the device
memory, the same on every backend: the arrays that stay resident (Data and State less the count
tables) and the sweeps' peak temporaries (``compiled.memory_analysis()``), per token. Cost should
be linear in N: the "time/token" column stays
flat down the N rows. Writes a markdown table, --json and a PNG plot (--png, needs matplotlib).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import tempfile
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_lda  # noqa: E402 - the engine runner and corpus builder of the throughput benchmark


def run_point(corpus_file: str, k: int, sweeps: int, engine: str, timeout: float) -> dict:
    args = SimpleNamespace(child_timeout=timeout)
    argv = sys.argv
    sys.argv = [argv[0], "--sweeps", str(sweeps)]        # what bench_lda's child parses
    try:
        return bench_lda.run_child(args, corpus_file, engine, k)
    finally:
        sys.argv = argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns", default="1e6,4e6,16e6", help="corpus sizes in tokens (approx.)")
    ap.add_argument("--ks", default="50,500,5000")
    ap.add_argument("--base-k", type=int, default=50, help="K of the N series")
    ap.add_argument("--base-n", type=float, default=1e6, help="N of the K series")
    ap.add_argument("--sweeps", type=int, default=3, help="warm-up and timed sweeps per point")
    ap.add_argument("--engine", default="parallel", choices=sorted(bench_lda.JAX_ENGINES))
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--doc-length", type=float, default=200)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per point")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--png", metavar="OUT", default=None, help="write the plot here")
    ap.add_argument("--replot", metavar="JSON", help="only draw --png from a --json of a run")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot) as f:
            run = json.load(f)
        for name in ("base_k", "base_n"):
            setattr(args, name, run["args"][name])
        _plot(run["results"], args)
        return
    import jax

    ns = sorted({float(x) for x in args.ns.split(",")} | {args.base_n})
    ks = [int(x) for x in args.ks.split(",")]
    points = sorted({(n, args.base_k) for n in ns} | {(args.base_n, k) for k in ks})
    print(f"# LDA scaling, {_dt.datetime.now().isoformat(timespec='seconds')}: jax {jax.__version__}, "
          f"{jax.device_count()} x {jax.devices()[0].device_kind}, engine {args.engine}, "
          f"{args.sweeps} + {args.sweeps} sweeps per point", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as tmp:
        files = {}
        for n in sorted({n for n, _ in points}):
            spec = SimpleNamespace(docs=max(1, round(n / args.doc_length)), words=args.words,
                                   doc_length=args.doc_length, true_topics=50, alpha=0.1,
                                   beta=0.01, seed=0)
            corpus = bench_lda.build_corpus(spec)
            files[n] = (os.path.join(tmp, f"corpus_{int(n)}.npz"), corpus.num_docs, corpus.num_words)
            np.savez(files[n][0], word_ids=corpus.word_ids, doc_offsets=corpus.doc_offsets,
                     num_words=corpus.num_words)
            del corpus
        for n, k in points:
            path, docs, words = files[n]
            r = run_point(path, k, args.sweeps, args.engine, args.timeout)
            r.update(docs=docs, words=words, n_target=n)
            results.append(r)

    print("\n| N tokens | K | M tokens/s | ns / token | peak memory MiB (CPU RSS / device) "
          "| bytes / token beyond the count tables | device bytes / token: resident + sweep "
          "temporaries (XLA) |\n|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| ~{r['n_target']:.0f} | {r['k']} | {r['error']} | | | | |")
            continue
        xla = ""
        if r.get("resident_bytes") is not None:
            xla = f"{r['resident_bytes'] / r['num_tokens']:.1f}"
            if r.get("sweep_temp_bytes") is not None:
                xla += f" + {r['sweep_temp_bytes'] / r['num_tokens']:.1f}"
        mem = r["device_peak_mb"] if r["device_peak_mb"] is not None else r["rss_delta_mb"]
        tables = 4 * (r["words"] + r["docs"] + 1) * r["k"] / 2**20
        per_token = (mem - tables) * 2**20 / r["num_tokens"]
        r["bytes_per_token"] = per_token
        print(f"| {r['num_tokens']:,} | {r['k']} | {r['tokens_per_s'] / 1e6:.2f} | "
              f"{1e9 / r['tokens_per_s']:.0f} | {mem:.0f} | {per_token:.1f} | {xla} |", flush=True)
    series = sorted((r for r in results if "error" not in r and r["k"] == args.base_k),
                    key=lambda r: r["num_tokens"])
    if len(series) >= 2:       # the runtime's fixed memory cancels in the slope
        a, b = series[0], series[-1]
        slope = ((b["bytes_per_token"] * b["num_tokens"] - a["bytes_per_token"] * a["num_tokens"])
                 / (b["num_tokens"] - a["num_tokens"]))
        time_ratio = (b["num_tokens"] / b["tokens_per_s"]) / (a["num_tokens"] / a["tokens_per_s"])
        print(f"\nK={args.base_k}: memory grows by {slope:.1f} bytes per token beyond the count "
              f"tables (slope from N={a['num_tokens']:,} to {b['num_tokens']:,}); sweep time "
              f"x{time_ratio:.2f} for x{b['num_tokens'] / a['num_tokens']:.2f} tokens")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(args=vars(args), jax=jax.__version__, results=results), f, indent=1)
    if args.png:
        _plot(results, args)


def _plot(results: list[dict], args) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install '.[bench]')")
        return
    ok = [r for r in results if "error" not in r]
    by_n = sorted((r for r in ok if r["k"] == args.base_k), key=lambda r: r["num_tokens"])
    by_k = sorted((r for r in ok if r["n_target"] == args.base_n), key=lambda r: r["k"])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot([r["num_tokens"] for r in by_n], [r["tokens_per_s"] / 1e6 for r in by_n], "o-")
    axes[0].set_ylim(bottom=0)
    axes[0].set(xscale="log", xlabel="tokens N", ylabel="M tokens / s",
                title=f"throughput vs N (K={args.base_k})")
    axes[1].plot([r["k"] for r in by_k], [r["tokens_per_s"] / 1e6 for r in by_k], "o-")
    axes[1].set(xscale="log", yscale="log", xlabel="topics K", ylabel="M tokens / s",
                title="throughput vs K (N ~ %.0e)" % args.base_n)
    mem = [r["bytes_per_token"] * r["num_tokens"] / 2**20 for r in by_n]
    axes[2].plot([r["num_tokens"] for r in by_n], mem, "o-", label="measured")
    if by_n:
        n0, m0 = by_n[0]["num_tokens"], mem[0]
        xs = [r["num_tokens"] for r in by_n]
        axes[2].plot(xs, [m0 + 16 * (x - n0) / 2**20 for x in xs], "--", color="grey",
                     label="+16 bytes / token")
    axes[2].set(xlabel="tokens N", ylabel="MiB beyond count tables",
                title=f"peak memory vs N (K={args.base_k})")
    axes[2].legend()
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"plot: {args.png}")


if __name__ == "__main__":
    main()
