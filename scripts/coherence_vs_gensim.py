#!/usr/bin/env python
"""jaxtopics' topic coherence against gensim's ``CoherenceModel`` on the same topics and texts.

Needs gensim (not a dependency of jaxtopics: ``pip install gensim`` in the environment that runs
this). Fits LDA on the embedded demo corpus (Python docstrings, real word order, so sliding
windows mean something), takes each topic's top words, and scores them with every measure both
ways: gensim as it is, and gensim with its sliding-window counter corrected (gensim 4.4's
``WordOccurrenceAccumulator._slide_window`` marks a word absent when one of its occurrences
leaves the window, even if another occurrence is still inside). Prints a markdown table of the
largest per-topic difference and both libraries' times.

    python scripts/coherence_vs_gensim.py [--topics 20] [--sweeps 100] [--top-n 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _gensim_scores(topics, texts, measure: str, window: int | None, fixed: bool) -> np.ndarray:
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel
    from gensim.topic_coherence import text_analysis

    cls = text_analysis.WordOccurrenceAccumulator
    original = cls._slide_window

    def every_window_recounted(self, window_ids, doc_num):
        self._uniq_words[:] = False
        self._uniq_words[np.unique(window_ids)] = True
    cls._slide_window = every_window_recounted if fixed else original
    try:
        dictionary = Dictionary(texts)
        kwargs = dict(topics=topics, texts=texts, dictionary=dictionary, coherence=measure,
                      corpus=[dictionary.doc2bow(t) for t in texts], processes=1)
        if window is not None:
            kwargs["window_size"] = window
        return np.asarray(CoherenceModel(**kwargs).get_coherence_per_topic())
    finally:
        cls._slide_window = original


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--sweeps", type=int, default=100)
    ap.add_argument("--top-n", type=int, default=10)
    args = ap.parse_args()
    try:
        import gensim
    except ImportError:
        ap.error("needs gensim, which jaxtopics does not depend on: pip install gensim")

    import jaxtopics as jt
    from jaxtopics.coherence import MEASURES
    from jaxtopics.datasets import demo_corpus

    corpus = demo_corpus()
    model = jt.LDA(num_topics=args.topics).fit(corpus, num_sweeps=args.sweeps, progress=False)
    topics = [[w for w, _ in t] for t in model.top_words(args.top_n)]
    texts = [corpus.words(d) for d in range(corpus.num_docs)]
    print(f"demo corpus: {corpus.num_docs} documents, {corpus.num_tokens} tokens; LDA K={args.topics}, "
          f"{args.sweeps} sweeps, top {args.top_n} words; gensim {gensim.__version__}\n")
    print("| measure | window | mean (jaxtopics) | max abs diff, gensim | max abs diff, gensim "
          "with the window fix | jaxtopics s | gensim s |")
    print("|---|---|---|---|---|---|---|")
    for measure, window in MEASURES.items():
        t0 = time.perf_counter()
        ours = jt.topic_coherence(topics, corpus, measure)
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = _gensim_scores(topics, texts, measure, window, fixed=False)
        theirs_s = time.perf_counter() - t0
        fixed = _gensim_scores(topics, texts, measure, window, fixed=True)
        print(f"| {measure} | {window or 'document'} | {ours.mean():.4f} | "
              f"{np.abs(ours - theirs).max():.2e} | {np.abs(ours - fixed).max():.2e} | "
              f"{ours_s:.2f} | {theirs_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
