#!/usr/bin/env python
"""Sentence-LDA: how often do chains end in a worse optimum (merged sentence topics)?

Planted corpora from ``jaxtopics.datasets.synthetic_slda`` (the Sentence-LDA generative
process: one topic per sentence), fitted with the true K. For every corpus and kernel setting,
one chain per seed runs (vmapped, one jit) from its own random start; printed per setting: the
final log joint per token (collapsed log p(w, z)/N; mean, standard error over the chains and the
worst chain), the NMI of the sentence topics against the planted ones (mean and worst), how many
chains ended with merged topics (two planted topics mostly in one sampler topic) and the log
joint per token of the planted assignment itself (the level a chain at the planted optimum
reaches or passes).

A kernel setting is ``name=sampler[:field=value,...]`` with ``slda.Params`` fields, e.g.
``seq=sequential``, ``b256=parallel:num_blocks=256``. Without ``--kernels`` both kernels at the
defaults of ``slda.Params`` are compared with the same kernels before issue 35
(``split_merge_steps=0``: Gibbs moves of single sentences only).

    PYTHONPATH=. python scripts/slda_optima.py                        # corpora A and B, 8 seeds
    PYTHONPATH=. python scripts/slda_optima.py --corpora A --seeds 0,1,2,3 --sweeps 200 \\
        --kernels seq=sequential par=parallel b256=parallel:num_blocks=256,sentences_per_block=0
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxtopics.datasets import synthetic_slda
from jaxtopics.metrics import nmi
from jaxtopics.models import slda

#: the planted corpora: synthetic_slda arguments (K is also the fitted number of topics)
CORPORA = {
    "A": dict(num_docs=400, num_topics=10, num_words=1000, mean_sentences=8,
              mean_sentence_length=8, alpha=0.3, beta=0.02, seed=0),
    "B": dict(num_docs=300, num_topics=8, num_words=1000, mean_sentences=8,
              mean_sentence_length=8, alpha=0.3, beta=0.02, seed=1),
    # the corpus of tests/test_slda_quality.py
    "T": dict(num_docs=120, num_topics=8, num_words=300, mean_sentences=8,
              mean_sentence_length=5, alpha=0.3, beta=0.1, seed=2, rank_noise=2.0),
}
DEFAULT_KERNELS = (
    "sequential=sequential",
    "parallel=parallel",
    "sequential-old=sequential:split_merge_steps=0",
    "parallel-old=parallel:split_merge_steps=0",
)


def parse_kernel(spec: str) -> tuple[str, dict]:
    name, _, rest = spec.partition("=")
    sampler, _, fields = rest.partition(":")
    out: dict = {"sampler": sampler}
    for item in filter(None, fields.split(",")):
        key, _, value = item.partition("=")
        if key not in slda.Params._fields:
            raise SystemExit(f"unknown slda.Params field {key!r} in {spec!r}")
        out[key] = value if key in ("sampler", "init") else type(slda.Params._field_defaults.get(
            key, 0))(value)
    return name, out


def merged_topics(truth: np.ndarray, z: np.ndarray, k: int) -> int:
    """Planted topics that share their majority sampler topic with another planted topic."""
    table = np.zeros((k, k), np.int64)
    np.add.at(table, (truth, z), 1)
    majority = table.argmax(1)[table.sum(1) > 0]
    return int(len(majority) - len(np.unique(majority)))


def run_chains(params: slda.Params, data: slda.Data, seeds: list[int], sweeps: int):
    keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in seeds])

    @jax.jit
    def run(keys):
        def chain(raw):
            k_init, k_run = jax.random.split(jax.random.wrap_key_data(raw))
            state = slda.init(k_init, data, params)

            def body(t, st):
                return slda.sweep(jax.random.fold_in(k_run, t), st, data, params)[0]
            state = jax.lax.fori_loop(0, sweeps, body, state)
            return state.z, slda.log_joint(state, data, params)
        return jax.vmap(chain)(keys)

    z, lj = run(keys)
    return np.asarray(z), np.asarray(lj, np.float64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--corpora", default="A,B", help="comma-separated names of CORPORA")
    ap.add_argument("--seeds", default="0,1,2,3,4,5,6,7")
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.3)
    ap.add_argument("--beta", type=float, default=0.02)
    ap.add_argument("--kernels", nargs="+", default=list(DEFAULT_KERNELS))
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    kernels = [parse_kernel(s) for s in args.kernels]
    print(f"{args.sweeps} sweeps, seeds {seeds}, alpha={args.alpha}, beta={args.beta}")
    print("| corpus | kernel | blocks | log joint/token mean ± se | worst | NMI mean | NMI worst "
          "| chains merged | planted | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cname in args.corpora.split(","):
        spec = CORPORA[cname]
        synth = synthetic_slda(**spec)
        corpus = synth.corpus
        truth = synth.assignments[corpus.sentence_offsets[:-1]]
        k = spec["num_topics"]
        n = corpus.num_tokens
        for kname, fields in kernels:
            params = slda.Params(k, alpha=args.alpha, beta=args.beta, **fields)
            data = slda.prepare(corpus, params)
            planted = float(slda.log_joint(slda.state_from_assignments(
                jnp.asarray(truth), data, params), data, params)) / n
            t0 = time.perf_counter()
            z, lj = run_chains(params, data, seeds, args.sweeps)
            secs = time.perf_counter() - t0
            lj = lj / n
            scores = np.array([nmi(truth, zz[:-1]) for zz in z])
            merged = sum(merged_topics(truth, zz[:-1], k) > 0 for zz in z)
            se = lj.std(ddof=1) / np.sqrt(len(lj)) if len(lj) > 1 else float("nan")
            print(f"| {cname} (S={corpus.num_sentences}) | {kname} | {data.blocks.shape[0]} "
                  f"| {lj.mean():.4f} ± {se:.4f} | {lj.min():.4f} | {scores.mean():.3f} "
                  f"| {scores.min():.3f} | {merged}/{len(seeds)} | {planted:.4f} | {secs:.0f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
