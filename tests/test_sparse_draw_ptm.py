"""The sparse draw in PTM's token step (``Params.draw``; ``ops.sparse_draw`` with each
pseudo-document's distinct topics listed by ``ops.group_topic_lists``).

(a) The law the draw implies with distinct-topic lists and their counts equals (1)
(``collapsed_topic_draw``'s) to float32 rounding; the lists and the block word lists against
numpy. (b) The PTM kernel with draw="sparse" passes the exact-enumeration test in test_ptm.py
(``parallel-sparse``); here, with the lists capped at one topic (pseudo-documents holding two
draw densely, in chunks mixed with sparse tokens), the same enumeration at fewer chains.
(c) Same seed, same chain, bitwise; "auto"'s choice; the CLI option; refusals.

Statistical thresholds: each test's false-alarm rate <= FAMILY_ALPHA = 1e-3, Bonferroni-split
over its statistics; tolerances come from the number of draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxtopics as jt
from enumeration_stats import pooled_chisquare_p, tv, tv_bound
from jaxtopics import Corpus
from jaxtopics.errors import ParameterError
from jaxtopics.models import ptm
from jaxtopics.ops import (block_word_lists, distinct_words, group_topic_lists,
                           sparse_topic_weights, word_group_table)
from test_ptm import _assert_consistent, _case, _truth

FAMILY_ALPHA = 1e-3


@pytest.mark.parametrize("k", [1, 2, 7, 40, 300])
def test_distinct_topic_lists_give_the_collapsed_conditional(k):
    """Tokens of G groups with random count rows (many zeros): the law with each group's
    distinct topics and counts as members equals (1), the own token excluded."""
    rng = np.random.default_rng(k)
    groups, tokens, v, beta = 5, 48, 9, 0.05
    group_topic = rng.integers(0, 4, (groups, k)) * (rng.random((groups, k)) < 0.3)
    group = rng.integers(0, groups, tokens)
    old = rng.integers(0, k, tokens)
    np.add.at(group_topic, (group, old), 1)           # every token counted where it sits
    word = rng.integers(0, v, tokens)
    word_topic = rng.integers(0, 5, (v, k))
    np.add.at(word_topic, (word, old), 1)
    topic = word_topic.sum(0) + rng.integers(0, 9, k)
    alpha = rng.uniform(0.05, 1.0, k).astype(np.float32)
    topics, counts, overflow = group_topic_lists(jnp.asarray(group_topic, jnp.int32), min(k, 256))
    assert not np.asarray(overflow).any()
    words, slot = distinct_words(jnp.asarray(word, jnp.int32), v, v)
    table = word_group_table(words, jnp.asarray(word_topic), jnp.asarray(topic),
                             jnp.asarray(alpha), beta, v)
    got = np.asarray(sparse_topic_weights(
        jnp.asarray(topics)[group], jnp.asarray(group_topic[group, old]), jnp.asarray(word), slot,
        jnp.asarray(old), jnp.asarray(word_topic), jnp.asarray(topic), table, jnp.asarray(alpha),
        beta, v, member_counts=jnp.asarray(counts)[group]), np.float64)
    own = np.arange(k)[None, :] == old[:, None]
    want = ((group_topic[group] - own + alpha[None, :].astype(np.float64))
            * (word_topic[word] - own + beta) / (topic[None, :] - own + v * beta))
    np.testing.assert_allclose(got / got.sum(1, keepdims=True), want / want.sum(1, keepdims=True),
                               rtol=2e-5, atol=1e-6)


def test_group_topic_lists_and_block_word_lists_against_numpy():
    rng = np.random.default_rng(0)
    table = rng.integers(0, 3, (6, 20)) * (rng.random((6, 20)) < 0.25)
    table[5] = 0                                     # an empty group
    table[4, :9] = 1                                 # 9 non-zero topics, more than the cap
    topics, counts, overflow = (np.asarray(a) for a in group_topic_lists(jnp.asarray(table), 8))
    for g in range(6):
        nonzero = np.flatnonzero(table[g])
        listed = topics[g][topics[g] >= 0]
        assert overflow[g] == (len(nonzero) > 8)
        if not overflow[g]:
            np.testing.assert_array_equal(np.sort(listed), nonzero)
        np.testing.assert_array_equal(counts[g][topics[g] >= 0], table[g, listed])
        assert (counts[g][topics[g] < 0] == 0).all()
    words = rng.integers(0, 12, (4, 10))
    words[1, 6:] = 12                                # padding slots
    words[3] = 12                                    # a block of padding only
    lists = block_word_lists(words, 12)
    for b in range(4):
        distinct = np.unique(words[b][words[b] < 12])
        np.testing.assert_array_equal(lists[b, :len(distinct)], distinct)
        assert (lists[b, len(distinct):] == 12).all()


@pytest.mark.slow
def test_enumeration_with_the_dense_fallback(monkeypatch):
    """Lists capped at one topic: a pseudo-document holding both topics draws densely, one
    holding one topic sparsely, in one chunk (the fallback's lax.cond and select). test_ptm's
    enumerated case (256 joint states), one document and one token per block, 60k chains x 20
    sweeps from a uniform start; TV and chi-square at FAMILY_ALPHA / 2."""
    monkeypatch.setattr(ptm, "MAX_GROUP_TOPICS", 1)
    e = _case()
    params = ptm.check_params(ptm.Params(e.k, e.p, alpha=e.alpha, beta=e.beta, lam=e.lam,
                                         num_blocks=64, draw="sparse"))
    data = ptm.prepare(e.corpus, params)
    chains = 60_000

    def chain(key):
        ki, kr = jax.random.split(key)
        st = ptm.init(ki, data, params)
        return jax.lax.fori_loop(0, 20, lambda t, st: ptm.sweep(
            jax.random.fold_in(kr, t), st, data, params)[0], st)

    final = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(11), chains))
    _assert_consistent(final, params, data, batched=True)
    s = np.concatenate([np.asarray(final.pseudo), np.asarray(final.z)[:, :e.n]], axis=1)
    counts = np.bincount(e.index(s), minlength=len(e.states))
    post = e.posterior(_truth())
    assert pooled_chisquare_p(counts, post) > FAMILY_ALPHA / 2
    assert tv(counts / chains, post) < tv_bound(post, chains, FAMILY_ALPHA / 2)


def _short_corpus() -> Corpus:
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 9, 60)
    words = rng.integers(0, 25, int(lengths.sum())).astype(np.int32)
    return Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                              [f"w{i}" for i in range(25)])


def test_same_seed_same_chain_bitwise_and_dense_is_unchanged():
    corpus = _short_corpus()
    runs = [jt.PTM(7, 5, num_blocks=5, draw=draw).fit(corpus, num_sweeps=6, seed=3, progress=False)
            for draw in ("sparse", "sparse", "dense", "auto")]
    np.testing.assert_array_equal(np.asarray(runs[0].state.z), np.asarray(runs[1].state.z))
    assert (np.asarray(runs[0].state.z) != np.asarray(runs[2].state.z)).any()
    # "auto" at K = 7 is the dense draw, the chain of the code before the sparse draw existed
    np.testing.assert_array_equal(np.asarray(runs[2].state.z), np.asarray(runs[3].state.z))


def test_auto_picks_by_backend_k_and_block_size():
    corpus = _short_corpus()
    cpu = jax.default_backend() == "cpu"
    large = ptm.CPU_MIN_TOPICS
    for k, p, blocks in ((large - 1, 1, 1), (large, 1, 1), (large, 4, 64), (large, 1, 2)):
        params = ptm.check_params(ptm.Params(k, p, num_blocks=blocks))
        data = ptm.prepare(corpus, params)
        assert (data.token_block_words.shape[1] > 0) == (cpu and k >= large)
        width = data.token_blocks.shape[1]
        want = cpu and k >= large and width >= ptm.CPU_TOKENS_PER_GROUP * p
        assert ptm.uses_sparse(params, data) == want, (k, p, blocks)
    dense = ptm.prepare(corpus, ptm.Params(3, 2, draw="dense"))
    assert dense.token_block_words.shape[1] == 0
    with pytest.raises(ParameterError, match="prepared without"):
        ptm.uses_sparse(ptm.Params(3, 2, draw="sparse"), dense)
    assert not ptm.uses_sparse(ptm.Params(large, 1, sampler="sequential"), dense)


def test_cli_draw_option(tmp_path, capsys):
    """``jaxtopics fit --model ptm --draw sparse`` fits and saves the setting; a clash with the
    sequential sampler is refused naming the setting."""
    from jaxtopics.cli import main

    src = tmp_path / "short.txt"
    src.write_text("apple banana cherry\nbanana cherry date\negg fig grape\nfig grape apple\n" * 5,
                   encoding="utf-8")
    base = ["fit", "--model", "ptm", "--input", str(src), "--no-progress", "--no-plots",
            "--devices", "1", "--sweeps", "3", "--num-topics", "3", "--num-pseudo-docs", "2"]
    assert main(base + ["--out", str(tmp_path / "o"), "--draw", "sparse"]) == 0
    assert jt.load(tmp_path / "o" / "model.jtm").params.draw == "sparse"
    capsys.readouterr()
    code = main(base + ["--out", str(tmp_path / "b"), "--draw", "sparse", "--sampler", "sequential"])
    assert code == 2 and "draw='sparse'" in capsys.readouterr().err
