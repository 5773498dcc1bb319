"""The sparse exact draw (``ops.sparse_draw``, issue 34 item 2) and LDA's ``draw`` setting.

(a) The law the draw implies equals (1) (``collapsed_topic_draw``'s) to float32 rounding on
random count tables, with and without the own token's exclusion, for an empty document, a
document of one token and K from 1 to 500; many draws of a few tokens pass a chi-square test
against the exact probabilities, and the same test rejects a wrong law (the own token left in).
(b) The LDA kernel with draw="sparse" passes the exact-enumeration test (in
test_lda_kernels.py: ``parallel-sparse``); here, with two of three documents longer than the members
cap (the dense fallback, in a chunk mixed with sparse tokens), the same enumeration at fewer
chains. (c) Same seed, same chain, bitwise. (d) "auto"'s choice and the setting's validation.

Statistical thresholds: each test's false-alarm rate <= FAMILY_ALPHA = 1e-3, Bonferroni-split
over its statistics; tolerances come from the number of draws.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from enumeration_stats import pooled_chisquare_p, tv, tv_bound
from jaxtopics import Corpus, LDA
from jaxtopics.errors import ParameterError
from jaxtopics.models import lda, lda_sparse
from jaxtopics.ops import (distinct_words, sparse_topic_draw, sparse_topic_weights, topic_groups,
                           word_group_table)

FAMILY_ALPHA = 1e-3


def _problem(seed: int, k: int, tokens: int, m: int, exclude_own: bool, empty: bool = False):
    """Random counts for `tokens` tokens: each one's document (its other tokens' topics, padded
    with -1 to m), word counts and topic totals that contain what they must."""
    rng = np.random.default_rng(seed)
    v = 7
    word = rng.integers(0, v, tokens).astype(np.int32)
    old = rng.integers(0, k, tokens).astype(np.int32)
    length = np.zeros(tokens, int) if empty else rng.integers(0, m + 1, tokens)
    members = np.full((tokens, m + 1), -1, np.int32)
    for i, n in enumerate(length):
        # few distinct topics in a document, as late in a chain (and some spread-out ones)
        pool = rng.integers(0, k, max(1, min(k, 3 if i % 2 else k)))
        members[i, :n] = rng.choice(pool, n)
    word_topic = rng.integers(0, 6, (v, k)).astype(np.int32)
    word_topic[word, old] += 1                      # the own token is counted where it sits
    topic = word_topic.sum(0) + rng.integers(0, 20, k)
    alpha = rng.uniform(0.05, 1.0, k).astype(np.float32)
    group = np.zeros((tokens, k), np.int32)
    for i in range(tokens):
        listed = members[i][members[i] >= 0]
        np.add.at(group[i], listed, 1)           # (before the token itself is listed, below)
        if exclude_own:
            group[i, old[i]] += 1
            if i % 3 == 0:                          # the token itself may be listed too
                members[i, m] = old[i]
    return dict(word=word, old=old, members=members, word_topic=word_topic, topic=topic,
                alpha=alpha, group=group, v=v)


def _exact(p, beta: float, exclude_own: bool) -> np.ndarray:
    """(1) in float64 numpy, normalised per token."""
    k = p["topic"].shape[0]
    own = (np.arange(k)[None, :] == p["old"][:, None]) & exclude_own
    w = ((p["group"] - own + p["alpha"][None, :].astype(np.float64))
         * (p["word_topic"][p["word"]] - own + beta)
         / (p["topic"][None, :] - own + p["v"] * beta))
    return w / w.sum(1, keepdims=True)


def _sparse_inputs(p, beta: float):
    words, slot = distinct_words(jnp.asarray(p["word"]), p["v"], p["v"])
    table = word_group_table(words, jnp.asarray(p["word_topic"]), jnp.asarray(p["topic"]),
                             jnp.asarray(p["alpha"]), beta, p["v"])
    own_count = p["group"][np.arange(len(p["old"])), p["old"]]
    return (jnp.asarray(p["members"]), jnp.asarray(own_count), jnp.asarray(p["word"]), slot,
            jnp.asarray(p["old"]),
            jnp.asarray(p["word_topic"]), jnp.asarray(p["topic"]), table,
            jnp.asarray(p["alpha"]), beta, p["v"])


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10, 17, 50, 500])
@pytest.mark.parametrize("exclude_own", [True, False])
@pytest.mark.parametrize("empty", [False, True])
def test_sparse_law_equals_the_collapsed_conditional(k, exclude_own, empty):
    beta = 0.05
    p = _problem(k + 31 * exclude_own + 7 * empty, k, tokens=64, m=9, exclude_own=exclude_own,
                 empty=empty)
    got = np.asarray(sparse_topic_weights(*_sparse_inputs(p, beta), exclude_own=exclude_own),
                     np.float64)
    assert np.all(got >= 0)
    got /= got.sum(1, keepdims=True)
    # float32 sums of at most M + K positive terms: relative error ~1e-6 of each probability,
    # absolute ~1e-7 (old's group less old's own share)
    np.testing.assert_allclose(got, _exact(p, beta, exclude_own), rtol=2e-5, atol=1e-6)


def test_word_table_and_distinct_words():
    rng = np.random.default_rng(3)
    word = jnp.asarray(rng.integers(0, 9, 40), jnp.int32)
    words, slot = distinct_words(word, 12, 99)
    distinct = np.unique(np.asarray(word))
    np.testing.assert_array_equal(np.asarray(words)[:len(distinct)], distinct)
    assert np.all(np.asarray(words)[len(distinct):] == 99)
    np.testing.assert_array_equal(np.asarray(words)[np.asarray(slot)], np.asarray(word))
    k = 23
    g, s = topic_groups(k)
    assert g * s >= k and (g - 1) * s < k + s
    wt = rng.integers(0, 5, (9, k))
    tt = wt.sum(0) + 3
    alpha = rng.uniform(0.1, 1, k)
    table = np.asarray(word_group_table(jnp.asarray(distinct), jnp.asarray(wt), jnp.asarray(tt),
                                        jnp.asarray(alpha, jnp.float32), 0.1, 9))
    q = alpha * (wt[distinct] + 0.1) / (tt + 0.9)
    want = np.stack([q[:, c::g].sum(1) for c in range(g)], 1)
    np.testing.assert_allclose(table, want, rtol=1e-5)


def _draw_counts(p, beta, n: int, exclude_own: bool, seed: int) -> np.ndarray:
    """n draws for each token of `p` (counts [tokens, K])."""
    inputs = _sparse_inputs(p, beta)
    tokens, k = p["group"].shape
    u = jax.random.uniform(jax.random.key(seed), (n, 2, tokens))
    draw = jax.jit(jax.vmap(lambda uu: sparse_topic_draw(uu, *inputs, exclude_own=exclude_own)))
    z = np.asarray(draw(u))
    return np.stack([np.bincount(z[:, i], minlength=k) for i in range(tokens)])


def test_sparse_draws_follow_the_exact_law_and_a_wrong_law_is_rejected():
    """Chi-square of 200k draws per token against (1); the negative control, the same draws
    against (1) with the own token left in the counts, is rejected. 6 tokens x 2 statistics at
    FAMILY_ALPHA / 12 each; the control's power is checked by design (its law differs by more
    than 10x the TV bound)."""
    beta, n, tokens, k = 0.05, 200_000, 6, 12
    p = _problem(11, k, tokens=tokens, m=5, exclude_own=True)
    p["members"][0] = -1                             # a document holding only the token
    p["group"][0] = 0
    p["group"][0, p["old"][0]] = 1
    counts = _draw_counts(p, beta, n, True, seed=5)
    exact = _exact(p, beta, True)
    wrong = _exact(p, beta, False)
    level = FAMILY_ALPHA / (2 * tokens)
    for i in range(tokens):
        assert pooled_chisquare_p(counts[i], exact[i]) > level, f"token {i}"
        assert tv(counts[i] / n, exact[i]) < tv_bound(exact[i], n, level)
    rejected = [pooled_chisquare_p(counts[i], wrong[i]) < level for i in range(tokens)
                if tv(wrong[i], exact[i]) > 10 * tv_bound(exact[i], n, level)]
    assert rejected and all(rejected)


# -- the LDA kernel ---------------------------------------------------------------------------

#: K=2, N=8 (256 states): two documents longer than the members cap of 2 set below, one not
_DOCS, _K, _ALPHA, _BETA = [[0, 1, 0], [2, 1], [1, 1, 2]], 2, 0.3, 0.2


def _corpus() -> Corpus:
    lengths = [len(d) for d in _DOCS]
    return Corpus.from_arrays(np.concatenate(_DOCS).astype(np.int32),
                              np.concatenate([[0], np.cumsum(lengths)]), ["a", "b", "c"])


def _posterior() -> np.ndarray:
    """The exact posterior over the K^N assignments (numpy, from the collapsed joint)."""
    from scipy.special import gammaln
    words = np.concatenate(_DOCS)
    docs = np.repeat(np.arange(len(_DOCS)), [len(d) for d in _DOCS])
    n, v = len(words), 3
    states = np.array(np.meshgrid(*[range(_K)] * n, indexing="ij")).reshape(n, -1).T
    lj = np.zeros(len(states))
    for s, z in enumerate(states):
        dt = np.zeros((len(_DOCS), _K))
        wt = np.zeros((v, _K))
        np.add.at(dt, (docs, z), 1)
        np.add.at(wt, (words, z), 1)
        lj[s] = (gammaln(dt + _ALPHA).sum() - gammaln(dt.sum(1) + _K * _ALPHA).sum()
                 + gammaln(wt + _BETA).sum() - gammaln(wt.sum(0) + v * _BETA).sum())
    post = np.exp(lj - lj.max())
    return states, post / post.sum()


def test_enumeration_with_the_dense_fallback(monkeypatch):
    """Members cap 2: the 3-token documents draw densely, the 2-token one sparsely, in one chunk
    (the fallback's lax.cond and select). 60k chains x 25 sweeps from a uniform start, one token
    per block (the blocked draw is then exact Gibbs); TV and chi-square at FAMILY_ALPHA / 2."""
    monkeypatch.setattr(lda_sparse, "MAX_MEMBERS", 2)
    corpus = _corpus()
    n = corpus.num_tokens
    params = lda.Params(_K, alpha=_ALPHA, beta=_BETA, num_blocks=n, draw="sparse")
    data = lda.prepare(corpus, params)
    chains = 60_000

    def run(key):
        k_init, k_run = jax.random.split(key)
        st = lda.init(k_init, data, params)
        return jax.lax.fori_loop(0, 25, lambda t, s: lda.sweep(jax.random.fold_in(k_run, t), s,
                                                             data, params)[0], st).z[:n]

    z = np.asarray(jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(7), chains)))
    states, post = _posterior()
    index = (z * (_K ** np.arange(n - 1, -1, -1))).sum(1)
    counts = np.bincount(index, minlength=len(post))
    assert pooled_chisquare_p(counts, post) > FAMILY_ALPHA / 2
    assert tv(counts / chains, post) < tv_bound(post, chains, FAMILY_ALPHA / 2)


def test_same_seed_same_chain_bitwise_and_dense_is_unchanged():
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 30, 15)
    words = rng.integers(0, 20, int(lengths.sum())).astype(np.int32)
    corpus = Corpus.from_arrays(words, np.concatenate([[0], np.cumsum(lengths)]),
                                [f"w{i}" for i in range(20)])
    runs = []
    for draw in ("sparse", "sparse", "dense"):
        model = LDA(7, num_blocks=5, draw=draw).fit(corpus, num_sweeps=6, seed=3)
        runs.append(np.asarray(model.doc_topic))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert (runs[0] != runs[2]).any()                 # another uniform stream, another chain


def test_auto_picks_by_backend_and_k_and_validation():
    data = lda.prepare(_corpus(), lda.Params(2))
    small, large = lda_sparse.CPU_MIN_TOPICS - 1, lda_sparse.CPU_MIN_TOPICS
    cpu = jax.default_backend() == "cpu"
    assert not lda_sparse.uses_sparse(lda.Params(small), data)
    assert lda_sparse.uses_sparse(lda.Params(large), data) == cpu
    # the padded document bucket: K must also reach CPU_TOPICS_PER_MEMBER x the longest document
    per = lda_sparse.CPU_TOPICS_PER_MEMBER
    for longest in (large // per, large // per + 1, lda_sparse.MAX_MEMBERS,
                    lda_sparse.MAX_MEMBERS + 1):
        shaped = lda.Data(**{**data.__dict__, "max_doc_len": longest})
        for k in (large, per * longest):
            expect = cpu and longest <= lda_sparse.MAX_MEMBERS and k >= max(large, per * longest)
            assert lda_sparse.uses_sparse(lda.Params(k), shaped) == expect, (longest, k)
    assert lda_sparse.uses_sparse(lda.Params(small, draw="sparse"), data)
    assert not lda_sparse.uses_sparse(lda.Params(large, draw="dense"), data)
    assert not lda_sparse.uses_sparse(lda.Params(large, mh_steps=2), data)
    assert not lda_sparse.uses_sparse(lda.Params(large, seed_words=((0, 1, 1.0),)), data)
    rotated = lda.Data(**{**data.__dict__, "word_groups": 2})
    assert not lda_sparse.uses_sparse(lda.Params(large), rotated)
    with pytest.raises(ParameterError, match="exchange='moves'"):
        lda_sparse.uses_sparse(lda.Params(large, draw="sparse"), rotated)
    with pytest.raises(ParameterError, match="draw must be one of"):
        lda.check_params(lda.Params(3, draw="fast"))
    with pytest.raises(ParameterError, match="draw='sparse'"):
        lda.check_params(lda.Params(3, draw="sparse", mh_steps=2))
    with pytest.raises(ParameterError, match="draw='sparse'"):
        lda.check_params(lda.Params(3, draw="sparse", sampler="sequential"))
    assert lda.check_params(lda.Params(3, draw="sparse")).draw == "sparse"
    # the default exchange: word rotation, or moves (which keeps z in corpus order) for sparse
    assert lda.check_params(lda.Params(3)).exchange == "rotate"
    assert lda.check_params(lda.Params(3, draw="auto")).exchange == "rotate"
    assert lda.check_params(lda.Params(3, draw="sparse")).exchange == "moves"
    assert lda.check_params(lda.Params(3, draw="sparse", exchange="rotate")).exchange == "rotate"


def test_cli_draw_option(tmp_path, capsys):
    """``jaxtopics fit --draw sparse`` fits and saves the setting; a bad value or a clash with
    ``--mh-steps`` is refused naming the flag."""
    import jaxtopics as jt
    from jaxtopics.cli import main

    src = tmp_path / "docs.txt"
    src.write_text("apples pears fruit apples\ncat mat hat cat\n" * 3, encoding="utf-8")
    base = ["fit", "--input", str(src), "--no-progress", "--devices", "1", "--sweeps", "3",
            "--num-topics", "2"]
    assert main(base + ["--out", str(tmp_path / "o"), "--draw", "sparse"]) == 0
    assert jt.load(tmp_path / "o" / "model.jtm").params.draw == "sparse"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(base + ["--out", str(tmp_path / "p"), "--draw", "fast"])
    assert exit_.value.code == 2 and "--draw" in capsys.readouterr().err
    # sharded by default (review: the default word rotation refused --draw sparse; its default
    # exchange is moves now), and resumed on another number of devices
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}

    def fresh(*args):                       # a process of its own: it picks its CPU devices
        return subprocess.run([sys.executable, "-m", "jaxtopics.cli", *args], env=env,
                              capture_output=True, text=True, timeout=300)
    sharded = [a for a in base if a not in ("--devices", "1")]
    done = fresh(*sharded, "--out", str(tmp_path / "s"), "--draw", "sparse", "--devices", "2")
    assert done.returncode == 0, done.stderr
    assert jt.load(tmp_path / "s" / "model.jtm").params.exchange == "moves"
    done = fresh("fit", "--input", str(src), "--out", str(tmp_path / "o"), "--resume",
                 "--devices", "2", "--sweeps", "2", "--no-progress")
    assert done.returncode == 0, done.stderr
    capsys.readouterr()
    assert main(base + ["--out", str(tmp_path / "q"), "--draw", "sparse", "--mh-steps", "2"]) == 2
    err = capsys.readouterr().err
    assert "draw='sparse'" in err and "mh_steps" in err.replace("--mh-steps", "mh_steps"), err
