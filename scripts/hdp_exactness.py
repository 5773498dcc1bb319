"""Does each HDP sampler leave the true posterior stationary? An exact enumeration on a tiny corpus.

    python scripts/hdp_exactness.py [--chains 40000] [--sweeps 50]

The corpus of tests/test_hdp_kernels.py: 2 documents, 5 tokens, V = 3 (words 0 1 0 | 1 2), with
alpha = 2, gamma = 0.7, beta (tomotopy's eta) = 0.3. The HDP posterior of the tokens' topic
partition (52 partitions) is enumerated in numpy from the Chinese restaurant franchise (Teh et
al. 2006: every seating and dish assignment, summed over the seatings; the test module's `CRF`,
written independently of the package). Each engine runs `--chains` independent chains of
`--sweeps` sweeps from its own random start (different seeds); the final topic partitions are
compared with the posterior: total variation, its sampling bound (exceeded by chance with
probability <= 1e-3) and a chi-square p-value. tomotopy 0.14 `HDPModel` (1 worker, alpha and
gamma fixed: `optim_interval = 0`) against jaxtopics' exact `sequential` direct-assignment
kernel and its default `parallel` kernel (the blocked draw; on 5 tokens in 64 blocks it is its
one-token-per-block limit).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1] / "tests"
DELTA = 1e-3
ALPHA, GAMMA, BETA = 2.0, 0.7, 0.3


def _jaxtopics_partitions(crf, sampler: str, chains: int, sweeps: int) -> np.ndarray:
    import jax
    import jax.numpy as jnp

    from jaxtopics.models import hdp
    from jaxtopics.models import hdp_direct as hd

    params = hdp.check_params(hdp.Params(alpha=ALPHA, gamma=GAMMA, beta=BETA, sampler=sampler,
                                         topic_capacity=12))
    data = hd.prepare(crf.corpus, params)

    def chain(key):
        k_init, k_run = jax.random.split(key)
        state = hd.init(k_init, data, params._replace(initial_topics=2))

        def body(t, carry):
            state, overflow = carry
            new, info = hd.sweep(jax.random.fold_in(k_run, t), state, data, params)
            return new, overflow | info.overflow
        return jax.lax.fori_loop(0, sweeps, body, (state, jnp.bool_(False)))

    final, overflow = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(7), chains))
    if np.asarray(overflow).any():
        sys.exit("topic capacity too small for this run: raise topic_capacity")
    return np.asarray(final.z)[:, :crf.n]


def _tomotopy_partitions(crf, chains: int, sweeps: int) -> np.ndarray:
    import tomotopy as tp
    out = np.zeros((chains, crf.n), np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in range(chains):
            m = tp.HDPModel(tw=tp.TermWeight.ONE, min_cf=0, initial_k=2, alpha=ALPHA, eta=BETA,
                            gamma=GAMMA, seed=c + 1)
            for doc in crf.docs:
                m.add_doc([f"w{w}" for w in doc])
            m.optim_interval = 0
            m.train(sweeps, workers=1)
            if abs(m.alpha - ALPHA) > 1e-6 or abs(m.gamma - GAMMA) > 1e-6:
                sys.exit(f"tomotopy changed alpha/gamma to {m.alpha}, {m.gamma}")
            out[c] = np.concatenate([np.asarray(d.topics, np.int64) for d in m.docs])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chains", type=int, default=40_000)
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--engines", default="tomotopy,sequential,parallel")
    args = parser.parse_args()
    for name in ("chains", "sweeps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    engines = args.engines.split(",")
    if unknown := [e for e in engines if e not in ("tomotopy", "sequential", "parallel")]:
        parser.error(f"--engines must be among tomotopy, sequential, parallel, got {unknown}")
    sys.path.insert(0, str(TESTS))
    from enumeration_stats import pooled_chisquare_p, tv, tv_bound
    from test_hdp_kernels import CRF, DOCS

    crf = CRF(DOCS, ALPHA, GAMMA, BETA)
    post = crf.part_post
    print(f"{len(DOCS)} documents, {crf.n} tokens, V={crf.v}; alpha={ALPHA}, gamma={GAMMA}, "
          f"beta={BETA}; {len(post)} topic partitions; {args.chains} chains x {args.sweeps} sweeps")
    print("| engine | TV to the exact posterior | TV bound (p <= 1e-3 by chance) | chi-square p "
          "| mean topics: sampled / exact | seconds |")
    print("|---|---|---|---|---|---|")
    topics = np.array([len(set(key)) for key in crf.part_keys])    # topics of each partition
    for engine in engines:
        start = time.perf_counter()
        if engine == "tomotopy":
            z = _tomotopy_partitions(crf, args.chains, args.sweeps)
            name = "tomotopy 0.14 `HDPModel`, 1 worker"
        elif engine in ("sequential", "parallel"):
            z = _jaxtopics_partitions(crf, engine, args.chains, args.sweeps)
            name = f"jaxtopics `{engine}`"
        else:                                           # checked above
            raise AssertionError(engine)
        seconds = time.perf_counter() - start
        counts = crf.part_counts(z)
        n = int(counts.sum())
        freq = counts / n
        print(f"| {name} | {tv(freq, post):.4f} | {tv_bound(post, n, DELTA):.4f} | "
              f"{pooled_chisquare_p(counts, post):.3g} | {freq @ topics:.3f} / {post @ topics:.3f} | "
              f"{seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
