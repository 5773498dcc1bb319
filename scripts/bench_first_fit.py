"""Time to the first result: `jaxtopics fit` of each model on Tweet, 50 sweeps, in a fresh
process, with an empty compilation cache and then again with the cache the first run filled
(jaxtopics.compile_cache). Wall clock of the whole command (Python start, imports, reading the
corpus, compiling or loading the programs, the sweeps, writing --out), what a user waits for.

    python scripts/bench_first_fit.py [--models lda,dmm,...] [--sweeps 50] [--devices 1]

DP-MRM reads label sets from text lines: its input is Tweet with each tweet's cluster as its
one label. Sentence-LDA reads each tweet as one sentence.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsdmm" / "Tweet.jsonl"
#: each model's options (the CLI defaults otherwise)
OPTIONS = {"lda": ["--num-topics", "20"], "slda": ["--num-topics", "20"],
           "ptm": ["--num-topics", "20"], "dmm": ["--num-clusters", "100"], "dpmm": [],
           "hdp": [], "dpmrm": []}


def _inputs(folder: Path) -> dict[str, Path]:
    """Tweet as JSON lines (as shipped) and as labelled text lines for DP-MRM."""
    rows = [json.loads(line) for line in SHARED.read_text(encoding="utf-8").splitlines() if line]
    labelled = folder / "tweet-labelled.txt"
    labelled.write_text("".join(f"c{r['cluster']}\t{r['text']}\n" for r in rows), encoding="utf-8")
    return {"jsonl": SHARED, "labelled": labelled}


def _fit(model: str, source: Path, out: Path, cache: Path, sweeps: int, devices: str) -> float:
    command = [sys.executable, "-m", "jaxtopics.cli", "fit", "--model", model, "--input",
               str(source), "--out", str(out), "--sweeps", str(sweeps), "--seed", "0",
               "--no-progress", "--devices", devices, "--compile-cache", str(cache),
               *OPTIONS[model]]
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{model}: exit status {done.returncode}: {done.stderr.strip()[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="lda,slda,ptm,dmm,dpmm,hdp,dpmrm")
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--devices", default="1", help="--devices of every fit (default 1)")
    args = parser.parse_args()
    models = args.models.split(",")
    if unknown := [m for m in models if m not in OPTIONS]:
        sys.exit(f"--models: unknown {unknown}; known: {sorted(OPTIONS)}")
    if args.sweeps < 1:
        sys.exit("--sweeps must be >= 1")
    if not SHARED.exists():
        sys.exit(f"{SHARED} not found (../shared/data beside the repository)")
    work = Path(tempfile.mkdtemp(prefix="jaxtopics-first-fit-"))
    try:
        inputs = _inputs(work)
        print(f"Tweet, {args.sweeps} sweeps, --devices {args.devices}, fresh process each")
        print("| model | first run, empty cache (s) | again, cache filled (s) | cache MiB |")
        print("|---|---|---|---|")
        for model in models:
            cache = work / f"cache-{model}"
            source = inputs["labelled" if model == "dpmrm" else "jsonl"]
            cold = _fit(model, source, work / f"out-{model}-1", cache, args.sweeps, args.devices)
            warm = _fit(model, source, work / f"out-{model}-2", cache, args.sweeps, args.devices)
            size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) / 2**20
            print(f"| {model} | {cold:.1f} | {warm:.1f} | {size:.1f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
