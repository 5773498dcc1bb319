"""Short-text clustering benchmark: documents/s of DMM (GSDMM) and DPMM (GSDPMM), `parallel` vs
`sequential`, on the gsdmm corpora of ../shared/data, in one run.

    python scripts/bench_short_text.py                        # News-T, every engine
    python scripts/bench_short_text.py --dataset tweet --sweeps 30 --json out.json

Each engine: build the corpus as the issue does (``Corpus.from_texts(texts, tokenizer=str.split)``),
run ``--warmup`` sweeps (compilation and, for DPMM, the seating sweep and capacity growth
included), then time ``--sweeps`` more sweeps in one jitted chunk; documents/s = D x sweeps /
seconds. Reported with the final NMI against the gold clusters, the clusters in use, and the log
joint per token. Settings: DMM K=300, alpha=beta=0.1 (GSDMM's); DPMM alpha=0.1 D, beta=0.02
(GSDPMM's). Engines are a registry (ENGINES), so other short-text models add a row.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jaxtopics as jt  # noqa: E402
from jaxtopics.fit import chain_keys, run_sweeps  # noqa: E402
from jaxtopics.models import dmm, dpmm  # noqa: E402

FILES = {"news-t": "News-T.jsonl", "tweet": "Tweet.jsonl"}


def load(name: str, root: Path):
    rows = [json.loads(line) for line in (root / "gsdmm" / FILES[name]).read_text().splitlines()
            if line.strip()]
    corpus = jt.Corpus.from_texts([r["text"] for r in rows], tokenizer=str.split)
    return corpus, np.array([r["cluster"] for r in rows])


def _mixture(module, params_of):
    def run(corpus, gold, sampler, args):
        params = module.check_params(params_of(corpus, sampler, args))
        data = module.prepare(corpus, params)
        init_key, chain_key = chain_keys(args.seed)
        state = module.init(init_key, data, params)
        kw = dict(num_tokens=corpus.num_tokens, eval_every=10**9, progress=False)
        t0 = time.perf_counter()
        state, _ = run_sweeps(module, params, data, state, chain_key, start=0,
                              num_sweeps=args.warmup, **kw)
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        state, trace = run_sweeps(module, params, data, state, chain_key, start=args.warmup,
                                  num_sweeps=args.sweeps, **kw)
        jax.block_until_ready(state)
        seconds = time.perf_counter() - t0
        est = module.estimate(state, params)
        sizes = np.asarray(est["cluster_sizes"])
        return {"docs_per_s": corpus.num_docs * args.sweeps / seconds,
                "seconds_per_sweep": seconds / args.sweeps, "warmup_s": warm,
                "nmi": jt.metrics.nmi(gold, np.asarray(est["labels"])),
                "clusters": int(np.sum(sizes > 0)),
                "clusters_1pct": int(np.sum(sizes >= 0.01 * corpus.num_docs)),
                "log_joint_per_token": trace[-1].log_joint_per_token}
    return run


ENGINES = {
    "dmm-parallel": (_mixture(dmm, lambda c, s, a: dmm.Params(300, 0.1, 0.1, sampler=s)), "parallel"),
    "dmm-sequential": (_mixture(dmm, lambda c, s, a: dmm.Params(300, 0.1, 0.1, sampler=s)), "sequential"),
    "dpmm-parallel": (_mixture(dpmm, lambda c, s, a: dpmm.Params(0.1 * c.num_docs, 0.02, sampler=s,
                                                                 capacity=256)), "parallel"),
    "dpmm-sequential": (_mixture(dpmm, lambda c, s, a: dpmm.Params(0.1 * c.num_docs, 0.02, sampler=s,
                                                                   capacity=256)), "sequential"),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--dataset", choices=sorted(FILES), default="news-t")
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--ptm", default="jax-parallel,tomotopy-ptm",
                   help="PTM engines run after the mixtures on the same dataset, from "
                        "scripts/bench_ptm.py (jax-parallel, jax-sequential, tomotopy-ptm, "
                        "tomotopy-lda); '' skips PTM")
    p.add_argument("--ptm-sweeps", type=int, default=100)
    args = p.parse_args(argv)
    if args.ptm and args.ptm_sweeps < 2:
        p.error(f"--ptm-sweeps must be >= 2 (the first compiles, the rest are timed), got "
                f"{args.ptm_sweeps}")
    corpus, gold = load(args.dataset, args.data)
    print(f"{args.dataset}: {corpus.num_docs} documents, {corpus.num_tokens} tokens, "
          f"{corpus.num_words} words; jax {jax.__version__} on {jax.default_backend()} "
          f"({jax.devices()[0].device_kind}), {platform.machine()}; "
          f"{args.warmup} warm-up + {args.sweeps} timed sweeps, seed {args.seed}", flush=True)
    rows = {}
    print("| engine | documents/s | s/sweep | NMI | clusters (>= 1 %) | log joint/token | warm-up s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.engines.split(","):
        run, sampler = ENGINES[name]
        r = rows[name] = run(corpus, gold, sampler, args)
        print(f"| {name} | {r['docs_per_s']:,.0f} | {r['seconds_per_sweep']:.3f} | {r['nmi']:.4f} | "
              f"{r['clusters']} ({r['clusters_1pct']}) | {r['log_joint_per_token']:.4f} | "
              f"{r['warmup_s']:.1f} |", flush=True)
    if args.ptm:      # PTM vs tomotopy's PTModel in the same run: same K (= gold clusters), P = D/10
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_ptm import format_table, ptm_rows

        engines = tuple(e for e in args.ptm.split(",") if e)
        try:
            import tomotopy  # noqa: F401
        except ImportError:
            engines = tuple(e for e in engines if not e.startswith("tomotopy"))
        print(f"\nPTM on {args.dataset} ({args.ptm_sweeps} sweeps; tokens/s against tomotopy):")
        print(format_table(ptm_rows((args.dataset,), engines, args.ptm_sweeps, (args.seed,),
                                    root=args.data)), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"dataset": args.dataset, "backend": jax.default_backend(),
                                         "args": {k: str(v) for k, v in vars(args).items()},
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
