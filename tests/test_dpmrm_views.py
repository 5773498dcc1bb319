"""DP-MRM's document views (jaxtopics/models/dpmrm_views.py): a document reads its labels' topics
only. The index of each label's topics, the chain being the one of full views (the topics left
out have weight zero), and the overflow of a label with more topics than its view holds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from jaxtopics.models import dpmrm, dpmrm_views


def _corpus(num_labels=12, docs_per_label=6, length=12, seed=0):
    """Single-label documents, each label with its own 6 words (and 4 shared)."""
    rng = np.random.default_rng(seed)
    docs, sets = [], []
    for lab in range(num_labels):
        for _ in range(docs_per_label):
            own = rng.integers(0, 6, size=length)
            shared = rng.integers(0, 4, size=length)
            pick = rng.random(length) < 0.8
            docs.append([f"l{lab}w{o}" if p else f"s{s}" for o, s, p in zip(own, shared, pick)])
            sets.append([f"L{lab}"])
    return jt.Corpus.from_token_lists(docs, labels=sets,
                                      label_names=[f"L{x}" for x in range(num_labels)])


def _state(params, corpus, seed=0):
    data = dpmrm.prepare(corpus, params)
    return data, dpmrm.init(jax.random.key(seed), data, params)


def test_label_topics_lists_each_labels_active_slots_in_order():
    params = dpmrm.Params(initial_topics=3, table_capacity=4)
    data, state = _state(params, _corpus())
    state, _ = jax.jit(lambda k, s: dpmrm.sweep(k, s, data, params))(jax.random.key(1), state)
    c, num_labels = state.topic.shape[0], state.label_tables.shape[0]
    width = 8
    slots, most = dpmrm_views.label_topics(state, width)
    owner, tables = np.asarray(state.topic_label), np.asarray(state.topic_tables)
    want = [np.flatnonzero((owner == lab) & (tables > 0)) for lab in range(num_labels)]
    assert int(most) == max(len(w) for w in want)
    for lab, w in enumerate(want):
        row = np.asarray(slots[lab])
        np.testing.assert_array_equal(row[:len(w)], w[:width])
        assert np.all(row[len(w):] == c)


def test_label_width_grows_with_the_capacity_and_never_passes_it():
    assert dpmrm_views.label_width(10, 3) == 10                # few slots: all of them
    assert dpmrm_views.label_width(712, 89) == 44              # Tweet: C // 16
    assert dpmrm_views.label_width(64, 20) == 32
    assert dpmrm_views.label_width(4096, 20) == 820            # 4 C / L
    for c in (8, 64, 1000, 10**6):
        for labels in (1, 5, 100, 10**4):
            w = dpmrm_views.label_width(c, labels)
            assert 1 <= w <= c and dpmrm_views.label_width(2 * c, labels) >= w


def _all_columns(slots, docs, capacity):
    """The views before dpmrm_views: every topic slot, in slot order."""
    return jnp.broadcast_to(jnp.arange(capacity, dtype=jnp.int32), (docs.length.shape[0], capacity))


def _summaries(states, data):
    """Per chain, a partition-invariant summary: (active topics, tables of document 0, whether
    document 0's first two tokens share a topic), as one category id."""
    topics = np.asarray(jnp.sum(states.topic_tables > 0, axis=1))
    tables = np.asarray(jnp.sum(states.table_size[:, 0] > 0, axis=1))
    first = np.flatnonzero(np.asarray(data.doc) == 0)[:2]
    dish = np.asarray(states.dish[:, 0])
    tab = np.asarray(states.table[:, first])
    shared = dish[np.arange(dish.shape[0]), tab[:, 0]] == dish[np.arange(dish.shape[0]), tab[:, 1]]
    return topics * 100 + tables * 2 + shared


@pytest.mark.slow
def test_views_of_the_labels_topics_give_the_law_of_views_over_every_topic(monkeypatch, optimized):
    """Two sweeps from one state, 1500 chains each way: with views of the labels' topics
    (12 labels, 64 topic slots: 32 columns) and with views of every slot (the kernel before
    dpmrm_views; the topics left out have weight zero, so the law must be the same; the chains
    are not, the categorical's order of categories depends on their number). Two-sample
    chi-square of a summary of the states at level 1e-3; the control (chains from another
    start) is rejected."""
    from scipy import stats

    corpus = _corpus(docs_per_label=2, length=6)
    params = dpmrm.Params(sampler="sequential", initial_topics=2, topic_capacity=64,
                          table_capacity=6)
    data, start = _state(params, corpus)
    other = dpmrm.init(jax.random.key(99), data, params)
    assert dpmrm_views.label_width(64, 12) == 32
    keys = jax.random.split(jax.random.key(7), 1500)

    def two(key, state):
        st, info1 = dpmrm.sweep(jax.random.fold_in(key, 0), state, data, params)
        st, info2 = dpmrm.sweep(jax.random.fold_in(key, 1), st, data, params)
        return st, info1.overflow | info2.overflow

    def chains(run, state):
        states, over = run(keys, state)
        assert not bool(jnp.any(over))
        return _summaries(states, data)

    def chi2(a, b):
        cats = np.union1d(a, b)
        table = np.array([[np.sum(x == c) for c in cats] for x in (a, b)])
        table = table[:, table.sum(axis=0) >= 10]          # expected counts >= 5 per cell
        assert table.shape[1] >= 4                         # the summary varies
        return stats.chi2_contingency(table).pvalue

    run = jax.jit(jax.vmap(two, in_axes=(0, None)))
    narrow = chains(run, start)
    control = chains(run, other)
    with monkeypatch.context() as m:
        m.setattr(dpmrm, "document_columns", _all_columns)
        wide = chains(jax.jit(jax.vmap(two, in_axes=(0, None))), start)
    assert chi2(narrow, wide) > 1e-3
    assert chi2(narrow, control) < 1e-3


def test_a_label_owning_more_topics_than_its_view_holds_overflows_and_grows():
    """One label owns 40 topics, more than the 32 columns of a view at C = 64 with 12 labels:
    the sweep reports overflow (its result is discarded), ``grow`` doubles C until the label
    fits with room, and the fit then runs with consistent tables."""
    corpus = _corpus()
    params = dpmrm.Params(initial_topics=1, topic_capacity=64, table_capacity=12)
    data = dpmrm.prepare(corpus, params)
    # label 0's 6 documents: every token at its own table, tables on 40 distinct topics
    base = dpmrm.init(jax.random.key(0), data, params)
    doc = np.asarray(data.doc)
    table = np.zeros(doc.shape[0], np.int32)
    dish = np.asarray(base.dish).copy()
    topic_label = np.asarray(base.topic_label).copy()
    next_topic = 12                          # init: label l owns slot l (initial_topics=1)
    for d in range(6):                       # label 0's documents
        tokens = np.flatnonzero(doc == d)
        for i, tok in enumerate(tokens[:7]):
            table[tok] = i
            dish[d, i] = next_topic if next_topic < 52 else 0
            next_topic += 1
        table[tokens[7:]] = 0
    for d in range(6, 72):
        table[doc == d] = 0
        dish[d, 0] = d // 6
    topic_label[12:52] = 0
    state = dpmrm.state_from_assignments(table, dish, topic_label, data)
    slots, most = dpmrm_views.label_topics(state, 32)
    assert int(most) > 32
    _, info = jax.jit(lambda k, s: dpmrm.sweep(k, s, data, params))(jax.random.key(1), state)
    assert bool(info.overflow)
    grown = dpmrm.grow(state, data, params)
    assert grown.topic.shape[0] == 128
    # the driver grows and redoes the sweep until the label fits (40 <= 43 at C = 128)
    from jaxtopics.fit import run_sweeps
    state, trace = run_sweeps(dpmrm, params, data, state, jax.random.key(2), start=0,
                              num_sweeps=3, num_tokens=doc.shape[0], eval_every=1, progress=False)
    assert state.topic.shape[0] >= 128 and dpmrm_views.label_width(128, 12) == 43
    assert len(trace) == 3 and all(np.isfinite(p.log_joint_per_token) for p in trace)
    rebuilt = dpmrm.rebuild(state, data, params)
    for name, a, b in zip(rebuilt._fields, rebuilt, state):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
