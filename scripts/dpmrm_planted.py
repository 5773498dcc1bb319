"""DP-MRM on a planted multi-label corpus: both kernels side by side.

Labels own planted topics (85 % of a topic's mass on its own words, 15 % on words shared by all);
documents carry 1-3 labels, mix them (psi ~ Dir(1)) and prefer one topic per label
(theta ~ Dir(0.1)). For each kernel and seed: tokens/s (after compilation), active topics and
topics holding >= 1 % of the tokens, planted topics recovered within their own label (Hungarian
matching on cosine, >= 0.9), log joint per token, held-out perplexity (corrected theta).

    PYTHONPATH=. python scripts/dpmrm_planted.py --docs 1000 --sweeps 200 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

import jaxtopics as jt


def planted(num_docs, labels, per_label, words=15, shared=30, length=60, seed=0):
    rng = np.random.default_rng(seed)
    v = labels * per_label * words + shared
    phi = np.zeros((labels, per_label, v))
    for lab in range(labels):
        for k in range(per_label):
            t = lab * per_label + k
            phi[lab, k, t * words:(t + 1) * words] = 0.85 / words
            phi[lab, k, v - shared:] = 0.15 / shared
    docs, sets = [], []
    for _ in range(num_docs):
        own = sorted(rng.choice(labels, size=int(rng.integers(1, 4)), replace=False).tolist())
        psi = rng.dirichlet(np.ones(len(own)))
        theta = rng.dirichlet(np.full(per_label, 0.1), size=len(own))
        r = rng.choice(len(own), size=length, p=psi)
        k = np.array([rng.choice(per_label, p=theta[x]) for x in r])
        docs.append([f"w{rng.choice(v, p=phi[own[a], b])}" for a, b in zip(r, k)])
        sets.append([f"L{x}" for x in own])
    names = [f"L{x}" for x in range(labels)]
    return jt.Corpus.from_token_lists(docs, labels=sets, label_names=names), phi


def recovered(model, corpus, phi) -> int:
    # the planted vocabulary's words by id; a word no document drew is not in the corpus
    est = np.zeros((model.topic_word.shape[0], phi.shape[-1]))
    est[:, [int(w[1:]) for w in corpus.vocab]] = model.topic_word
    found = 0
    for lab in range(phi.shape[0]):
        mine = np.flatnonzero(model.topic_label == lab)
        if not mine.size:
            continue
        cos = (phi[lab] @ est[mine].T) / (np.linalg.norm(phi[lab], axis=1)[:, None]
                                           * np.linalg.norm(est[mine], axis=1)[None, :])
        rows, cols = linear_sum_assignment(-cos)
        found += int((cos[rows, cols] >= 0.9).sum())
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--labels", type=int, default=6)
    ap.add_argument("--per-label", type=int, default=3)
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--samplers", nargs="+", default=["sequential", "parallel"])
    args = ap.parse_args()
    if args.docs < 30:
        ap.error(f"--docs must be >= 30 (every label needs training documents, and a fifth "
                 f"as many are held out), got {args.docs}")
    if args.sweeps <= 10:
        ap.error(f"--sweeps must be > 10 (10 warm-up sweeps come first), got {args.sweeps}")
    corpus, phi = planted(args.docs + args.docs // 5, args.labels, args.per_label)
    train = corpus.subset(np.arange(args.docs))
    test = corpus.subset(np.arange(args.docs, corpus.num_docs))
    planted_topics = args.labels * args.per_label
    print(f"planted: {args.docs} training documents ({train.num_tokens} tokens), {test.num_docs} "
          f"held out, {args.labels} labels x {args.per_label} topics, V={train.num_words}")
    print("| kernel | seed | tokens/s | active topics | topics >= 1 % | recovered | "
          "log joint/token | held-out perplexity |")
    print("|---|---|---|---|---|---|---|---|")
    for sampler in args.samplers:
        for seed in args.seeds:
            est = jt.DPMRM(alpha=1.0, beta=0.05, gamma=1.0, eta=1.0, sampler=sampler)
            model = est.fit(train, num_sweeps=10, seed=seed, progress=False)    # compiles
            t0 = time.perf_counter()
            model.resume(train, args.sweeps - 10, eval_every=args.sweeps, progress=False)
            rate = (args.sweeps - 10) * train.num_tokens / (time.perf_counter() - t0)
            big = int((model.topic_sizes >= 0.01 * train.num_tokens).sum())
            ppl = model.perplexity(test, num_sweeps=40)
            print(f"| {sampler} | {seed} | {rate:,.0f} | {int(model.num_active_topics)} | {big} | "
                  f"{recovered(model, train, phi)}/{planted_topics} | "
                  f"{model.log_joint_per_token():.4f} | {ppl:.2f} |", flush=True)


if __name__ == "__main__":
    main()
