#!/usr/bin/env python
"""HDP benchmark: jaxtopics' HDP kernels against tomotopy's HDPModel, in one run.

Engines (--samplers): ``parallel`` (the default kernel: direct assignment with its default
split-merge schedule), ``parallel-nosm`` (the same without split-merge moves), ``crf`` (the
blocked Chinese restaurant franchise kernel, the default before issue 34), ``sequential``,
``crf_sequential``; tomotopy ``HDPModel`` with 1 and 2 workers.

Three parts (``--parts``, default speed):

* ``speed``: one synthetic LDA corpus with 15 planted topics (default: 3000 docs x 100 words,
  ~300k tokens, V=3000, alpha=0.2, beta=0.05, seed 0). Each engine starts from one
  topic (tomotopy: initial_k=2, its minimum), runs --sweeps sweeps as warm-up (compilation and
  capacity growth included for jaxtopics) and is timed on the next --sweeps: tokens/s and the
  ratio to tomotopy with 1 worker, the topics holding >= 1 % of the tokens and the
  log-likelihoods after 2 x --sweeps; then the engines of --found-engines run on to
  --found-sweeps sweeps (default 200): are the planted topics found (exactly the planted number
  of topics >= 1 %, each matched to a planted one at TV < 0.25)? tomotopy runs with
  ``optim_interval = 0`` (alpha, gamma fixed: the same model).
* ``recovery``: the same corpus from 1 and from 30 initial topics, --recovery-sweeps sweeps
  (default 500): topics >= 1 % of the tokens at checkpoints, and the planted phi recovered
  (Hungarian matching of the topics >= 1 %, mean total-variation distance); tomotopy alongside
  (initial_k 2 and 30, fixed alpha and gamma as above).
* ``reuters``: ../shared/data/reuters, --reuters-sweeps sweeps (default 500) from one topic:
  active topics, topics >= 1 %, each engine's own log-likelihood per token (jaxtopics: the CRF
  joint log p(w, t, k) / N; tomotopy: ``ll_per_word``) and the common log p(w | z) / N (the
  topic-word Dirichlet-multinomial evidence of the final topic assignments).

jaxtopics: alpha = gamma = 1, beta = 0.05 (--alpha, --gamma, --beta), default settings
(split-merge moves included); tomotopy: the same alpha, gamma, eta = beta. Timings are
wall-clock on whatever device JAX picks (JAX_PLATFORMS=cpu forces the CPU).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import platform
import sys
import time

import numpy as np

PARTS = ("speed", "recovery", "reuters")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--parts", default="speed", help="comma-separated subset of " + ",".join(PARTS))
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--words", type=int, default=3000)
    ap.add_argument("--doc-length", type=float, default=100)
    ap.add_argument("--true-topics", type=int, default=15)
    ap.add_argument("--corpus-seed", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--sweeps", type=int, default=20, help="speed part: warm-up and timed sweeps")
    ap.add_argument("--found-sweeps", type=int, default=200,
                    help="speed part: sweeps by which the planted topics must be found")
    ap.add_argument("--found-engines", default="jaxtopics-parallel,jaxtopics-parallel-nosm,tomotopy-1w")
    ap.add_argument("--recovery-sweeps", type=int, default=500)
    ap.add_argument("--reuters-sweeps", type=int, default=500)
    ap.add_argument("--samplers", default="parallel,parallel-nosm,crf")
    ap.add_argument("--split-merge-every", type=int, default=0,
                    help="jaxtopics' Params.split_merge_every (0: each kernel's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-tomotopy", action="store_true")
    ap.add_argument("--json", metavar="OUT", help="write all results to this JSON file")
    return ap.parse_args(argv)


def planted(args):
    from jaxtopics.datasets import synthetic_lda

    return synthetic_lda(num_docs=args.docs, num_words=args.words, num_topics=args.true_topics,
                         mean_doc_length=args.doc_length, alpha=0.2, beta=0.05, seed=args.corpus_seed)


def word_log_evidence(counts_kv: np.ndarray, beta: float) -> float:
    """log p(w | z): sum_k [sum_w log beta^(n_kw) - log (V beta)^(n_k)] (float64)."""
    from scipy.special import gammaln

    c = np.asarray(counts_kv, np.float64)
    v = c.shape[1]
    return float(np.sum(gammaln(c + beta) - gammaln(beta))
                 - np.sum(gammaln(c.sum(1) + v * beta) - gammaln(v * beta)))


def matched_tv(phi_true: np.ndarray, phi: np.ndarray) -> float:
    from scipy.optimize import linear_sum_assignment

    if phi.shape[0] == 0:
        return float("nan")
    cost = 0.5 * np.abs(phi_true[:, None, :] - phi[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


# ---------------------------------------------------------------------------------------------
# jaxtopics


class JaxChain:
    """One jaxtopics HDP chain driven by the library's driver (capacity growth included)."""

    def __init__(self, corpus, sampler: str, initial_topics: int, args, seed: int):
        import jax

        from jaxtopics.fit import chain_keys
        from jaxtopics.models import hdp
        from jaxtopics.models.base import kernel_module

        moves = {} if not sampler.endswith("-nosm") else {"split_merge_steps": 0}
        params = hdp.check_params(hdp.Params(
            alpha=args.alpha, gamma=args.gamma, beta=args.beta, sampler=sampler.split("-")[0],
            initial_topics=initial_topics, split_merge_every=args.split_merge_every, **moves))
        self.hdp, self.corpus, self.params = kernel_module(hdp, params), corpus, params
        self.data = self.hdp.prepare(corpus, self.params)
        init_key, self.chain_key = chain_keys(seed)
        self.state = self.hdp.init(init_key, self.data, self.params)
        jax.block_until_ready(self.state)
        self.done = 0

    def run(self, sweeps: int) -> float:
        import jax

        from jaxtopics.fit import run_sweeps

        t0 = time.perf_counter()
        self.state, trace = run_sweeps(self.hdp, self.params, self.data, self.state,
                                       self.chain_key, start=self.done, num_sweeps=sweeps,
                                       num_tokens=self.corpus.num_tokens, eval_every=sweeps,
                                       progress=False)
        jax.block_until_ready(self.state)
        self.done += sweeps
        self.log_joint = trace[-1].log_joint_per_token
        return time.perf_counter() - t0

    def topic_word(self):
        """(counts [K_active, V], phi [K_active, V]) over the active topics."""
        est = self.hdp.estimate(self.state, self.params)
        slots = self.hdp.active_topics(self.state)
        return np.asarray(self.state.word_topic)[:, slots].T, est["phi"]


# ---------------------------------------------------------------------------------------------
# tomotopy


class TomotopyChain:
    def __init__(self, corpus, initial_k: int, args, seed: int, workers: int):
        import tomotopy as tp

        self.corpus, self.workers = corpus, workers
        self.model = tp.HDPModel(initial_k=max(2, initial_k), alpha=args.alpha, eta=args.beta,
                                 gamma=args.gamma, seed=seed)
        self.model.optim_interval = 0
        vocab = corpus.vocab
        for d in range(corpus.num_docs):
            words = corpus.doc(d)
            if len(words):
                self.model.add_doc([vocab[w] for w in words])
        self.done = 0

    def run(self, sweeps: int) -> float:
        t0 = time.perf_counter()
        self.model.train(sweeps, workers=self.workers)
        self.done += sweeps
        return time.perf_counter() - t0

    @property
    def log_joint(self) -> float:
        return float(self.model.ll_per_word)

    def topic_word(self):
        """(counts [K_live, V], phi [K_live, V]) in the corpus's word order."""
        m = self.model
        index = {w: i for i, w in enumerate(self.corpus.vocab)}
        col = np.array([index[w] for w in m.used_vocabs])
        live = [k for k in range(m.k) if m.is_live_topic(k)]
        pos = {k: i for i, k in enumerate(live)}
        counts = np.zeros((len(live), len(self.corpus.vocab)), np.int64)
        for doc in m.docs:
            for w, k in zip(doc.words, doc.topics):
                if k in pos:
                    counts[pos[k], col[w]] += 1
        phi = np.zeros_like(counts, dtype=np.float64)
        for i, k in enumerate(live):
            phi[i, col] = m.get_topic_word_dist(k)
        return counts, phi


def summarize(chain, corpus, beta: float, phi_true=None) -> dict:
    counts, phi = chain.topic_word()
    sizes = counts.sum(1)
    big = sizes >= 0.01 * corpus.num_tokens
    out = {"sweeps": chain.done, "active_topics": int((sizes > 0).sum()),
           "topics_1pct": int(big.sum()), "log_lik_per_token": chain.log_joint,
           "log_p_w_given_z_per_token": word_log_evidence(counts, beta) / corpus.num_tokens}
    if phi_true is not None:
        out["matched_tv"] = matched_tv(phi_true, np.asarray(phi)[big])
    return out


def engines(args):
    names = [f"jaxtopics-{s}" for s in args.samplers.split(",") if s]
    if not args.skip_tomotopy and importlib.util.find_spec("tomotopy") is not None:
        names += ["tomotopy-1w", "tomotopy-2w"]
    return names


def make_chain(name: str, corpus, initial_topics: int, args):
    if name.startswith("jaxtopics-"):
        return JaxChain(corpus, name.split("-", 1)[1], initial_topics, args, args.seed)
    return TomotopyChain(corpus, initial_topics, args, args.seed, int(name[-2]))


# ---------------------------------------------------------------------------------------------
# parts


def part_speed(args, syn) -> list[dict]:
    corpus, rows = syn.corpus, []
    for name in engines(args):
        _log(f"speed: {name}")
        chain = make_chain(name, corpus, 1, args)
        warm = chain.run(args.sweeps)
        timed = chain.run(args.sweeps)
        row = {"engine": name, "warmup_s": warm, "timed_s": timed,
               "tokens_per_s": args.sweeps * corpus.num_tokens / timed}
        row.update(summarize(chain, corpus, args.beta, syn.phi))
        if name in args.found_engines.split(",") and args.found_sweeps > chain.done:
            chain.run(args.found_sweeps - chain.done)
        if chain.done >= args.found_sweeps:
            s = summarize(chain, corpus, args.beta, syn.phi)
            row["found"] = {"sweeps": chain.done, "topics_1pct": s["topics_1pct"],
                            "matched_tv": s["matched_tv"],
                            "found": bool(s["topics_1pct"] == args.true_topics
                                          and s["matched_tv"] < 0.25)}
            # settled: the topics found (no capacity growth, no recompilation in the window)
            row["settled_tokens_per_s"] = args.sweeps * corpus.num_tokens / chain.run(args.sweeps)
        rows.append(row)
        _log(f"  {row}")
    base = next((r["tokens_per_s"] for r in rows if r["engine"] == "tomotopy-1w"), None)
    for r in rows:
        r["vs_tomotopy_1w"] = None if base is None else r["tokens_per_s"] / base
    return rows


def part_recovery(args, syn) -> list[dict]:
    corpus, rows = syn.corpus, []
    stops = sorted({s for s in (50, 100, 200, 300, 500, 1000) if s < args.recovery_sweeps}
                   | {args.recovery_sweeps})
    for name in engines(args):
        if name == "tomotopy-2w":
            continue
        for k0 in (1, 30):
            chain = make_chain(name, corpus, k0, args)
            row = {"engine": name, "initial_topics": k0, "trajectory": {}}
            t0 = time.perf_counter()
            for stop in stops:
                chain.run(stop - chain.done)
                s = summarize(chain, corpus, args.beta, syn.phi)
                row["trajectory"][stop] = s["topics_1pct"]
                _log(f"recovery: {name} from {k0}: {stop} sweeps, {s['topics_1pct']} topics >= 1% "
                     f"({s['active_topics']} active), matched TV {s['matched_tv']:.3f}, "
                     f"{time.perf_counter() - t0:.0f}s")
            row.update(s)
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
    return rows


def part_reuters(args) -> list[dict]:
    from jaxtopics.datasets import load_shared

    corpus, rows = load_shared("reuters"), []
    for name in engines(args):
        if name == "tomotopy-2w":
            continue
        _log(f"reuters: {name}")
        chain = make_chain(name, corpus, 1, args)
        t0 = time.perf_counter()
        chain.run(args.reuters_sweeps)
        row = {"engine": name, "seconds": time.perf_counter() - t0}
        row.update(summarize(chain, corpus, args.beta))
        rows.append(row)
        _log(f"  {row}")
    return rows


def _f(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main() -> None:
    args = parse_args()
    parts = [p for p in args.parts.split(",") if p]
    for p in parts:
        if p not in PARTS:
            raise SystemExit(f"unknown part {p!r} (known: {PARTS})")
    import jax

    results = {"date": _dt.datetime.now().isoformat(timespec="seconds"),
               "backend": jax.default_backend(), "platform": platform.platform(),
               "args": vars(args)}
    syn = planted(args) if {"speed", "recovery"} & set(parts) else None
    if syn is not None:
        print(f"synthetic corpus: {syn.corpus.num_docs} docs, {syn.corpus.num_tokens} tokens, "
              f"V={syn.corpus.num_words}, {args.true_topics} planted topics")
    if "speed" in parts:
        rows = results["speed"] = part_speed(args, syn)
        print(f"\n### Speed ({args.sweeps} timed sweeps after {args.sweeps} warm-up, from one topic)\n")
        print("| engine | tokens/s | vs tomotopy 1w | tokens/s settled | topics >= 1 % | active "
              f"| log-lik/token | log p(w|z)/token | matched TV | found by {args.found_sweeps} |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            f = r.get("found")
            found = "-" if f is None else (f"{'yes' if f['found'] else 'no'} ({f['topics_1pct']} "
                                           f"topics, TV {_f(f['matched_tv'], '.3f')})")
            print(f"| {r['engine']} | {r['tokens_per_s']:,.0f} | {_f(r['vs_tomotopy_1w'], '.2f')} "
                  f"| {_f(r.get('settled_tokens_per_s'), ',.0f')} | {r['topics_1pct']} | {r['active_topics']} "
                  f"| {_f(r['log_lik_per_token'], '.4f')} | {r['log_p_w_given_z_per_token']:.4f} "
                  f"| {_f(r.get('matched_tv'), '.3f')} | {found} |")
    if "recovery" in parts:
        rows = results["recovery"] = part_recovery(args, syn)
        stops = sorted({int(s) for r in rows for s in r["trajectory"]})
        print(f"\n### Recovery of {args.true_topics} planted topics (topics >= 1 % of the tokens)\n")
        print("| engine | from | " + " | ".join(f"{s} sweeps" for s in stops) + " | matched TV | s |")
        print("|---|---:|" + "---:|" * len(stops) + "---:|---:|")
        for r in rows:
            print(f"| {r['engine']} | {r['initial_topics']} | "
                  + " | ".join(str(r["trajectory"].get(s, "-")) for s in stops)
                  + f" | {_f(r.get('matched_tv'), '.3f')} | {r['seconds']:.0f} |")
    if "reuters" in parts:
        rows = results["reuters"] = part_reuters(args)
        print(f"\n### Reuters ({args.reuters_sweeps} sweeps from one topic)\n")
        print("| engine | active topics | topics >= 1 % | own log-lik/token | log p(w|z)/token | s |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['engine']} | {r['active_topics']} | {r['topics_1pct']} "
                  f"| {_f(r['log_lik_per_token'], '.4f')} | {r['log_p_w_given_z_per_token']:.4f} "
                  f"| {r['seconds']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
