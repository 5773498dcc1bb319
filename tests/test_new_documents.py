"""New documents onto a fitted model (transform, perplexity; jaxtopics/new_documents.py): words
and label sets matched by name, labels a model does not use ignored, a corpus or raw texts
without what the model needs refused before any warning, and warnings that point at the
caller's line."""

from __future__ import annotations

import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.errors import CorpusError, ParameterError
from small_texts import TEXTS


def _labelled_corpus():
    docs = [["apple", "banana", "fruit"], ["car", "engine", "road"], ["apple", "fruit", "salad"],
            ["engine", "tire", "car"]] * 3
    labels = [["food"], ["cars"], ["food"], ["cars", "food"]] * 3
    return docs, jt.Corpus.from_token_lists(docs, labels=labels)


def test_dpmrm_matches_new_documents_labels_and_words_by_name(tmp_path):
    docs, train = _labelled_corpus()
    jt.DPMRM(initial_topics=1).fit(train, num_sweeps=3).save(tmp_path / "r.jtm")
    m = jt.load(tmp_path / "r.jtm")
    assert m.label_names == train.label_names
    # the same documents and labels, numbered differently: same perplexity and fold-in
    own = jt.Corpus.from_token_lists(docs[:4][::-1], labels=[["cars", "food"], ["food"], ["cars"],
                                                             ["food"]])
    same = jt.Corpus.from_token_lists(docs[:4][::-1], vocab=list(m.vocab), label_names=train.label_names,
                                      labels=[["cars", "food"], ["food"], ["cars"], ["food"]])
    assert own.label_names != same.label_names or own.vocab != same.vocab
    assert m.perplexity(own, seed=1) == pytest.approx(m.perplexity(same, seed=1), rel=1e-6)
    np.testing.assert_allclose(m.transform(own, seed=1), m.transform(same, seed=1), atol=1e-6)
    with pytest.raises(CorpusError, match="label 'zzz'"):
        m.transform(jt.Corpus.from_token_lists([["apple"]], labels=[["zzz"]]))
    for bad in ("x", 1.5):
        with pytest.raises(ParameterError):
            m.perplexity(same, seed=bad)
    with pytest.raises(CorpusError, match="one integer label per document"):
        jt.DPMRM().fit(jt.Corpus.from_token_lists(docs, labels=[0, 1] * 6), num_sweeps=1)


def test_raw_texts_to_a_labelled_model_are_refused_before_any_warning(tmp_path):
    """Review: DP-MRM's transform of raw texts warned about their unknown words, then refused
    them for want of label sets; now only the refusal."""
    import warnings

    corpus = jt.Corpus.from_texts(["apple banana fruit", "car engine road", "apple fruit"],
                                  labels=[["a", "b"], ["b"], ["a"]])
    model = jt.DPMRM(initial_topics=2).fit(corpus, num_sweeps=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CorpusError, match="needs a label set on every document.*raw texts"):
            model.transform(["unknown words only", "apple"])


def test_warnings_point_at_the_callers_line_and_builtin_tokenizers_are_named():
    """Review: UnknownWordsWarning was reported at jaxtopics/fit.py (the x64 wrapper), and a
    model trained with tokenizer=str.split named it 'custom:?.str.split'."""
    texts = ["apple banana cherry", "cherry date egg", "apple egg banana"]
    m = jt.LDA(num_topics=2).fit(jt.Corpus.from_texts(texts), num_sweeps=1, progress=False)
    with pytest.warns(jt.UnknownWordsWarning) as caught:
        m.transform(["zebra apple"])
    assert caught[0].filename == __file__
    # a later review: DP-MRM's perplexity dropped unknown words without a word (transform warned)
    labelled = jt.Corpus.from_texts(texts, labels=[["a"], ["b"], ["a", "b"]])
    r = jt.DPMRM(topic_capacity=4).fit(labelled, num_sweeps=1, progress=False)
    held_out = jt.Corpus.from_texts(["zebra apple cherry"], labels=[["a"]], label_names=("a", "b"))
    with pytest.warns(jt.UnknownWordsWarning, match="perplexity: 1 of 3 tokens") as caught:
        r.perplexity(held_out, num_sweeps=2)
    assert caught[0].filename == __file__ and "the other 2 tokens" in str(caught[0].message)
    c = jt.Corpus.from_texts(["apple banana", "cherry date"], tokenizer=str.split)
    assert c.text_options.to_json()["tokenizer"] == "custom:builtins.str.split"


def test_a_corpus_without_what_the_model_needs_is_refused_before_any_warning():
    """Re-check: a Corpus without label sets (DP-MRM) or sentences (SentenceLDA) warned about
    its unknown words first, then was refused."""
    import warnings

    texts = ["Apple banana cherry. Date egg.", "Cherry date. Egg fig apple.", "Apple fig. Banana."]
    slda = jt.SentenceLDA(num_topics=2).fit(jt.Corpus.from_texts(texts, sentences=True),
                                            num_sweeps=1, progress=False)
    labelled = jt.Corpus.from_texts(texts, labels=[["a"], ["b"], ["a", "b"]])
    dpmrm = jt.DPMRM(initial_topics=2).fit(labelled, num_sweeps=1, progress=False)
    flat = jt.Corpus.from_texts(["apple zebra quux"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CorpusError, match="needs sentence boundaries, and this Corpus has none"):
            slda.transform(flat)
        with pytest.raises(CorpusError, match="needs a label set .* none \\(labels missing\\)"):
            dpmrm.transform(flat)
    assert jt.metrics.clustering_scores((x for x in [0, 0, 1]), iter([1, 1, 0]))["nmi"] == 1.0


def test_models_without_labels_ignore_unseen_labels_in_transform():
    train = jt.Corpus.from_texts(TEXTS[:2] * 5, labels=[["fruit"], ["cars"]] * 5)
    m = jt.LDA(num_topics=2).fit(train, num_sweeps=3)
    theta = m.transform(jt.Corpus.from_texts(["apple car"], labels=[["politics"]]))
    assert theta.shape == (1, 2)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-6)
    assert m.transform(jt.Corpus.from_texts(["apple car", "car"], labels=[3, 7])).shape == (2, 2)
