#!/usr/bin/env python
"""Held-out perplexity on Reuters: LDA with fixed priors against learned priors.

Reuters (``load_shared("reuters")``: 395 docs) is split once by
``jaxtopics.selection.split_documents`` (a seeded 10 % of the documents held out,
``--fraction``, ``--split-seed``); LDA K=20 is fitted on the rest from alpha=0.1, beta=0.01 for
``--sweeps`` sweeps (default 500), once per seed of ``--seeds`` (default 0,1,2), in three
settings:

* ``fixed``: alpha and beta stay at their starting values;
* ``symmetric``: ``optimize_alpha="symmetric"``, ``optimize_beta=True``;
* ``asymmetric``: ``optimize_alpha="asymmetric"``, ``optimize_beta=True``

(learned priors: the library's defaults, ``burn_in=50``, ``optimize_every=10``, so the first
update is after sweep 60). Every fitted model is scored on the held-out documents with
``model.perplexity(held, "left_to_right")`` (10 particles) and
``model.perplexity(held, "completion")`` (theta folded in from each document's first half, the
second half scored), both with the chain's seed. The script prints a markdown table, mean +- sd
(sample sd, ddof=1) over the seeds: learned alpha (the sum of the K values for asymmetric),
learned beta, train log joint per token (log p(w, z) / N of the final state, under that row's
own priors), the two held-out perplexities; then the wall time of each setting and of the run.
Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time

import numpy as np

SETTINGS = {
    "fixed": dict(),
    "symmetric": dict(optimize_alpha="symmetric", optimize_beta=True),
    "asymmetric": dict(optimize_alpha="asymmetric", optimize_beta=True),
}
LABELS = {
    "fixed": "fixed priors",
    "symmetric": "learned: symmetric alpha + beta",
    "asymmetric": "learned: asymmetric alpha + beta",
}
BURN_IN, OPTIMIZE_EVERY = 50, 10          # the library's defaults: first update after sweep 60


class _OneLineParser(argparse.ArgumentParser):
    """argparse that refuses a bad flag with one line (no usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(low: int, what: str):
    """An argparse type: an integer >= `low` (`what` names it in the message)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = low - 1
        if v < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v
    return parse


_positive_int = _int_at_least(1, "a positive integer")
_non_negative_int = _int_at_least(0, "a non-negative integer")


def _seed_list(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    try:
        seeds = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated non-negative integers, got {text!r}") from None
    if any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"seeds must be non-negative, got {text!r}")
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds must be distinct, got {text!r}")
    return seeds


def _fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return v


def _settings_list(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",")]
    bad = [n for n in names if n not in SETTINGS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown setting(s) {', '.join(map(repr, bad))}; choose from {','.join(SETTINGS)}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"settings must be distinct, got {text!r}")
    return names


def parse_args(argv=None) -> argparse.Namespace:
    ap = _OneLineParser(description=__doc__.split("\n\n")[0],
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--sweeps", type=_positive_int, default=500,
                    help=f"sweeps per chain (at least {BURN_IN + OPTIMIZE_EVERY}: the first "
                         "prior update comes after that sweep)")
    ap.add_argument("--seeds", type=_seed_list, default=[0, 1, 2],
                    help="comma-separated chain seeds (also the perplexity seeds)")
    ap.add_argument("--settings", type=_settings_list, default=list(SETTINGS),
                    help="comma-separated subset of " + ",".join(SETTINGS))
    ap.add_argument("--fraction", type=_fraction, default=0.1, help="fraction of documents held out")
    ap.add_argument("--split-seed", type=_non_negative_int, default=0,
                    help="seed of the held-out split (one split for every chain)")
    ap.add_argument("--json", metavar="OUT", help="also write every chain's numbers to this JSON file")
    args = ap.parse_args(argv)
    if args.sweeps < BURN_IN + OPTIMIZE_EVERY:
        ap.error(f"--sweeps must be at least {BURN_IN + OPTIMIZE_EVERY} (the learned priors are "
                 f"first updated after sweep {BURN_IN + OPTIMIZE_EVERY}), got {args.sweeps}")
    if args.json is not None:
        folder = os.path.dirname(os.path.abspath(args.json))
        if os.path.isdir(args.json) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            ap.error(f"--json: cannot write {args.json!r}")
    return args


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_setting(name: str, train, held, args) -> dict:
    import jaxtopics as jt

    rows = []
    t_setting = time.perf_counter()
    for seed in args.seeds:
        t0 = time.perf_counter()
        model = jt.LDA(num_topics=20, alpha=0.1, beta=0.01, **SETTINGS[name]).fit(
            train, num_sweeps=args.sweeps, seed=seed, progress=False)
        fit_s = time.perf_counter() - t0
        alpha = np.asarray(model.alpha, np.float64)
        t1 = time.perf_counter()
        ppl_lr = model.perplexity(held, "left_to_right", seed=seed)
        ppl_c = model.perplexity(held, "completion", seed=seed)
        eval_s = time.perf_counter() - t1
        row = dict(seed=seed, alpha=float(alpha.sum()) if alpha.ndim else float(alpha),
                   alpha_values=alpha.tolist(), beta=float(model.beta),
                   log_joint_per_token=float(model.log_joint_per_token()),
                   perplexity_left_to_right=float(ppl_lr), perplexity_completion=float(ppl_c),
                   fit_seconds=fit_s, eval_seconds=eval_s)
        rows.append(row)
        _log(f"  {name} seed {seed}: alpha {row['alpha']:.4g}, beta {row['beta']:.4g}, "
             f"log joint/token {row['log_joint_per_token']:.4f}, ppl L2R {ppl_lr:.1f}, "
             f"completion {ppl_c:.1f}  (fit {fit_s:.1f} s, eval {eval_s:.1f} s)")
    return dict(setting=name, chains=rows, seconds=time.perf_counter() - t_setting)


def _mean_sd(values, digits: int) -> str:
    v = np.asarray(values, np.float64)
    if v.size == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} +- {v.std(ddof=1):.{digits}f}"


def table(results: list[dict]) -> str:
    lines = ["| setting | learned alpha (sum for asymmetric) | learned beta | train log joint/token "
             "| held-out perplexity left-to-right | held-out perplexity completion |",
             "|---|---|---|---|---|---|"]
    for r in results:
        c = r["chains"]
        col = lambda key: [x[key] for x in c]
        if r["setting"] == "fixed":
            alpha, beta = "0.1 (fixed)", "0.01 (fixed)"
        else:
            alpha, beta = _mean_sd(col("alpha"), 4), _mean_sd(col("beta"), 5)
        lines.append(f"| {LABELS[r['setting']]} | {alpha} | {beta} | "
                     f"{_mean_sd(col('log_joint_per_token'), 4)} | "
                     f"{_mean_sd(col('perplexity_left_to_right'), 1)} | "
                     f"{_mean_sd(col('perplexity_completion'), 1)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    import jax

    from jaxtopics.datasets import load_shared
    from jaxtopics.selection import split_documents

    t_start = time.perf_counter()
    corpus = load_shared("reuters")
    train, held = split_documents(corpus, args.fraction, seed=args.split_seed)
    _log(f"reuters: {corpus.num_docs} docs, {corpus.num_tokens} tokens; train {train.num_docs} docs "
         f"({train.num_tokens} tokens), held out {held.num_docs} docs ({held.num_tokens} tokens, "
         f"split seed {args.split_seed}); K=20, {args.sweeps} sweeps, seeds {args.seeds}; "
         f"jax {jax.__version__} on {jax.default_backend()}")
    results = [run_setting(name, train, held, args) for name in args.settings]
    total = time.perf_counter() - t_start

    seeds = ",".join(map(str, args.seeds))
    print(f"Reuters, {train.num_docs} training / {held.num_docs} held-out documents "
          f"(split seed {args.split_seed}), LDA K=20 from alpha=0.1, beta=0.01, "
          f"{args.sweeps} sweeps, seeds {seeds}; mean +- sd over seeds:\n")
    print(table(results))
    print()
    for r in results:
        fit = sum(x["fit_seconds"] for x in r["chains"])
        ev = sum(x["eval_seconds"] for x in r["chains"])
        print(f"- {LABELS[r['setting']]}: {r['seconds']:.1f} s ({fit:.1f} s fitting, "
              f"{ev:.1f} s held-out evaluation, {len(r['chains'])} chains)")
    print(f"- wall time, whole run: {total:.1f} s ({total / 60:.1f} min), "
          f"{_dt.date.today().isoformat()}, {platform.machine()}, jax {jax.__version__} "
          f"({jax.default_backend()})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(sweeps=args.sweeps, seeds=args.seeds, fraction=args.fraction,
                           split_seed=args.split_seed, train_docs=train.num_docs,
                           held_out_docs=held.num_docs, results=results, seconds=total), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
