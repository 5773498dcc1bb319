#!/usr/bin/env python
"""PTM on the short-text sets: jaxtopics PTM vs tomotopy PTModel and LDAModel, quality and speed.

For Tweet (2,472 tweets, 89 gold clusters; K=90) and News-T (11,109 titles, 152 clusters;
K=152), P = D // 10 pseudo-documents, 300 sweeps, alpha=0.1, beta(eta)=0.01, lam=0.1:

* jaxtopics PTM, ``parallel`` (and ``sequential``): through the driver (``fit.run_sweeps``), the
  first sweep (which includes compilation) run and discarded from the timing;
* tomotopy ``PTModel(k=K, p=P, alpha, eta)`` and ``LDAModel(k=K, alpha, eta)``, hyper-parameter
  optimisation off (``optim_interval = 0``), ``train(sweeps, workers=W)`` timed (initialisation
  included). tomotopy does not expose PTM's lambda (its C++ default 0.01 is used) and draws the
  pseudo-documents only every 10th iteration (its ``pseudoDocSamplingInterval``); jaxtopics draws
  them every sweep (exact Gibbs). tomotopy skips empty documents (News-T has one): they get
  label -1 in its NMI.

Read-outs (NMI against the gold clusters, argmax per document):
* ``doc_topic``: jaxtopics' document estimate (N_m^k + K alpha theta_lk) / (N_m + K alpha) (a
  document's own topic shares shrunk toward its pseudo-document's theta_l); for tomotopy PTModel
  the same formula from its ``doc.topics`` and ``doc.get_topic_dist()``; for LDAModel its
  ``get_topic_dist()``.
* ``theta_pseudo``: theta of the document's pseudo-document (what tomotopy's PTModel
  ``get_topic_dist()`` returns for a document).
Speed: tokens/s = N x timed sweeps / seconds (jaxtopics excludes its first sweep; tomotopy's
includes its initialisation). NMI: ``jaxtopics.metrics`` if present, else scikit-learn.

    python scripts/bench_ptm.py                       # both sets, parallel + tomotopy, 300 sweeps
    python scripts/bench_ptm.py --engines jax-parallel,jax-sequential,tomotopy-ptm --datasets tweet
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

K_OF = {"tweet": 90, "news-t": 152}
ENGINES = ("jax-parallel", "jax-sequential", "tomotopy-ptm", "tomotopy-lda")
DEFAULT_ENGINES = ("jax-parallel", "tomotopy-ptm", "tomotopy-lda")


def _nmi(labels, pred) -> float:
    try:
        from jaxtopics.metrics import nmi
    except ImportError:
        from sklearn.metrics import normalized_mutual_info_score as nmi
    return float(nmi(np.asarray(labels), np.asarray(pred)))


def _shrunk(doc_counts: np.ndarray, pseudo_theta: np.ndarray, alpha: float) -> np.ndarray:
    """(N_m^k + K alpha theta_lk) / (N_m + K alpha), as ``jaxtopics.models.ptm.estimate``."""
    ka = doc_counts.shape[1] * alpha
    return (doc_counts + ka * pseudo_theta) / (doc_counts.sum(1, keepdims=True) + ka)


def _run_jax(corpus, k, p, sweeps, seed, sampler, alpha, beta, lam) -> dict:
    import jax

    from jaxtopics.fit import chain_keys, run_sweeps
    from jaxtopics.models import ptm

    params = ptm.check_params(ptm.Params(k, p, alpha=alpha, beta=beta, lam=lam, sampler=sampler))
    data = ptm.prepare(corpus, params)
    init_key, chain_key = chain_keys(seed)
    state = ptm.init(init_key, data, params)
    n = corpus.num_tokens
    state, _ = run_sweeps(ptm, params, data, state, chain_key, start=0, num_sweeps=1,
                          num_tokens=n, eval_every=1, progress=False)      # compiles
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    state, trace = run_sweeps(ptm, params, data, state, chain_key, start=1, num_sweeps=sweeps - 1,
                              num_tokens=n, eval_every=sweeps, progress=False)
    jax.block_until_ready(state)
    seconds = time.perf_counter() - t0
    est = {key: np.asarray(v) for key, v in ptm.estimate(state, params).items()}
    return dict(doc_topic=est["theta"].argmax(1),
                theta_pseudo=est["pseudo_doc_topic"][est["pseudo_labels"]].argmax(1),
                lj=trace[-1].log_joint_per_token, seconds=seconds, timed_sweeps=sweeps - 1)


def _run_tomotopy(corpus, k, p, sweeps, seed, kind, alpha, beta, workers) -> dict:
    import tomotopy as tp

    if kind == "ptm":
        mdl = tp.PTModel(k=k, p=p, alpha=alpha, eta=beta, seed=seed)
    else:
        mdl = tp.LDAModel(k=k, alpha=alpha, eta=beta, seed=seed)
    mdl.optim_interval = 0
    added = []
    for d in range(corpus.num_docs):
        words = corpus.words(d)
        if words:
            mdl.add_doc(words)
            added.append(d)
    t0 = time.perf_counter()
    mdl.train(sweeps, workers=workers)
    seconds = time.perf_counter() - t0
    doc_topic = np.full(corpus.num_docs, -1)
    theta_pseudo = np.full(corpus.num_docs, -1)
    for d, doc in zip(added, mdl.docs):
        dist = np.asarray(doc.get_topic_dist(), np.float64)
        if kind == "ptm":
            counts = np.bincount(np.asarray(doc.topics), minlength=k)[None, :].astype(np.float64)
            doc_topic[d] = _shrunk(counts, dist[None, :], alpha)[0].argmax()
            theta_pseudo[d] = dist.argmax()
        else:
            doc_topic[d] = dist.argmax()
    return dict(doc_topic=doc_topic, theta_pseudo=theta_pseudo if kind == "ptm" else None,
                lj=float(mdl.ll_per_word), seconds=seconds, timed_sweeps=sweeps)


def ptm_rows(datasets=("tweet", "news-t"), engines=DEFAULT_ENGINES, sweeps: int = 300,
             seeds=(0,), alpha: float = 0.1, beta: float = 0.01, lam: float = 0.1,
             workers: int = 1, root=None, log=print) -> list[dict]:
    """One row per (data set, engine, seed): NMI of both read-outs, log joint per token,
    seconds per sweep, tokens per second."""
    from jaxtopics.datasets import load_shared

    rows = []
    for name in datasets:
        corpus = load_shared(name, root=root)
        k, p = K_OF[name], corpus.num_docs // 10
        for engine in engines:
            for seed in seeds:
                if engine.startswith("jax-"):
                    r = _run_jax(corpus, k, p, sweeps, seed, engine[4:], alpha, beta, lam)
                else:
                    r = _run_tomotopy(corpus, k, p, sweeps, seed, engine.split("-")[1], alpha, beta,
                                      workers)
                row = dict(data=name, engine=engine, seed=seed, K=k,
                           P=p if engine != "tomotopy-lda" else None, D=corpus.num_docs,
                           N=corpus.num_tokens, sweeps=sweeps,
                           nmi_doc_topic=_nmi(corpus.labels, r["doc_topic"]),
                           nmi_theta_pseudo=(None if r["theta_pseudo"] is None
                                             else _nmi(corpus.labels, r["theta_pseudo"])),
                           lj=r["lj"], sec_per_sweep=r["seconds"] / r["timed_sweeps"],
                           tokens_per_s=corpus.num_tokens * r["timed_sweeps"] / r["seconds"])
                rows.append(row)
                log(_format_row(row))
    return rows


_HEADER = ("| data | engine | K | P | sweeps | NMI doc_topic | NMI theta_pseudo | log joint / token "
           "| s / sweep | tokens / s |\n|---|---|---|---|---|---|---|---|---|---|")


def _format_row(r: dict) -> str:
    tp_nmi = "-" if r["nmi_theta_pseudo"] is None else f"{r['nmi_theta_pseudo']:.3f}"
    return (f"| {r['data']} | {r['engine']} (seed {r['seed']}) | {r['K']} | {r['P'] or '-'} | "
            f"{r['sweeps']} | {r['nmi_doc_topic']:.3f} | {tp_nmi} | {r['lj']:.4f} | "
            f"{r['sec_per_sweep']:.4f} | {r['tokens_per_s'] / 1e6:.3f} M |")


def format_table(rows: list[dict]) -> str:
    """Markdown table of `rows`, plus the speed ratio of jaxtopics parallel to tomotopy PTModel."""
    lines = [_HEADER] + [_format_row(r) for r in rows]
    for name in dict.fromkeys(r["data"] for r in rows):
        def mean_rate(engine):
            rates = [r["tokens_per_s"] for r in rows if r["data"] == name and r["engine"] == engine]
            return np.mean(rates) if rates else None
        jax_rate, tomo_rate = mean_rate("jax-parallel"), mean_rate("tomotopy-ptm")
        if jax_rate and tomo_rate:
            lines.append(f"\n{name}: jaxtopics PTM parallel / tomotopy PTModel tokens/s = "
                         f"{jax_rate / tomo_rate:.1f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="tweet,news-t")
    ap.add_argument("--engines", default=",".join(DEFAULT_ENGINES),
                    help=f"comma-separated, from {', '.join(ENGINES)}")
    ap.add_argument("--sweeps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..n-1 per engine")
    ap.add_argument("--workers", type=int, default=1, help="tomotopy worker threads")
    ap.add_argument("--root", default=None, help="folder holding gsdmm/ (default: ../shared/data)")
    args = ap.parse_args(argv)
    if args.sweeps < 2:
        ap.error(f"--sweeps must be >= 2 (the first compiles, the rest are timed), got {args.sweeps}")
    engines = tuple(args.engines.split(","))
    unknown = set(engines) - set(ENGINES)
    if unknown:
        ap.error(f"unknown engines {sorted(unknown)}")
    import jax
    print(f"jax {jax.__version__} on {jax.default_backend()}; tomotopy workers={args.workers}",
          file=sys.stderr)
    rows = ptm_rows(tuple(args.datasets.split(",")), engines, args.sweeps, tuple(range(args.seeds)),
                    workers=args.workers, root=args.root,
                    log=lambda line: print(line, file=sys.stderr, flush=True))
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
