"""Held-out likelihood (jaxtopics.evaluation): left-to-right against brute force, the exact sums
of the one-cluster-per-document models against their definition, completion, every model's
shape and sign, reproducibility, and choosing K on a planted corpus."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

import jaxtopics as jt
from jaxtopics.datasets import synthetic_lda
from jaxtopics.errors import CorpusError, ParameterError


def _texts(corpus):
    return [[corpus.vocab[i] for i in corpus.word_ids[a:b]]
            for a, b in zip(corpus.doc_offsets[:-1], corpus.doc_offsets[1:])]


@pytest.fixture(scope="module")
def split():
    syn = synthetic_lda(num_docs=70, num_words=40, num_topics=4, mean_doc_length=12, seed=0)
    docs = _texts(syn.corpus)
    train = jt.Corpus.from_token_lists(docs[10:])
    known = set(train.vocab)
    return train, jt.Corpus.from_token_lists([[w for w in d if w in known] for d in docs[:10]])


def _brute_lda(phi, alpha, doc):
    """log p(w) = log sum_z prod_n phi_{z_n, w_n} DirMult(z | alpha), every z enumerated."""
    k = phi.shape[0]
    zs = np.array(list(itertools.product(range(k), repeat=len(doc))))
    lp = np.log(phi[zs, np.asarray(doc)[None, :]]).sum(1)
    counts = np.stack([(zs == j).sum(1) for j in range(k)], 1)
    prior = (gammaln(k * alpha) - gammaln(len(doc) + k * alpha)
             + (gammaln(counts + alpha) - gammaln(alpha)).sum(1))
    return logsumexp(lp + prior)


def test_left_to_right_agrees_with_brute_force_on_short_documents():
    syn = synthetic_lda(num_docs=200, num_words=60, num_topics=10, mean_doc_length=30, seed=0)
    m = jt.LDA(num_topics=10, alpha=0.3).fit(syn.corpus, num_sweeps=30, seed=0)
    phi = m.topic_word.astype(np.float64)
    rng = np.random.default_rng(1)
    docs = [list(rng.choice(60, 6)) for _ in range(5)]
    exact = np.array([_brute_lda(phi, 0.3, d) for d in docs])
    held = jt.Corpus.from_token_lists([[m.vocab[i] for i in d] for d in docs])
    est = m.log_likelihood(held, num_particles=50, seed=0)
    assert est.dtype == np.float64 and est.shape == (5,)
    assert abs(est.sum() - exact.sum()) / abs(exact.sum()) < 0.005
    np.testing.assert_array_equal(est, m.log_likelihood(held, num_particles=50, seed=0))


def test_a_document_scores_the_same_whatever_is_scored_beside_it(split):
    train, held = split
    m = jt.LDA(num_topics=4).fit(train, num_sweeps=10, seed=0)
    docs = _texts(held)
    alone = m.log_likelihood(jt.Corpus.from_token_lists(docs[4:5]), seed=3)
    with_others = m.log_likelihood(jt.Corpus.from_token_lists(docs[4:5] + docs[:3]), seed=3)
    assert alone[0] == with_others[0] and np.all(np.isfinite(with_others))


def test_dmm_and_dpmm_exact_sum_over_clusters(split):
    train, held = split
    words = _texts(held)
    for est in (jt.DMM(num_clusters=4, alpha=0.2, beta=0.1), jt.DPMM(alpha=0.5, beta=0.1)):
        m = est.fit(train, num_sweeps=10, seed=0)
        ll = m.log_likelihood(held)
        st, p = m.state, m.params
        wc = np.asarray(st.word_cluster, np.float64)
        tokens = np.asarray(st.cluster_tokens, np.float64)
        docs = np.asarray(st.cluster_docs, np.float64)
        v, d_fit = wc.shape[0], docs.sum()
        index = {w: i for i, w in enumerate(m.vocab)}
        for j, doc in enumerate(words):
            ids = np.array([index[w] for w in doc])
            terms = []
            for k in range(wc.shape[1]):
                if m.model == "dpmm" and docs[k] == 0:
                    continue
                seen, lp = {}, 0.0
                for i, w in enumerate(ids):      # the Polya predictive, token by token
                    lp += np.log(wc[w, k] + p.beta + seen.get(w, 0)) - np.log(tokens[k] + v * p.beta + i)
                    seen[w] = seen.get(w, 0) + 1
                weight = (docs[k] + p.alpha) / (d_fit + wc.shape[1] * p.alpha) if m.model == "dmm" \
                    else docs[k] / (d_fit + p.alpha)
                terms.append(np.log(weight) + lp)
            if m.model == "dpmm":
                seen, lp = {}, 0.0
                for i, w in enumerate(ids):
                    lp += np.log(p.beta + seen.get(w, 0)) - np.log(v * p.beta + i)
                    seen[w] = seen.get(w, 0) + 1
                terms.append(np.log(p.alpha / (d_fit + p.alpha)) + lp)
            assert ll[j] == pytest.approx(logsumexp(terms), rel=2e-5)


def test_completion_scores_the_second_halves_with_theta_from_the_first(split):
    from jaxtopics.evaluation import split_halves

    train, held = split
    m = jt.LDA(num_topics=4).fit(train, num_sweeps=10, seed=0)
    ll = m.log_likelihood(held, method="completion", seed=2, num_sweeps=20)
    seen = _texts(held)
    lengths = [len(d) for d in seen]
    scored = sum(n - n // 2 for n in lengths)
    assert m.perplexity(held, "completion", seed=2, num_sweeps=20) == pytest.approx(
        np.exp(-ll.sum() / scored))
    first, second = split_halves(held, seed=5)
    assert np.array_equal(np.diff(first.doc_offsets), [n // 2 for n in lengths])
    assert np.array_equal(np.diff(second.doc_offsets), [n - n // 2 for n in lengths])
    for j, d in enumerate(seen):          # the halves partition each document's tokens
        a = [first.vocab[i] for i in first.word_ids[first.doc_offsets[j]:first.doc_offsets[j + 1]]]
        b = [second.vocab[i] for i in second.word_ids[second.doc_offsets[j]:second.doc_offsets[j + 1]]]
        assert sorted(a + b) == sorted(d)
    again = split_halves(held, seed=5)
    assert np.array_equal(again[0].word_ids, first.word_ids)
    # the scored half, by hand: the split of seed 2's key, theta folded in from the observed
    # half (transform with the same seed), then the mixture of the scored tokens
    import jax

    from jaxtopics.validate import seed_key
    split_seed = np.asarray(jax.random.key_data(jax.random.fold_in(seed_key(2), 1))).ravel()
    first, second = split_halves(held, [int(x) for x in split_seed])
    theta = m.transform(first, num_sweeps=20, seed=2)
    phi = m.topic_word.astype(np.float64)
    index = {w: i for i, w in enumerate(m.vocab)}
    for j in range(len(seen)):
        words = second.word_ids[second.doc_offsets[j]:second.doc_offsets[j + 1]]
        want = sum(np.log(theta[j] @ phi[:, index[second.vocab[i]]]) for i in words)
        assert ll[j] == pytest.approx(want, rel=1e-5)


def test_completion_of_a_sorted_bag_of_words_is_not_its_rare_half():
    """A document stored sorted by word id (as LDA-C files are) is split at random: the scored
    half holds frequent and rare words alike."""
    from jaxtopics.evaluation import split_halves

    doc = [f"w{i:02d}" for i in range(20) for _ in range(20 - i)]      # frequent ids first
    corpus = jt.Corpus.from_token_lists([doc])
    _, second = split_halves(corpus, seed=0)
    ids = second.word_ids
    assert 5 < np.mean([int(second.vocab[i][1:]) for i in ids]) < 8   # not all rare (>= 10)


@pytest.mark.parametrize("name", ["lda", "slda", "ptm", "hdp", "dmm", "dpmm", "dpmrm"])
def test_every_model_gives_finite_negative_values_of_the_right_shape(name, split):
    train, held = split
    extra = {}
    if name == "slda":
        make = lambda c: jt.Corpus.from_token_lists([[d[:len(d) // 2], d[len(d) // 2:]]  # noqa: E731
                                                     for d in _texts(c)], sentences=True)
        train, held = make(train), make(held)
    if name == "dpmrm":
        train = jt.Corpus.from_token_lists(_texts(train), labels=[["a"], ["b"]] * 30)
        held = jt.Corpus.from_token_lists(_texts(held), labels=[["a"]] * 10)
    est = {"lda": jt.LDA(num_topics=4), "slda": jt.SentenceLDA(num_topics=4),
           "ptm": jt.PTM(num_topics=4, num_pseudo_docs=6), "hdp": jt.HDP(), "dmm": jt.DMM(num_clusters=4),
           "dpmm": jt.DPMM(), "dpmrm": jt.DPMRM()}[name]
    m = est.fit(train, num_sweeps=5, seed=0, **extra)
    for method in (None, "completion"):
        ll = m.log_likelihood(held, method=method, seed=1)
        assert ll.shape == (10,) and ll.dtype == np.float64
        assert np.all(np.isfinite(ll)) and np.all(ll < 0)
        assert np.isfinite(m.perplexity(held, method=method, seed=1)) and m.perplexity(held, method) > 1


def test_bad_methods_options_and_documents(split):
    train, held = split
    m = jt.LDA(num_topics=4).fit(train, num_sweeps=3, seed=0)
    with pytest.raises(ParameterError, match="method must be one of .*'left_to_right', 'completion'"):
        m.log_likelihood(held, method="exact")
    with pytest.raises(ParameterError, match="unknown option.*num_sweeps"):
        m.log_likelihood(held, method="left_to_right", num_sweeps=3)
    with pytest.raises(ParameterError, match="num_particles"):
        m.log_likelihood(held, num_particles=0)
    with pytest.warns(jt.UnknownWordsWarning):
        assert m.log_likelihood(jt.Corpus.from_token_lists([["zzz", "qqq"]])).tolist() == [0.0]
    with pytest.warns(jt.UnknownWordsWarning), pytest.raises(CorpusError, match="no token"):
        m.perplexity(jt.Corpus.from_token_lists([["zzz", "qqq"]]))
    with pytest.raises(ParameterError, match="method must be one of"):
        jt.DMM(num_clusters=2).fit(train, num_sweeps=1).log_likelihood(held, method="left_to_right")


@pytest.mark.slow
def test_held_out_perplexity_picks_the_planted_number_of_topics():
    syn = synthetic_lda(num_docs=600, num_words=300, num_topics=20, mean_doc_length=60,
                        alpha=0.1, beta=0.05, seed=4)
    docs = _texts(syn.corpus)
    train = jt.Corpus.from_token_lists(docs[:500])
    held = jt.Corpus.from_token_lists(docs[500:])
    ppl = {}
    for k in (5, 20, 80):
        m = jt.LDA(num_topics=k, alpha=0.1, beta=0.05).fit(train, num_sweeps=150, seed=0)
        ppl[k] = (m.perplexity(held, "left_to_right", seed=0), m.perplexity(held, "completion", seed=0))
    for method in (0, 1):
        assert ppl[20][method] < ppl[5][method] and ppl[20][method] < ppl[80][method], ppl


def test_the_readme_block_runs():
    import re
    import warnings
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Evaluating a model"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    texts = ["apple banana cherry apple banana", "car engine wheel car road"] * 6
    model = jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(texts), num_sweeps=20)
    env = {"model": model, "held_out_texts": ["banana apple cherry", "wheel car engine zebra"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jt.UnknownWordsWarning)
        exec(compile(code, "README.md:Evaluating", "exec"), env)
    assert env["ll"].shape == (2,) and np.all(env["ll"] < 0)


def test_a_completion_split_is_the_documents_own(split):
    """Review: the split of document d was drawn from one stream over all documents, so it
    moved with the lengths of the documents before it; now document d's split depends only on
    the seed and d (as its left-to-right key does)."""
    from jaxtopics.evaluation import split_halves

    _, held = split
    docs = _texts(held)

    def observed_of_second(first_doc):
        halves = split_halves(jt.Corpus.from_token_lists([first_doc, docs[3]]), seed=[7, 0])[0]
        return [halves.vocab[i] for i in halves.word_ids[halves.doc_offsets[1]:]]

    short, long = observed_of_second(docs[0][:1]), observed_of_second(docs[0] * 5)
    assert len(short) == len(docs[3]) // 2 and short == long


def test_a_sharded_models_left_to_right_runs_on_its_devices_with_the_same_values():
    """A model fitted on 2 devices scores held-out documents split over those 2 (the batch's
    arrays sharded along the documents); each document's value is the one-device value."""
    import copy

    import jax
    from jaxtopics import evaluation
    syn = jt.datasets.synthetic_lda(num_docs=50, num_words=60, num_topics=3,
                                    mean_doc_length=15, seed=4)
    train, held = syn.corpus.subset(np.arange(40)), syn.corpus.subset(np.arange(40, 50))
    model = jt.LDA(3, num_blocks=4).fit(train, 6, seed=0, devices=2)
    assert model.shards == 2
    assert evaluation._model_devices(model) == sorted(jax.local_devices(), key=lambda d: d.id)[:2]
    seen = []
    real = evaluation._left_to_right_batch

    def spy(*args):
        seen.append(args[1].sharding)
        return real(*args)
    evaluation._left_to_right_batch = spy
    try:
        sharded = model.log_likelihood(held, num_particles=4)
    finally:
        evaluation._left_to_right_batch = real
    assert seen and all(len(s.device_set) == 2 for s in seen)
    single = copy.deepcopy(model)
    single.shards = None
    np.testing.assert_allclose(sharded, single.log_likelihood(held, num_particles=4), rtol=1e-6)


def test_completion_of_one_token_documents_alone_is_their_value_in_a_batch():
    corpus = jt.Corpus.from_texts(["apple banana apple cherry", "goal team goal match",
                                   "apple goal"] * 5)
    model = jt.LDA(2, alpha=0.1, beta=0.1).fit(corpus, 3, seed=0)
    batched = model.log_likelihood(["apple", "apple banana goal"], "completion")
    alone = model.log_likelihood(["apple"], "completion")
    assert alone.shape == (1,) and alone[0] == batched[0] and np.isfinite(alone[0])
    assert model.perplexity(["apple", "goal"], "completion") > 1


def test_errors_name_the_call():
    corpus = jt.Corpus.from_texts(["apple banana apple cherry", "goal team goal match"] * 3)
    model = jt.LDA(2).fit(corpus, 2, seed=0)
    with pytest.raises(jt.CorpusError, match="^perplexity: no documents given"):
        model.perplexity([])
    with pytest.raises(jt.CorpusError, match="^log_likelihood expects a Corpus or a list of texts"):
        model.log_likelihood("apple goal")
