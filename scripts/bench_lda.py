#!/usr/bin/env python
"""Throughput benchmark: jaxtopics LDA samplers against tomotopy, in one run.

One synthetic LDA corpus is drawn (default: D=5000 docs, V=10000 words, mean length 200, so
N ~ 1M tokens, planted with K_true=50 topics) and saved to a temporary file. Then, for every K in
--ks, every engine runs in its OWN subprocess (this script re-invoking itself with the hidden
``--one ENGINE,K,SCALE`` flag), so that the peak resident memory (``ru_maxrss``) of each engine
is measured on its own. In each subprocess:

* jaxtopics: ``lda.prepare`` / ``lda.init``, one jitted ``fori_loop`` of ``--sweeps`` sweeps
  (state donated) is compiled, run once as warm-up (sweeps 1..S), then timed on sweeps S+1..2S
  with ``block_until_ready``; the log joint per token (``lda.log_joint / N``) is read after 2S.
* tomotopy: ``LDAModel(k=K, alpha, eta, seed)`` with the same documents (string tokens),
  ``train(S, workers=w)`` as warm-up, then ``train(S, workers=w)`` timed; ``ll_per_word`` after
  2S. Hyper-parameter optimisation is switched off (``optim_interval = 0``) so that both engines
  sample the same fixed-alpha model and their log joints are comparable.

Finally a scaling check: jaxtopics "parallel" at the first K on the corpus and on the corpus
repeated twice (2N tokens, same per-token statistics; ``--scaling half``: on its first half of
the documents instead, cheaper for huge corpora); the time ratio should be ~ the token ratio.

Time to quality (``--quality``): per K, ``--quality-chains`` tomotopy chains (2 workers,
``optim_interval=0``, seeds 0, 1, ...) run ``--quality-sweeps`` sweeps; their mean log joint per
token L* is the bar (log p(w, z)/N computed here from each chain's own topic assignments with the
same alpha and beta, ``collapsed_log_joint``, not tomotopy's ``ll_per_word``). Then as many
jaxtopics chains run the CLI default way (``jaxtopics fit``'s settings: ``LDA(...).fit(...,
devices="auto")`` with the CPU split one XLA device per core) and are evaluated every
``--quality-every`` sweeps (the trace the CLI prints); the time to quality is when the chains'
mean log joint per token reaches L*, the mean over the chains of their wall times at each
evaluation (the evaluations included), interpolated linearly between the two evaluations around
the crossing (a chain that stopped early, past L* + ``--quality-margin`` or at
``--quality-max-sweeps``, counts with its last log joint and with its time scaled to the sweeps). One warm-up fit compiles first (the compile-included time adds its compile time).

Results go to a markdown table (and --json OUT). Timings are wall-clock on whatever device JAX
picks (set JAX_PLATFORMS=cpu to force the CPU).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

# engine name -> (kind, settings)
JAX_ENGINES = {
    "parallel": dict(sampler="parallel"),                    # exact draws (mh_steps=0)
    "parallel-1thread": dict(sampler="parallel"),            # the same, XLA:CPU on one thread
    "parallel-2dev": dict(sampler="parallel"),               # document-sharded over 2 devices
    "parallel-mh": dict(sampler="parallel", mh_steps=2),  # O(1) MH moves instead of exact draws
    "sequential": dict(sampler="sequential"),
    "uncollapsed": dict(sampler="uncollapsed"),
}
# extra environment of an engine's subprocess. NPROC=1 makes XLA:CPU size its intra-op thread
# pool to one thread (it must be set before jaxlib starts): at small K the per-op cost of
# splitting small ops over threads outweighs the parallel speed-up.
# parallel-2dev: the CPU is split into 2 XLA devices, one document shard each (jaxtopics.distributed).
ENGINE_ENV = {"parallel-1thread": {"NPROC": "1"},
              "parallel-2dev": {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}}
SHARDS = {"parallel-2dev": 2}
TOMOTOPY_ENGINES = {"tomotopy-1w": 1, "tomotopy-2w": 2}
REFERENCE = "tomotopy-2w"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _maxrss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (ru_maxrss is KiB on Linux)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def _proc_status_mb(field: str) -> float | None:
    """A memory line of /proc/self/status (VmRSS, VmHWM) in MiB; None where unavailable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM) of this process (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000, help="documents D")
    ap.add_argument("--words", type=int, default=10000, help="vocabulary size V")
    ap.add_argument("--doc-length", type=float, default=200, help="mean document length")
    ap.add_argument("--true-topics", type=int, default=50, help="K used to generate the corpus")
    ap.add_argument("--keep-unused-words", action="store_true",
                    help="keep the generator's words that never occur in the vocabulary (the "
                         "default cuts them, as tomotopy does: build_corpus)")
    ap.add_argument("--ks", default="50,500", help="comma-separated K to fit")
    ap.add_argument("--sweeps", type=int, default=10,
                    help="timed sweeps (the same number of warm-up sweeps runs first)")
    ap.add_argument("--samplers", default="parallel,parallel-1thread,parallel-2dev,parallel-mh",
                    help=f"comma-separated jaxtopics engines from {sorted(JAX_ENGINES)}")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of every engine, interleaved (engine A, B, ..., A, B, ...); the "
                         "table shows each engine's median round (of an even count, the slower "
                         "middle one) and the range, over the rounds that ran (noisy machines)")
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--sync-every", type=int, default=None,
                    help="sharded engines: blocks between exchanges (default: lda.Params default)")
    ap.add_argument("--exchange", choices=("rotate", "moves"), default=None,
                    help="sharded engines: how devices share n_kw (default: lda.Params default)")
    ap.add_argument("--num-blocks", type=int, default=None,
                    help="default: lda.Params default")
    ap.add_argument("--mh-steps", type=int, default=None,
                    help="default: lda.Params default (0 = exact draws)")
    ap.add_argument("--init", choices=("random", "incremental"), default=None,
                    help="jaxtopics' initial topics (default: lda.Params default; sharded "
                         "engines support random only)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-tomotopy", action="store_true", help="do not run tomotopy")
    ap.add_argument("--skip-scaling", action="store_true", help="do not run the scaling check")
    ap.add_argument("--scaling", choices=("double", "half"), default="double",
                    help="scaling check against the corpus repeated twice (2N) or against its "
                         "first half of the documents (N/2, cheaper on huge corpora)")
    ap.add_argument("--child-timeout", type=float, default=1800,
                    help="seconds allowed to each engine subprocess")
    ap.add_argument("--quality", action="store_true",
                    help="measure time to quality instead of throughput (module docstring)")
    ap.add_argument("--quality-chains", type=int, default=3, help="chains per engine")
    ap.add_argument("--quality-sweeps", type=int, default=100,
                    help="tomotopy's sweeps: their mean log joint is the bar L*")
    ap.add_argument("--quality-every", type=int, default=10,
                    help="jaxtopics sweeps between evaluations of the log joint (the CLI's "
                         "--eval-every default)")
    ap.add_argument("--quality-max-sweeps", type=int, default=400,
                    help="a jaxtopics chain stops here at the latest")
    ap.add_argument("--quality-margin", type=float, default=0.01,
                    help="a jaxtopics chain (but the last) stops once past L* + this")
    ap.add_argument("--json", metavar="OUT", help="write all results to this JSON file")
    # hidden: run one engine in this process and print one RESULT line
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--corpus-file", help=argparse.SUPPRESS)
    ap.add_argument("--target", type=float, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# corpus


def _setting(args, field: str):
    """A kernel setting as the run uses it: the command line's, else lda.Params' default."""
    from jaxtopics.models import lda
    given = getattr(args, field)
    return lda.Params._field_defaults[field] if given is None else given


def build_corpus(args):
    """The synthetic corpus, its vocabulary cut to the words that occur (unless
    --keep-unused-words): tomotopy drops words that never occur (its V is the used words'), so
    with unused words in the vocabulary the two engines would sample different models (V beta
    in (1) differs) and their log joints would differ by the normaliser sum_k lgamma(V beta) -
    lgamma(n_k + V beta) (the default corpus uses 6,725 of its 10,000 words)."""
    from jaxtopics.corpus import Corpus
    from jaxtopics.datasets import synthetic_lda
    corpus = synthetic_lda(num_docs=args.docs, num_words=args.words, num_topics=args.true_topics,
                           mean_doc_length=args.doc_length, alpha=args.alpha, beta=args.beta,
                           seed=args.seed).corpus
    if args.keep_unused_words:
        return corpus
    ids = np.asarray(corpus.word_ids)
    used = np.flatnonzero(np.bincount(ids, minlength=corpus.num_words))
    new_id = np.zeros(corpus.num_words, np.int32)
    new_id[used] = np.arange(len(used), dtype=np.int32)
    return Corpus.from_arrays(new_id[ids], corpus.doc_offsets,
                              tuple(corpus.vocab[i] for i in used))


def load_corpus(path: str, scale: str):
    """The saved corpus; scale "2": repeated twice (2N tokens, same statistics); "half": its
    first half of the documents (~N/2 tokens)."""
    from jaxtopics.corpus import Corpus
    with np.load(path) as f:
        word_ids, offsets, v = f["word_ids"], f["doc_offsets"], int(f["num_words"])
    if scale == "2":
        n = int(offsets[-1])
        word_ids = np.tile(word_ids, 2)
        offsets = np.concatenate([offsets, offsets[1:] + n])
    elif scale == "half":
        d = (len(offsets) - 1) // 2
        offsets = offsets[:d + 1]
        word_ids = word_ids[:offsets[-1]]
    elif scale != "1":
        raise ValueError(f"unknown corpus scale {scale!r}")
    width = max(5, len(str(v - 1)))
    vocab = tuple(f"w{i:0{width}d}" for i in range(v))
    return Corpus.from_arrays(word_ids, offsets, vocab)


# ---------------------------------------------------------------------------------------------
# one engine (child process)


def run_jaxtopics(engine: str, k: int, corpus, args) -> dict:
    import jax
    import jax.numpy as jnp
    from jaxtopics.fit import run_chunk
    from jaxtopics.models import lda

    overrides = dict(num_blocks=args.num_blocks, mh_steps=args.mh_steps,
                     sync_every=args.sync_every, exchange=args.exchange, init=args.init)
    settings = {k: v for k, v in overrides.items() if v is not None}
    settings.update(JAX_ENGINES[engine])
    p = lda.Params(num_topics=k, alpha=args.alpha, beta=args.beta, **settings)
    n_tok = corpus.num_tokens
    s = args.sweeps

    shards = SHARDS.get(engine, 1)
    t = time.perf_counter()
    if shards == 1:
        data = lda.prepare(corpus, p)
        state = lda.init(jax.random.key(args.seed), data, p)
        model = lda
    else:                                   # document-sharded AD-LDA over `shards` devices
        from jaxtopics import distributed as dist
        mesh = dist.make_mesh(shards)
        data = dist.prepare(corpus, p, shards)
        state, data = dist.place(dist.init(jax.random.key(args.seed), data, p), data, mesh)
        model = dist.Sharded(lda, mesh)
    jax.block_until_ready((data, state))
    prepare_s = time.perf_counter() - t
    sweep_key = jax.random.key(args.seed + 1)

    # the driver's own jitted chunk of sweeps (what fit() runs), the state donated
    t = time.perf_counter()
    compiled = run_chunk.lower(model, p, data, state, sweep_key, jnp.int32(0),
                               jnp.int32(s)).compile()
    compile_s = time.perf_counter() - t
    # Device memory by XLA's own accounting, exact on every backend: what stays resident (the
    # Data and State arrays, less the count tables) and the sweeps' temporaries at their peak.
    tables = sum(x.nbytes for f, x in zip(state._fields, state) if f != "z")
    resident = sum(x.nbytes for x in jax.tree.leaves((data, state))) - tables
    temp = getattr(compiled.memory_analysis(), "temp_size_in_bytes", None)
    t = time.perf_counter()
    state = jax.block_until_ready(compiled(data, state, sweep_key, jnp.int32(0), jnp.int32(s)))[0]
    warm_s = time.perf_counter() - t
    t = time.perf_counter()
    state, lj = jax.block_until_ready(compiled(data, state, sweep_key, jnp.int32(s),
                                               jnp.int32(2 * s)))[:2]
    timed_s = time.perf_counter() - t
    ll = float(lj) / n_tok

    dev = jax.devices()[0]
    dev_peak = None
    try:
        stats = dev.memory_stats()
        if stats and "peak_bytes_in_use" in stats:
            dev_peak = stats["peak_bytes_in_use"] / 2**20
    except Exception:  # noqa: BLE001 - CPU backends may not implement memory_stats
        pass
    label = {"parallel": f"jaxtopics parallel (mh={p.mh_steps})",
             "parallel-mh": "jaxtopics parallel-mh"}.get(engine, f"jaxtopics {engine}")
    init_kind = getattr(p, "init", None)  # Params.init exists in newer jaxtopics
    if init_kind is not None:
        label += f" [init {init_kind}]"
    return dict(label=label, prepare_s=prepare_s, compile_s=compile_s,
                warmup_s=compile_s + warm_s, timed_s=timed_s, ll_per_token=ll, init=init_kind,
                device_peak_mb=dev_peak, device=str(dev), resident_bytes=resident,
                sweep_temp_bytes=temp)


def run_tomotopy(engine: str, k: int, corpus, args) -> dict:
    import tomotopy as tp

    workers = TOMOTOPY_ENGINES[engine]
    t = time.perf_counter()
    mdl = tp.LDAModel(k=k, alpha=args.alpha, eta=args.beta, seed=args.seed)
    mdl.optim_interval = 0  # fixed alpha, as in jaxtopics
    vocab = np.asarray(corpus.vocab, dtype=object)
    tokens = vocab[corpus.word_ids]
    off = corpus.doc_offsets
    for d in range(corpus.num_docs):
        mdl.add_doc(tokens[off[d]:off[d + 1]].tolist())
    del tokens
    prepare_s = time.perf_counter() - t
    t = time.perf_counter()
    mdl.train(args.sweeps, workers=workers)
    warm_s = time.perf_counter() - t
    t = time.perf_counter()
    mdl.train(args.sweeps, workers=workers)
    timed_s = time.perf_counter() - t
    if mdl.num_words != corpus.num_tokens:
        _log(f"  warning: tomotopy holds {mdl.num_words} tokens, corpus has {corpus.num_tokens}")
    return dict(label=f"tomotopy {tp.__version__} ({workers} worker{'s' if workers > 1 else ''})",
                prepare_s=prepare_s, compile_s=None, warmup_s=warm_s, timed_s=timed_s,
                ll_per_token=float(mdl.ll_per_word), device_peak_mb=None, device="cpu")


# ---------------------------------------------------------------------------------------------
# time to quality (--quality)


def collapsed_log_joint(doc_topic: np.ndarray, word_topic: np.ndarray, alpha: float,
                        beta: float) -> float:
    """log p(w, z) of LDA with symmetric alpha and beta from the count tables (float64):
    sum_d log DirMult(n_d. | alpha) + sum_k log DirMult(n_k. | beta) (Griffiths & Steyvers
    2004), the quantity ``lda.log_joint`` computes; word_topic [V, K] (any word order)."""
    from scipy.special import gammaln

    def evidence(counts, conc, axis):
        size = counts.shape[axis]
        total = counts.sum(axis)
        return float(np.sum(gammaln(size * conc) - gammaln(total + size * conc))
                     + np.sum(gammaln(counts + conc)) - counts.size * gammaln(conc))
    return evidence(doc_topic.astype(np.float64), alpha, 1) + \
        evidence(word_topic.astype(np.float64), beta, 0)


def _tomotopy_counts(mdl, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(doc_topic [D, K], word_topic [V', K]) from a tomotopy model's own topic assignments."""
    docs = list(mdl.docs)
    doc_topic = np.zeros((len(docs), k), np.int64)
    word_topic = np.zeros((len(mdl.vocabs), k), np.int64)
    for d, doc in enumerate(docs):
        z = np.asarray(doc.topics, np.int64)
        w = np.asarray(doc.words, np.int64)
        doc_topic[d] = np.bincount(z, minlength=k)
        np.add.at(word_topic, (w, z), 1)
    return doc_topic, word_topic


def quality_tomotopy(k: int, corpus, args) -> dict:
    """--quality-chains tomotopy chains of --quality-sweeps sweeps (2 workers): the time of
    each (its train() calls, the initialisation included) and its log joint per token."""
    import tomotopy as tp

    vocab = np.asarray(corpus.vocab, dtype=object)
    tokens = vocab[corpus.word_ids]
    off = corpus.doc_offsets
    chains = []
    for c in range(args.quality_chains):
        mdl = tp.LDAModel(k=k, alpha=args.alpha, eta=args.beta, seed=args.seed + c)
        mdl.optim_interval = 0
        for d in range(corpus.num_docs):
            mdl.add_doc(tokens[off[d]:off[d + 1]].tolist())
        t = time.perf_counter()
        mdl.train(args.quality_sweeps, workers=2)
        seconds = time.perf_counter() - t
        if mdl.num_words != corpus.num_tokens:
            _log(f"  warning: tomotopy holds {mdl.num_words} tokens, corpus has {corpus.num_tokens}")
        ll = collapsed_log_joint(*_tomotopy_counts(mdl, k), args.alpha, args.beta) / corpus.num_tokens
        chains.append(dict(seed=args.seed + c, seconds=seconds, ll_per_token=ll,
                           tomotopy_ll_per_word=float(mdl.ll_per_word)))
        _log(f"   tomotopy chain {c}: {seconds:.1f} s, log joint/token {ll:.4f} "
             f"(ll_per_word {mdl.ll_per_word:.4f})")
    return dict(engine="quality-tomotopy", label=f"tomotopy {tp.__version__} (2 workers)",
                chains=chains, seconds=float(np.mean([c["seconds"] for c in chains])),
                ll_per_token=float(np.mean([c["ll_per_token"] for c in chains])))


def quality_jaxtopics(k: int, corpus, args) -> dict:
    """jaxtopics chains the CLI default way until their mean log joint per token reaches
    ``args.target`` (the module docstring)."""
    import jax
    from jaxtopics import LDA
    from jaxtopics.models import lda

    settings = {f: getattr(args, f) for f in ("num_blocks", "init") if getattr(args, f) is not None}
    est = LDA(num_topics=k, alpha=args.alpha, beta=args.beta, **settings)
    every, cap, target = args.quality_every, args.quality_max_sweeps, args.target
    t = time.perf_counter()
    warm = est.fit(corpus, every, seed=args.seed + 1000, eval_every=every, progress=False,
                   devices="auto")
    first_s = time.perf_counter() - t
    t = time.perf_counter()
    warm.resume(corpus, every, eval_every=every, progress=False, devices="auto")
    again_s = time.perf_counter() - t
    compile_s = max(first_s - again_s, 0.0)        # what the first fit spent compiling
    curves: list[list[tuple[int, float, float]]] = []
    for c in range(args.quality_chains):
        last = c == args.quality_chains - 1
        curve: list[tuple[int, float, float]] = []
        t0 = time.perf_counter()

        def callback(point, model, curve=curve, t0=t0, last=last):
            curve.append((point.sweep, time.perf_counter() - t0, point.log_joint_per_token))
            if not last:
                return point.log_joint_per_token < target + args.quality_margin
            others = [_value_at(o, point.sweep) for o in curves]
            return np.mean(others + [point.log_joint_per_token]) < target
        model = est.fit(corpus, cap, seed=args.seed + c, eval_every=every, progress=False,
                        devices="auto", callback=callback)
        curves.append(curve)
        _log(f"   jaxtopics chain {c}: {curve[-1][0]} sweeps, {curve[-1][1]:.1f} s, "
             f"log joint/token {curve[-1][2]:.4f}")
    if k == int(args.ks.split(",")[0]):          # the two log joints are the same quantity
        st = model._state
        ours = collapsed_log_joint(np.asarray(st.doc_topic), np.asarray(st.word_topic),
                                   args.alpha, args.beta) / corpus.num_tokens
        _log(f"   check: the last chain's log joint/token {curve[-1][2]:.5f} (trace), "
             f"{ours:.5f} (collapsed_log_joint)")
    reached, seconds = time_to_quality(curves, target)
    p = est.params
    return dict(engine="quality-jaxtopics", sweeps=reached, seconds=seconds,
                compile_s=compile_s, devices=len(jax.devices()),
                label=f"jaxtopics LDA, CLI default ({len(jax.devices())} devices, init {p.init}, "
                      f"{p.num_blocks} blocks)",
                curves=curves, ll_per_token=float(np.mean([c[-1][2] for c in curves])))


def time_to_quality(curves, target: float) -> tuple[float | None, float | None]:
    """(sweeps, seconds) at which the mean over chains of the log joint per token first reaches
    `target`, each chain's curve a list of (sweep, seconds, log joint per token) at its
    evaluations; interpolated linearly between the evaluation before the crossing and the one
    at it (the first evaluation itself when it reaches it); (None, None) if never."""
    previous = (0.0, 0.0, None)           # (sweep, mean time, mean log joint) of the last point
    for sweep in sorted({s for curve in curves for s, _, _ in curve}):
        mean_ll = float(np.mean([_value_at(curve, sweep) for curve in curves]))
        mean_t = float(np.mean([_time_at(curve, sweep) for curve in curves]))
        if mean_ll >= target:
            f = 1.0 if previous[2] is None else (target - previous[2]) / (mean_ll - previous[2])
            return (previous[0] + f * (sweep - previous[0]), previous[1] + f * (mean_t - previous[1]))
        previous = (sweep, mean_t, mean_ll)
    return None, None


def _value_at(curve, sweep: int) -> float:
    """A chain's log joint per token at `sweep` (its last value if it stopped before)."""
    values = [ll for s, _, ll in curve if s <= sweep]
    return values[-1] if values else -np.inf


def _time_at(curve, sweep: int) -> float:
    """A chain's wall time to `sweep`; for a chain that stopped before, its time to its last
    evaluation scaled by sweep / its sweeps (the time it would have taken at its own pace)."""
    last_sweep, last_t, _ = curve[-1]
    if sweep > last_sweep:
        return last_t * sweep / last_sweep
    return [t for s, t, _ in curve if s <= sweep][-1]


def quality_main(args, corpus_file: str, ks: list[int]) -> list[dict]:
    rows = []
    for k in ks:
        ref = run_child(args, corpus_file, "quality-tomotopy", k)
        if "error" in ref:
            rows.append(dict(k=k, error=ref["error"]))
            continue
        args_target = ["--target", repr(ref["ll_per_token"])]
        ours = run_child(args, corpus_file, "quality-jaxtopics", k, extra=args_target)
        rows.append(dict(k=k, tomotopy=ref, jaxtopics=ours))
    print()
    print(f"| K | tomotopy (2 workers): s for {args.quality_sweeps} sweeps, log joint/token (mean of chains) | "
          "jaxtopics: sweeps to reach it | s (compile excluded) | s (compile included) | "
          "tomotopy s / jaxtopics s (excl.; incl.) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r or "error" in r["jaxtopics"]:
            print(f"| {r['k']} | {r.get('error') or r['jaxtopics']['error']} | | | | |")
            continue
        ref, ours = r["tomotopy"], r["jaxtopics"]
        if ours["seconds"] is None:
            print(f"| {r['k']} | {ref['seconds']:.1f} s, {ref['ll_per_token']:.4f} | not in "
                  f"{args.quality_max_sweeps} (mean {ours['ll_per_token']:.4f}) | | | |")
            continue
        incl = ours["seconds"] + ours["compile_s"]
        print(f"| {r['k']} | {ref['seconds']:.1f} s, {ref['ll_per_token']:.4f} | {ours['sweeps']:.0f} | "
              f"{ours['seconds']:.1f} | {incl:.1f} | **{ref['seconds'] / ours['seconds']:.2f}x**; "
              f"{ref['seconds'] / incl:.2f}x |")
    return rows


def child_main(args) -> None:
    engine, k, scale = args.one.split(",")
    k = int(k)
    corpus = load_corpus(args.corpus_file, scale)
    if engine == "quality-jaxtopics":        # the CLI's default: one XLA CPU device per core
        import jax
        jax.config.update("jax_num_cpu_devices", len(os.sched_getaffinity(0)))
    if engine in JAX_ENGINES or engine == "quality-jaxtopics":
        import jax  # noqa: F401 - imported before the baseline so it is not charged to the engine
        import jaxtopics.models.lda  # noqa: F401
        jax.devices()  # initialise the backend before the baseline
    # Baseline: the RSS now (corpus loaded, jax initialised). The engine's own peak is the
    # high-water mark reset here (VmHWM), so that earlier transient peaks (imports, corpus
    # validation) do not hide it; where /proc is unavailable, fall back to ru_maxrss.
    baseline = _proc_status_mb("VmRSS")
    reset = baseline is not None and _reset_peak_rss()
    if not reset:
        baseline = _maxrss_mb()
    if engine.startswith("quality-"):
        fn = quality_tomotopy if engine == "quality-tomotopy" else quality_jaxtopics
        res = fn(k, corpus, args)
        res.update(k=k, num_tokens=corpus.num_tokens)
        print("RESULT " + json.dumps(res), flush=True)
        return
    fn = run_jaxtopics if engine in JAX_ENGINES else run_tomotopy
    res = fn(engine, k, corpus, args)
    peak = _maxrss_mb()
    engine_peak = _proc_status_mb("VmHWM") if reset else peak
    res.update(engine=engine, k=k, scale=scale, num_tokens=corpus.num_tokens,
               sweeps=args.sweeps, tokens_per_s=corpus.num_tokens * args.sweeps / res["timed_s"],
               rss_baseline_mb=baseline, rss_peak_mb=peak, rss_engine_peak_mb=engine_peak,
               rss_delta_mb=engine_peak - baseline)
    print("RESULT " + json.dumps(res), flush=True)


# ---------------------------------------------------------------------------------------------
# driver (parent process)


def run_child(args, corpus_file: str, engine: str, k: int, scale: str = "1",
              extra: list[str] = ()) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), *sys.argv[1:],
           "--one", f"{engine},{k},{scale}", "--corpus-file", corpus_file, *extra]
    _log(f"-> {engine} K={k}" + ("" if scale == "1" else f" (corpus scale {scale})"))
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.child_timeout,
                              env={**os.environ, **ENGINE_ENV.get(engine, {})})
    except subprocess.TimeoutExpired:
        _log(f"   timed out after {args.child_timeout:g} s")
        return dict(engine=engine, k=k, scale=scale, error="timeout")
    wall = time.perf_counter() - t
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
            res["child_wall_s"] = wall
            if engine.startswith("quality-"):
                return res
            _log(f"   {res['tokens_per_s'] / 1e6:.2f} M tokens/s, ll/token {res['ll_per_token']:.4f}, "
                 f"peak RSS {res['rss_peak_mb']:.0f} MiB ({wall:.1f} s in all)")
            return res
    sys.stderr.write(proc.stdout)
    _log(f"   FAILED (exit code {proc.returncode})")
    return dict(engine=engine, k=k, scale=scale, error=f"exit {proc.returncode}")


def _median_round(runs: list[dict]) -> dict:
    """One engine's rounds: the round of median tokens/s among those that ran (of an even
    count, the slower middle one), with every such round's tokens/s under "rounds_tokens_per_s"
    and the number that failed under "failed_rounds"; the first failure if none ran."""
    ran = [r for r in runs if "error" not in r]
    if not ran:
        return runs[0]
    ordered = sorted(ran, key=lambda r: r["tokens_per_s"])
    return dict(ordered[(len(ordered) - 1) // 2], failed_rounds=len(runs) - len(ran),
                rounds_tokens_per_s=[r["tokens_per_s"] for r in ran])


def _fmt(x, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


def print_table(results: list[dict]) -> None:
    ref = {r["k"]: r["tokens_per_s"] for r in results
           if r.get("engine") == REFERENCE and "error" not in r and r["scale"] == "1"}
    print("| engine | K | tokens/s (M) | vs tomotopy 2w | s/sweep | warm-up s (compile) "
          "| log joint/token @2S | peak RSS MiB (Δ) | device peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if r.get("scale", "1") != "1":
            continue
        if "error" in r:
            print(f"| {r['engine']} | {r['k']} | {r['error']} | | | | | | |")
            continue
        ratio = r["tokens_per_s"] / ref[r["k"]] if r["k"] in ref else None
        rounds, failed = r.get("rounds_tokens_per_s", []), r.get("failed_rounds", 0)
        notes = ([f"{min(rounds) / 1e6:.2f}-{max(rounds) / 1e6:.2f}"] if len(rounds) > 1 else []) \
            + ([f"{failed} of {failed + len(rounds)} rounds failed"] if failed else [])
        spread = f" ({'; '.join(notes)})" if notes else ""
        print(f"| {r['label']} | {r['k']} | {r['tokens_per_s'] / 1e6:.2f}{spread} | "
              f"{_fmt(ratio, '.2f')}{'' if ratio is None else 'x'} | {r['timed_s'] / r['sweeps']:.3f} | "
              f"{r['warmup_s']:.1f} ({_fmt(r['compile_s'], '.1f')}) | {r['ll_per_token']:.4f} | "
              f"{r['rss_peak_mb']:.0f} ({r['rss_delta_mb']:+.0f}) | "
              f"{_fmt(r['device_peak_mb'], '.0f')} |")


def main() -> None:
    args = parse_args()
    if args.one:
        child_main(args)
        return
    t_start = time.perf_counter()
    import jax

    ks = [int(x) for x in args.ks.split(",") if x]
    if not ks or min(ks) < 1:
        sys.exit(f"--ks must be numbers of topics >= 1, got {args.ks!r}")
    samplers = [x for x in args.samplers.split(",") if x]
    bad = [x for x in samplers if x not in JAX_ENGINES]
    if bad:
        sys.exit(f"unknown --samplers {bad}; choose from {sorted(JAX_ENGINES)}")
    for name in ("repeats", "sweeps"):
        if getattr(args, name) < 1:
            sys.exit(f"--{name} must be >= 1, got {getattr(args, name)}")
    engines = list(samplers)
    tp_version = None
    if args.skip_tomotopy:
        print("tomotopy: skipped (--skip-tomotopy)")
    elif importlib.util.find_spec("tomotopy") is None:
        print("tomotopy: not installed, skipped")
    else:
        import tomotopy
        tp_version = tomotopy.__version__
        engines += list(TOMOTOPY_ENGINES)

    print(f"# LDA benchmark, {_dt.datetime.now().isoformat(timespec='seconds')}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"jax {jax.__version__}, devices {jax.devices()}, host {platform.node()} "
          f"({os.cpu_count()} CPUs, load avg {_fmt(load and load[0], '.2f')}), "
          f"python {platform.python_version()}, tomotopy {tp_version}")

    t = time.perf_counter()
    corpus = build_corpus(args)
    gen_s = time.perf_counter() - t
    n = corpus.num_tokens
    print(f"corpus: synthetic LDA, D={corpus.num_docs} V={corpus.num_words} (the words that "
          f"occur, of {args.words}) N={n} "
          f"(K_true={args.true_topics}, built in {gen_s:.1f} s); alpha={args.alpha} "
          f"beta={args.beta}; {args.sweeps} warm-up + {args.sweeps} timed sweeps; "
          f"parallel: " + " ".join(f"{f}={_setting(args, f)}" for f in
                                    ("num_blocks", "mh_steps", "sync_every", "exchange", "init")),
          flush=True)

    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_lda_") as tmp:
        corpus_file = os.path.join(tmp, "corpus.npz")
        np.savez(corpus_file, word_ids=corpus.word_ids, doc_offsets=corpus.doc_offsets,
                 num_words=corpus.num_words)
        del corpus
        if args.quality:
            rows = quality_main(args, corpus_file, ks)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(dict(meta=dict(date=_dt.datetime.now().isoformat(timespec="seconds"),
                                             jax=jax.__version__, tomotopy=tp_version,
                                             cpus=os.cpu_count(), args=vars(args), num_tokens=n,
                                             load=os.getloadavg()), quality=rows), f, indent=1)
            load = os.getloadavg()
            print(f"\nload avg now {load[0]:.2f} (2-core machines shared with other jobs skew "
                  f"the timings)")
            return
        for k in ks:
            rounds = [[run_child(args, corpus_file, engine, k) for engine in engines]
                      for _ in range(args.repeats)]
            results += [_median_round([r[i] for r in rounds]) for i in range(len(engines))]
        scaling = None
        if not args.skip_scaling and ks:
            base = next((r for r in results if r.get("engine") == "parallel"
                         and r["k"] == ks[0] and "error" not in r), None)
            if base is None:  # "parallel" not among --samplers: run it for the check
                base = run_child(args, corpus_file, "parallel", ks[0])
                results.append(base)
            other = run_child(args, corpus_file, "parallel", ks[0],
                              scale="2" if args.scaling == "double" else "half")
            results.append(other)
            if "error" not in base and "error" not in other:
                small, big = (base, other) if args.scaling == "double" else (other, base)
                scaling = dict(k=ks[0], n=small["num_tokens"], n2=big["num_tokens"],
                               t=small["timed_s"], t2=big["timed_s"],
                               ratio=big["timed_s"] / small["timed_s"],
                               ideal=big["num_tokens"] / small["num_tokens"],
                               rss=small["rss_delta_mb"], rss2=big["rss_delta_mb"],
                               dev=small["device_peak_mb"], dev2=big["device_peak_mb"])

    print()
    print_table(results)
    print()
    if args.repeats > 1:
        print(f"median of {args.repeats} interleaved rounds (range in brackets); the ratio is "
              f"of the medians.")
    print("tokens/s = N x timed sweeps / wall time of sweeps S+1..2S (block_until_ready); "
          "warm-up = compile + sweeps 1..S (tomotopy: first train()); peak RSS = ru_maxrss of the "
          "engine's own subprocess (whole life, incl. imports), Δ = the engine's own peak (VmHWM "
          "reset after loading the corpus and jax) minus the RSS at that point.")
    if scaling:
        print(f"\nscaling check (jaxtopics parallel, K={scaling['k']}): {scaling['n']} tokens -> "
              f"{scaling['t']:.2f} s, {scaling['n2']} tokens -> {scaling['t2']:.2f} s for "
              f"{args.sweeps} sweeps; time ratio {scaling['ratio']:.2f} (ideal, the token "
              f"ratio: {scaling['ideal']:.2f}); Δ RSS {scaling['rss']:.0f} -> "
              f"{scaling['rss2']:.0f} MiB; device peak {_fmt(scaling['dev'], '.0f')} -> "
              f"{_fmt(scaling['dev2'], '.0f')} MiB")
    total = time.perf_counter() - t_start
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\ntotal wall time {total:.0f} s (load avg now {_fmt(load and load[0], '.2f')}; "
          f"other processes on the CPUs skew the timings)")
    if args.json:
        meta = dict(date=_dt.datetime.now().isoformat(timespec="seconds"),
                    jax=jax.__version__, devices=[str(d) for d in jax.devices()],
                    tomotopy=tp_version, cpus=os.cpu_count(), args=vars(args), num_tokens=n,
                    corpus_build_s=gen_s, total_s=total)
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, results=results, scaling=scaling), f, indent=1)
        print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
