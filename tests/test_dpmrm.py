"""DP-MRM through the facade and the CLI: planted label-specific topics, held-out perplexity,
capacity growth, reproducibility and resume (growth included), bad input.

The kernels' exactness is tested by enumeration in test_dpmrm_kernels.py."""

from __future__ import annotations

import functools
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linear_sum_assignment

import jaxtopics as jt
from jaxtopics.errors import CorpusError, ParameterError
from jaxtopics.models import dpmrm


def _planted(num_docs=250, labels=4, per_label=2, words=10, shared=20, length=40, seed=0):
    """Multi-label documents from label-specific topics: label l owns topics (l, 0..per_label-1),
    each with 85 % of its mass on its own 10 words and 15 % on 20 words shared by all topics. A
    document carries 1-2 labels, mixes them with psi ~ Dir(1), and within each label prefers one
    of its topics (theta ~ Dir(0.1)), so the topics are identifiable from co-occurrence."""
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
        own = sorted(rng.choice(labels, size=int(rng.integers(1, 3)), replace=False).tolist())
        psi = rng.dirichlet(np.ones(len(own)))
        theta = rng.dirichlet(np.full(per_label, 0.1), size=len(own))
        toks = []
        for _ in range(length):
            r = rng.choice(len(own), p=psi)
            k = rng.choice(per_label, p=theta[r])
            toks.append(f"w{rng.choice(v, p=phi[own[r], k])}")
        docs.append(toks)
        sets.append([f"L{x}" for x in own])
    corpus = jt.Corpus.from_token_lists(docs, labels=sets, label_names=[f"L{x}" for x in range(labels)])
    return corpus, phi


@functools.lru_cache(maxsize=None)
def _planted_fit():
    """One parallel chain on 200 planted documents, with held-out perplexity after 1, 10 and
    60 sweeps (the same chain continued)."""
    corpus, phi = _planted()
    train, test = corpus.subset(np.arange(200)), corpus.subset(np.arange(200, 250))
    model = jt.DPMRM(alpha=1.0, beta=0.05, gamma=1.0, eta=1.0).fit(train, num_sweeps=1, seed=0,
                                                                   progress=False)
    ppl = [model.perplexity(test, num_sweeps=20)]
    for more in (9, 50):
        model.resume(train, more, progress=False)
        ppl.append(model.perplexity(test, num_sweeps=20))
    return model, train, test, phi, ppl


@pytest.mark.slow
def test_planted_label_topics_are_recovered() -> None:
    """Every planted topic is found among the topics of its own label (Hungarian matching on
    cosine similarity within each label; >= 0.9), and those topics hold >= 85 % of the tokens."""
    model, train, _, phi, _ = _planted_fit()
    order = np.argsort([int(w[1:]) for w in train.vocab])
    est = model.topic_word[:, order]
    matched_tokens = 0
    for lab in range(phi.shape[0]):
        mine = np.flatnonzero(model.topic_label == lab)
        assert mine.size >= phi.shape[1], (lab, model.topics_per_label)
        cos = (phi[lab] @ est[mine].T) / (np.linalg.norm(phi[lab], axis=1)[:, None]
                                           * np.linalg.norm(est[mine], axis=1)[None, :])
        rows, cols = linear_sum_assignment(-cos)
        assert cos[rows, cols].min() >= 0.9, (lab, np.round(cos, 2))
        matched_tokens += model.topic_sizes[mine[cols]].sum()
    assert matched_tokens >= 0.85 * train.num_tokens, matched_tokens / train.num_tokens
    # label-topic weights: label l's measure puts its mass on its own topics
    lt = model.label_topic
    assert lt.shape == (4, model.num_topics)
    assert (lt[model.topic_label, np.arange(model.num_topics)] > 0).all()
    np.testing.assert_allclose(lt.sum(1) + model.label_new_topic, 1.0, rtol=1e-5)


def test_held_out_perplexity_decreases_with_sweeps() -> None:
    """Held-out perplexity (fold-in against the fitted counts, corrected theta incl. the
    new-topic terms) falls as the chain learns the planted topics: after 1 sweep the topics are
    close to the random start; after 60 they are the planted ones."""
    _, _, _, _, ppl = _planted_fit()
    assert all(np.isfinite(ppl)), ppl
    assert ppl[1] < ppl[0] and ppl[2] < 0.95 * ppl[0], ppl


def test_held_out_likelihood_is_the_corrected_theta_formula() -> None:
    """The held-out log likelihood equals, in float64, sum_ji log(sum_c theta_jc psi_c,x_ji +
    sum_k theta_jk,new / V) with theta from the same fold-in; theta over the fitted topics and
    the new topics sums to 1 for every document (the l_new terms make it a distribution)."""
    model, _, test, _, _ = _planted_fit()
    data = dpmrm.prepare(test, model.params)
    key = jax.random.key(3)
    theta = np.asarray(dpmrm._fold_in(key, model.state, data, model.params, 10), np.float64)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-5)
    c = model.state.topic.shape[0]
    wt = np.asarray(model.state.word_topic, np.float64)
    beta, v = model.params.beta, wt.shape[0]
    phi = (wt + beta) / (np.asarray(model.state.topic, np.float64) + v * beta)          # [V, C]
    p = (theta[test.doc_index, :c] * phi[test.word_ids]).sum(1) + theta[test.doc_index, c:].sum(1) / v
    ll = dpmrm.held_out_log_likelihood(key, model.state, data, model.params, 10)
    np.testing.assert_allclose(ll, np.log(p).sum(), rtol=1e-5)
    got = model.transform(test, num_sweeps=10)
    assert got.shape == (test.num_docs, model.num_topics)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


def test_read_outs_and_counts() -> None:
    model, train, _, _, _ = _planted_fit()
    k, d, v = model.num_topics, train.num_docs, train.num_words
    assert model.model == "dpmrm" and model.num_active_topics == k
    assert model.topic_word.shape == (k, v) and model.doc_topic.shape == (d, k)
    np.testing.assert_allclose(model.topic_word.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(model.doc_topic.sum(1), 1.0, rtol=1e-5)
    assert np.all(np.diff(model.topic_label) >= 0)                     # ordered by label
    np.testing.assert_array_equal(np.bincount(model.topic_label, minlength=4), model.topics_per_label)
    np.testing.assert_array_equal(np.bincount(model.assignments, minlength=k), model.topic_sizes)
    # a document's topics belong to its labels
    doc_labels = [set(np.flatnonzero([lab in s for lab in train.label_names])) for s in train.label_sets]
    tok_label = model.topic_label[model.assignments]
    assert all(tok_label[i] in doc_labels[dd] for i, dd in enumerate(train.doc_index))
    dl = model.doc_label
    np.testing.assert_allclose(dl.sum(1), 1.0, rtol=1e-5)
    assert all(set(np.flatnonzero(dl[j])) == doc_labels[j] for j in range(d))
    assert "<DPMRM K=" in model.summary() and np.isfinite(model.log_joint_per_token())
    state, data = model.state, dpmrm.prepare(train, model.params)
    again = dpmrm.rebuild(state, data, model.params)
    for name in state._fields:
        np.testing.assert_array_equal(np.asarray(getattr(state, name)),
                                      np.asarray(getattr(again, name)), err_msg=name)


# ------------------------------------------------------------------------------------------
# capacity growth, reproducibility, resume


@functools.lru_cache(maxsize=None)
def _small() -> jt.Corpus:
    """24 short documents over 2 labels: DP-MRM opens ~15 topics and ~5 tables per document."""
    rng = np.random.default_rng(1)
    docs, sets = [], []
    for _ in range(24):
        own = sorted(rng.choice(2, size=int(rng.integers(1, 3)), replace=False).tolist())
        docs.append([f"w{rng.integers(0, 12) + 6 * own[0]}" for _ in range(int(rng.integers(4, 9)))])
        sets.append([f"L{x}" for x in own])
    return jt.Corpus.from_token_lists(docs, labels=sets)


def _small_model(capacity: int, sampler: str = "sequential", **kw) -> jt.DPMRM:
    """`capacity` topic slots and (at most) `capacity` table slots per document to start with."""
    return jt.DPMRM(alpha=2.0, beta=0.2, gamma=3.0, eta=1.0, sampler=sampler, topic_capacity=capacity,
                    table_capacity=min(capacity, 2), initial_topics=1, **kw)


def _same_state(a, b) -> None:
    for name, x, y in zip(a.state._fields, a.state, b.state):
        assert np.asarray(x).shape == np.asarray(y).shape, name
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def test_save_load_resume_with_growth_equals_uninterrupted(tmp_path) -> None:
    """Capacities 4 topics / 2 tables grow (outside jit, between sweeps) before and after the
    save: fit 4 + save + load + resume 46 is bitwise the 50-sweep chain; the same seed gives the
    same chain, another seed another one; the grown state's counts match its latents."""
    corpus = _small()
    first = _small_model(4).fit(corpus, num_sweeps=4, seed=3, progress=False)
    shape_at_4 = (first.state.word_topic.shape[1], first.state.dish.shape[1])
    assert shape_at_4[0] > 4 and shape_at_4[1] > 2
    first.save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert (loaded.state.word_topic.shape[1], loaded.state.dish.shape[1]) == shape_at_4
    loaded.resume(corpus, 46, progress=False)
    assert loaded.state.word_topic.shape[1] > shape_at_4[0]          # grew again after the load
    straight = _small_model(4).fit(corpus, num_sweeps=50, seed=3, progress=False)
    _same_state(loaded, straight)
    resumed = {p.sweep: p[:3] for p in loaded.trace}
    assert resumed[4][0] == 4 and all(resumed[p.sweep] == p[:3] for p in straight.trace)
    again = _small_model(4).fit(corpus, num_sweeps=50, seed=3, progress=False)
    _same_state(again, straight)
    other = _small_model(4).fit(corpus, num_sweeps=50, seed=4, progress=False)
    assert not np.array_equal(other.assignments, straight.assignments)
    state, data = straight.state, dpmrm.prepare(corpus, straight.params)
    rebuilt = dpmrm.rebuild(state, data, straight.params)
    for name in state._fields:
        np.testing.assert_array_equal(np.asarray(getattr(state, name)),
                                      np.asarray(getattr(rebuilt, name)), err_msg=name)


def test_capacity_4_and_512_give_the_same_statistics() -> None:
    """Chains started with 4 topic slots (grown as needed) and with 512 end with the same
    posterior statistics: number of active topics and log joint per token (means over
    independent seeds, Welch t-tests at 1e-3). A cap that silently refused new topics would
    show far fewer topics."""
    corpus = _small()
    stats_of = {}
    for capacity, seeds in ((4, range(8)), (512, range(100, 108))):
        topics, lj = [], []
        for seed in seeds:
            m = _small_model(capacity).fit(corpus, num_sweeps=40, seed=seed, eval_every=40,
                                           progress=False)
            if capacity == 4:
                assert m.state.word_topic.shape[1] > 4
            topics.append(int(m.num_active_topics))
            lj.append(m.trace[-1].log_joint_per_token)
        stats_of[capacity] = (np.asarray(topics, float), np.asarray(lj))
    for i, what in enumerate(("topics", "log joint per token")):
        a, b = stats_of[4][i], stats_of[512][i]
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        assert p > 1e-3, (what, a, b)
    assert stats_of[4][0].mean() > 6, stats_of[4][0]


def test_parallel_with_one_document_per_block_is_sequential() -> None:
    """The parallel kernel's exact limit: with num_blocks >= D every block holds one document
    in corpus order, and the sweep is the sequential one, bit for bit."""
    corpus = _small()
    seq = dpmrm.check_params(dpmrm.Params(alpha=2.0, beta=0.2, gamma=3.0, sampler="sequential",
                                          topic_capacity=64))
    par = seq._replace(sampler="parallel", num_blocks=64)
    data = dpmrm.prepare(corpus, seq)
    state = dpmrm.init(jax.random.key(0), data, seq)

    def run(params):
        @jax.jit
        def go(state):
            def body(st, t):
                st, info = dpmrm.sweep(jax.random.fold_in(jax.random.key(1), t), st, data, params)
                return st, info.changed
            return jax.lax.scan(body, state, jnp.arange(5))
        return go(state)

    (a, ca), (b, cb) = run(seq), run(par)
    for name, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
    np.testing.assert_array_equal(np.asarray(ca), np.asarray(cb))
    assert int(ca[0]) > 0


# ------------------------------------------------------------------------------------------
# bad input


def test_labels_missing_or_unusable() -> None:
    plain = jt.Corpus.from_token_lists([["a", "b"], ["c"]])
    with pytest.raises(CorpusError, match="labels missing"):
        jt.DPMRM().fit(plain, num_sweeps=1)
    with pytest.raises(CorpusError, match="labels missing"):
        dpmrm.prepare(plain, dpmrm.Params())
    with pytest.raises(CorpusError, match="document 1 has an empty label set"):
        jt.Corpus.from_token_lists([["a"], ["b"]], labels=[["x"], []])
    unused = jt.Corpus.from_token_lists([["a"], ["b"]], labels=[["x"], ["x", "y"]],
                                        label_names=("x", "y", "z"))
    with pytest.raises(CorpusError, match="label 'z' .* has no documents"):
        jt.DPMRM().fit(unused, num_sweeps=1)


@pytest.mark.parametrize("field", ["alpha", "beta", "gamma", "eta"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), float("nan"), True, "1", 1e-40, 1e40])
def test_bad_concentrations(field: str, value) -> None:
    with pytest.raises(ParameterError, match=field):
        jt.DPMRM(**{field: value})


@pytest.mark.parametrize("kwargs,match", [
    (dict(sampler="exact"), "sampler"), (dict(initial_topics=0), "initial_topics"),
    (dict(topic_capacity=-1), "topic_capacity"), (dict(num_blocks=True), "num_blocks"),
    (dict(table_capacity=2.5), "table_capacity"),
])
def test_bad_settings(kwargs, match) -> None:
    with pytest.raises(ParameterError, match=match):
        jt.DPMRM(**kwargs)


def test_held_out_corpus_must_use_the_fitted_labels() -> None:
    model, train, test, _, _ = _planted_fit()
    more = jt.Corpus.from_token_lists([["w1", "w2"]], labels=[["L1", "new"]],
                                      label_names=train.label_names + ("new",), vocab=train.vocab)
    with pytest.raises(CorpusError, match="label 'new', which the model does not know"):
        model.perplexity(more)                      # labels are matched by name
    with pytest.raises(CorpusError, match="labels missing"):
        model.transform(jt.Corpus.from_token_lists([["w1"]], vocab=train.vocab))
    with pytest.raises(ParameterError, match="method must be one of .'corrected_theta', 'completion'"):
        model.perplexity(test, method="left_to_right")


# ------------------------------------------------------------------------------------------
# command line


def test_cli_fit_and_show(tmp_path) -> None:
    lines = []
    rng = np.random.default_rng(0)
    for i in range(30):
        label = ["sports", "politics", "sports--politics"][i % 3]
        words = {"sports": "match goal team player score", "politics": "vote party minister law"}
        pool = " ".join(words[x] for x in label.split("--")).split()
        lines.append(label + "\t" + " ".join(rng.choice(pool, size=12)))
    path = tmp_path / "labelled.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "jaxtopics.cli", "fit", "--model", "dpmrm", "--input", str(path),
           "--out", str(out), "--sweeps", "3", "--eval-every", "1", "--gamma", "0.5", "--eta", "2",
           "--sampler", "sequential", "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "DPMRM" in done.stdout and (out / "model.jtm").is_file()
    model = jt.load(out / "model.jtm")
    assert model.model == "dpmrm" and model.params.gamma == 0.5 and model.params.eta == 2.0
    assert model.sweeps_done == 3
    show = subprocess.run([sys.executable, "-m", "jaxtopics.cli", "show", str(out / "model.jtm")],
                          capture_output=True, text=True, timeout=600)
    assert show.returncode == 0 and "<DPMRM K=" in show.stdout, show.stderr
    plain = tmp_path / "plain.txt"
    plain.write_text("no labels here\n", encoding="utf-8")
    bad = subprocess.run(cmd[:7] + [str(plain), "--out", str(tmp_path / "bad")],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "no tab" in bad.stderr, bad.stderr
