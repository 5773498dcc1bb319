"""Exact split-merge moves of HDP topics (Jain & Neal 2004) for the sampler in ``jaxtopics.models.hdp``:
Metropolis-Hastings moves that split one topic in two or merge two, on the tokens' topics with
the tables summed out and the global topic weights pi drawn given the tables, followed by a fresh
draw of the seating of the changed topics (equations SM1-SM9 in `_split_merge`); sharded like
the rest of the sampler (``axis_name``), with the global draws keyed alike on every shard. Also
home to two small helpers the sampler shares with these moves (`_real`, `_nth_free`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array
from jax.scipy.special import gammaln

from ..ops import (count_table, gather_materialised, log_gamma, materialised, shard_prefix,
                   shard_sum, uniform_integer)

if TYPE_CHECKING:
    from .hdp import Data, Params, State

_EPS = 1e-6          # split proposals draw v ~ U(eps, 1 - eps)
_SCANS = 2           # intermediate restricted Gibbs scans of a split-merge launch state
_CANDIDATES = 256    # uniform tokens tried for an anchor b of a's topic (`_choose_pair`)
_F32 = jnp.float32


# --------------------------------------------------------------------------------------------
# collectives of the sharded kernel (``axis_name=None``, one device: identities)


def _real(data: Data, dummy: bool = False) -> Array:
    """[N] (with `dummy` [N+1]) mask of the real tokens: all but a shard's padding tokens
    (``pad_shard``: they follow the real ones, which the documents' lengths count)."""
    n = data.word.shape[0] - (0 if dummy else 1)
    return jnp.arange(n) < jnp.sum(data.doc_len)


# --------------------------------------------------------------------------------------------
# table step (T) helper


def _nth_free(free_cum: Array, rank: Array) -> Array:
    """Index of the (rank+1)-th free slot given the inclusive running count of free slots along
    the last axis (= the axis length when there are not that many)."""
    return jnp.sum(free_cum <= rank[..., None], axis=-1, dtype=jnp.int32)


# --------------------------------------------------------------------------------------------
# split-merge of whole topics (exact Metropolis-Hastings on the tokens, tables integrated out;
# the move and its equations (SM1) .. (SM9): `_split_merge`)


def _dm_words(counts: Array, beta: float) -> Array:
    """log DirMult evidence of one topic's word counts [V]: sum_w log beta^(n_w) - log (V beta)^(n)."""
    v = counts.shape[0]
    counts = counts.astype(_F32)
    return (jnp.sum(gammaln(counts + beta)) - v * gammaln(jnp.float32(beta))
            - gammaln(jnp.sum(counts) + v * beta) + gammaln(jnp.float32(v * beta)))


class _Tokens(NamedTuple):
    """The tokens as the split-merge moves see them (the dummy slot dropped). doc, word,
    doc_word: [N]; real: [N] not a shard's padding; tok: [N] global token number (shard order;
    padding -1); n_all: the number of tokens over all shards (one device: the int N).
    num_docs, num_words: D, V; axis_name: the shard axis (None: one device)."""

    doc: Array
    word: Array
    doc_word: Array
    real: Array
    tok: Array
    n_all: Array | int
    num_docs: int
    num_words: int
    axis_name: str | None
    num_pairs: int = 0        # bound of the doc_word ids (0: N, the token arrays' length)


class _Move(NamedTuple):
    """One attempt's proposal (SM3, SM4). ra, rb: the anchors a, b (global token numbers);
    ka, kb: their topics; split: ka == kb (a split of topic ka, else the merge of kb into ka);
    member: [N] the tokens S of the two topics, anchors excluded; anchors: [N] a and b;
    da, db: the anchors' documents (sharded: -1 on the shards without the anchor);
    log_pa, log_pb: log pi_A, log pi_B of the split state; c_a, c_b: alpha pi_A, alpha pi_B."""

    ra: Array
    rb: Array
    ka: Array
    kb: Array
    split: Array
    member: Array
    anchors: Array
    da: Array
    db: Array
    log_pa: Array
    log_pb: Array
    c_a: Array
    c_b: Array


class _Units(NamedTuple):
    """The units the launch and the scans allocate: the tokens of S in one document (the same
    units before and after the move, whatever the split). size: [D] n_u, the unit's tokens;
    word: [N] c_uw, the unit's tokens of the token's word; in_a, in_b: [D] 1 in the document
    of anchor a (b), else 0 (the anchor's share of its document's group count)."""

    size: Array
    word: Array
    in_a: Array
    in_b: Array


def _global_tokens(data: Data, num_docs: int, num_words: int, axis_name: str | None) -> _Tokens:
    """The tokens, numbered over all shards in shard order (one device: 0 .. N-1)."""
    n = data.word.shape[0] - 1
    doc, word = data.doc[:n], data.word[:n]
    real = _real(data)
    if axis_name is None:
        n_all, tok = n, jnp.arange(n)
    else:
        before, n_all, _ = shard_prefix(jnp.sum(data.doc_len, dtype=jnp.int32)[None], axis_name)
        n_all, tok = n_all[0], jnp.where(real, before[0] + jnp.arange(n), -1)
    return _Tokens(doc, word, data.doc_word, real, tok, n_all, num_docs, num_words, axis_name)


def _token_at(x: Array, r: Array, tk: _Tokens) -> Array:
    """x [N] at global token r (the same value on every shard)."""
    if tk.axis_name is None:
        return x[r]
    return jax.lax.psum(jnp.sum(jnp.where(tk.tok == r, x, 0)), tk.axis_name)


def _doc_of(r: Array, tk: _Tokens) -> Array:
    """The document of global token r on the shard holding it, -1 on the others."""
    if tk.axis_name is None:
        return tk.doc[r]
    mine = tk.tok == r
    return jnp.where(jnp.any(mine), tk.doc[jnp.argmax(mine)], -1)


def _group_counts(sel: Array, tk: _Tokens) -> tuple[Array, Array, Array]:
    """(words [V], documents [D], total) of the tokens `sel` [N]: the words and the total over
    all shards (one psum), the documents this shard's."""
    w = sel.astype(jnp.int32)
    words, total = jnp.zeros(tk.num_words, jnp.int32).at[tk.word].add(w), jnp.sum(w)
    if tk.axis_name is not None:
        both = jax.lax.psum(jnp.append(words, total), tk.axis_name)
        words, total = both[:tk.num_words], both[tk.num_words]
    return words, jnp.zeros(tk.num_docs, jnp.int32).at[tk.doc].add(w), total


def _log_f(n_w: Array, n: Array, beta: float, vb: float) -> Array:
    """log f(w) = log (n_w + beta) - log (n + V beta), the predictive of a word given a group's
    count n_w of it and its n tokens (`vb` = V beta)."""
    return jnp.log(n_w.astype(_F32) + beta) - jnp.log(n.astype(_F32) + vb)


def _log_doc_terms(n_d: Array, log_p: Array, alpha: Array, axis_name: str | None) -> Array:
    """sum_d log (alpha pi)^(n_d) of SM2 for one topic of weight pi, its tokens per document
    n_d [D]; over all shards."""
    c = alpha * jnp.exp(log_p)
    return shard_sum(jnp.sum(gammaln(c + n_d.astype(_F32))) - n_d.shape[0] * gammaln(c), axis_name)


def _draw_log_pi(key: Array, st: State) -> Array:
    """(SM1) log pi [K], pi | tables ~ Dirichlet(m_1, ..., m_K, gamma): -inf at the free
    topics; pi_u (the weight of the topics not yet used) is 1 - sum_k pi_k."""
    m = st.topic_tables
    used = m > 0
    g = log_gamma(key, jnp.append(jnp.maximum(m, 1).astype(_F32), st.gamma))
    g, g_u = jnp.where(used, g[:-1], -jnp.inf), g[-1]
    norm = jnp.logaddexp(jax.scipy.special.logsumexp(g), g_u)
    return g - norm


def _choose_pair(key: Array, z: Array, tk: _Tokens) -> tuple[Array, Array]:
    """(SM3) The anchors a, b (global token numbers): a uniform; b uniform among the other
    tokens of a's topic with probability 1/2 (when it has others), else among all other
    tokens. Sharded: the ranks over all shards, the same on every shard. b of a's topic is
    first looked for among `_CANDIDATES` uniform tokens (the first that is of a's topic and
    not a: uniform among those, whichever candidates hit); only when none is, it is the r-th
    such token found by a running count over all N (uniform too, so b's law is the same,
    without the O(N) prefix sum in most attempts)."""
    k_a, k_b, k_half, k_cand = jax.random.split(key, 4)
    ra = uniform_integer(k_a, tk.n_all)
    ka = _token_at(z, ra, tk)
    same = (z == ka) & tk.real
    rb_any = uniform_integer(k_b, tk.n_all - 1)
    rb_any = rb_any + (rb_any >= ra)
    stats = jnp.stack([jnp.sum(same, dtype=jnp.int32), jnp.sum(same & (tk.tok < ra), dtype=jnp.int32)])
    same_before, stats, _ = shard_prefix(stats, tk.axis_name)
    n_same = stats[0]                                   # tokens of a's topic, a included
    want_same = (jax.random.uniform(k_half) < 0.5) & (n_same > 1)

    def by_rank():                                      # the r-th other token of a's topic
        r_same = uniform_integer(k_b, n_same - 1)
        r_same = r_same + (r_same >= stats[1])
        rb = jnp.searchsorted(jnp.cumsum(same, dtype=jnp.int32) + same_before[0], r_same + 1,
                              side="left").astype(jnp.int32)
        if tk.axis_name is not None:                    # the shard holding it: its number
            found = (same_before[0] <= r_same) & (r_same < same_before[0] + jnp.sum(same))
            last = tk.tok.shape[0] - 1
            rb = jax.lax.psum(jnp.where(found, tk.tok[jnp.minimum(rb, last)], 0), tk.axis_name)
        return rb

    cand = uniform_integer(k_cand, tk.n_all, (_CANDIDATES,))
    if tk.axis_name is None:
        z_cand = z[cand]
    else:                          # the shard holding a candidate (its real tokens are numbered
        local = cand - tk.tok[0]   # from tok[0] on) gives its topic, the others 0
        at = jnp.clip(local, 0, z.shape[0] - 1)
        mine = (local >= 0) & (local < z.shape[0]) & tk.real[at]
        z_cand = jax.lax.psum(jnp.where(mine, z[at], 0), tk.axis_name)
    hit = (z_cand == ka) & (cand != ra)
    first = cand[jnp.argmax(hit)].astype(jnp.int32)
    rb_same = jax.lax.cond(want_same & ~jnp.any(hit), by_rank, lambda: first)
    rb = jnp.where(want_same, rb_same, rb_any).astype(jnp.int32)
    return ra, rb


def _propose(key: Array, z: Array, log_pi: Array, ra: Array, rb: Array, alpha: Array,
             tk: _Tokens) -> _Move:
    """(SM4) The move anchors a, b propose: a split of their topic k = ka = kb into A (a's
    group) and B (b's) with pi_A = v pi_k, pi_B = (1 - v) pi_k, v ~ U(eps, 1 - eps); or, for
    two topics, their merge (pi_A = pi_ka, pi_B = pi_kb the present split)."""
    ka, kb = _token_at(z, ra, tk), _token_at(z, rb, tk)
    split = ka == kb
    member = ((z == ka) | (z == kb)) & (tk.tok != ra) & (tk.tok != rb) & tk.real
    frac = jax.random.uniform(key, minval=_EPS, maxval=1.0 - _EPS)
    log_pa = jnp.where(split, log_pi[ka] + jnp.log(frac), log_pi[ka])
    log_pb = jnp.where(split, log_pi[ka] + jnp.log1p(-frac), log_pi[kb])
    c_a, c_b = alpha * jnp.exp(log_pa), alpha * jnp.exp(log_pb)
    anchors = (tk.tok == ra) | (tk.tok == rb)
    da, db = _doc_of(ra, tk), _doc_of(rb, tk)
    return _Move(ra, rb, ka, kb, split, member, anchors, da, db, log_pa, log_pb, c_a, c_b)


def _launch_round(c: tuple, tok_round: Array, u_unit: Array, tk: _Tokens, beta: float,
                  vb: float) -> tuple:
    """(SM5) One round j of the launch: its units, at once, to A or B given the groups so far;
    c = (j, words of A [V], n_A, words of B [V], n_B, [N] in B) -> the next round's. The log
    predictives are taken per word and gathered (V logs, not N), and the round's tokens
    counted into both groups by one scatter."""
    j, wa, na, wb, nb, in_b = c
    now = tok_round == j
    fit = gather_materialised(_log_f(wb, nb, beta, vb) - _log_f(wa, na, beta, vb), tk.word)
    diff = jax.ops.segment_sum(jnp.where(now, fit, 0.0), tk.doc, num_segments=tk.num_docs)
    unit_b = jnp.log(u_unit) < jax.nn.log_sigmoid(diff)
    to_b = now & gather_materialised(unit_b, tk.doc)
    v = tk.num_words
    counts = jnp.zeros(2 * v + 2, jnp.int32).at[
        jnp.where(now, tk.word + v * to_b, 2 * v + to_b)].add(now.astype(jnp.int32))
    counts = counts.at[2 * v].set(jnp.sum(now & ~to_b, dtype=jnp.int32)).at[2 * v + 1].set(
        jnp.sum(now & to_b, dtype=jnp.int32))
    if tk.axis_name is not None:
        counts = jax.lax.psum(counts, tk.axis_name)
    return (j - 1, wa + counts[:v], na + counts[2 * v], wb + counts[v:2 * v],
            nb + counts[2 * v + 1], in_b | to_b)


def _launch_state(key_round: Array, key_unit: Array, mv: _Move, tk: _Tokens, beta: float,
                  vb: float, max_round: int) -> Array:
    """(SM5) The launch state [N] (True: group B), drawn from S and the anchors only. The
    units of the anchors' documents start A and B with the anchors; the other units are
    allocated by sequential allocation in rounds: each unit draws its round floor(-log2 U)
    (at most `max_round`), the rounds are visited from the highest down, a round's units
    allocated at once (O(log N) vectorised rounds, not one step per unit)."""
    d_cap = tk.num_docs
    unit_round = jnp.clip(jnp.floor(-jnp.log2(1.0 - jax.random.uniform(key_round, (d_cap,)))), 0,
                          max_round).astype(jnp.int32)
    unit_round = jnp.where((jnp.arange(d_cap) == mv.da) | (jnp.arange(d_cap) == mv.db), -1,
                           unit_round)
    seed_b = (mv.member & (tk.doc == mv.db) & (mv.db != mv.da)) | (tk.tok == mv.rb)
    seed_a = ((mv.member & (tk.doc == mv.da)) | (tk.tok == mv.ra)) & ~seed_b
    u_unit = jax.random.uniform(key_unit, (d_cap,))
    in_unit = mv.member & ~seed_a & ~seed_b
    tok_round = jnp.where(in_unit, gather_materialised(unit_round, tk.doc), -1)
    ga, gb = _group_counts(seed_a, tk), _group_counts(seed_b, tk)
    first = jnp.max(tok_round)
    first = first if tk.axis_name is None else jax.lax.pmax(first, tk.axis_name)
    init = (first, ga[0], ga[2], gb[0], gb[2], seed_b)
    body = lambda c: _launch_round(c, tok_round, u_unit, tk, beta, vb)   # noqa: E731
    return jax.lax.while_loop(lambda c: c[0] >= 0, body, init)[-1]


def _units(mv: _Move, tk: _Tokens) -> _Units:
    """The units of S: their sizes, their word counts at each token, the anchors' documents."""
    d_cap = tk.num_docs
    size = jax.ops.segment_sum(mv.member.astype(jnp.int32), tk.doc, num_segments=d_cap)
    word = jax.ops.segment_sum(mv.member.astype(jnp.int32), tk.doc_word,
                               num_segments=tk.num_pairs or tk.doc.shape[0])[tk.doc_word]
    return _Units(size, word, (jnp.arange(d_cap) == mv.da).astype(jnp.int32),
                  (jnp.arange(d_cap) == mv.db).astype(jnp.int32))


def _scan_log_odds(in_b: Array, mv: _Move, un: _Units, tk: _Tokens, beta: float,
                   vb: float) -> Array:
    """(SM6) log p(u -> B) / p(u -> A) [D] of every unit u given the others' groups (the unit
    taken out of its group: its c_uw words of each w, its n_u tokens)."""
    group = mv.member | mv.anchors
    wa, _, na = _group_counts(group & ~in_b, tk)
    wb, _, nb = _group_counts(group & in_b, tk)
    in_b_doc = jax.ops.segment_sum((mv.member & in_b).astype(jnp.int32), tk.doc,
                                   num_segments=tk.num_docs) > 0
    # per token the counts with its unit taken out of its group and per document the groups'
    # sizes, each materialised before its log (`ops.gather_materialised`, `ops.materialised`):
    # the same values
    own_b = gather_materialised(in_b_doc, tk.doc)
    cnt_a = materialised(wa[tk.word] - jnp.where(own_b, 0, un.word))
    cnt_b = materialised(wb[tk.word] - jnp.where(own_b, un.word, 0))
    den_a = gather_materialised(
        jnp.log((na - jnp.where(in_b_doc, 0, un.size)).astype(_F32) + vb), tk.doc)
    den_b = gather_materialised(
        jnp.log((nb - jnp.where(in_b_doc, un.size, 0)).astype(_F32) + vb), tk.doc)
    fit_a = jnp.log(cnt_a.astype(_F32) + beta) - den_a        # `_log_f` of those counts
    fit_b = jnp.log(cnt_b.astype(_F32) + beta) - den_b
    size = un.size.astype(_F32)
    a_, b_ = un.in_a + mv.c_a, un.in_b + mv.c_b
    return (jax.ops.segment_sum(jnp.where(mv.member, fit_b - fit_a, 0.0), tk.doc,
                                num_segments=tk.num_docs)
            + gammaln(b_ + size) - gammaln(b_) - gammaln(a_ + size) + gammaln(a_))


def _restricted_scan(key: Array, in_b: Array, z: Array, mv: _Move, un: _Units, tk: _Tokens,
                     beta: float, vb: float, final: Array) -> tuple[Array, Array]:
    """(SM6) One restricted Gibbs scan: every unit re-allocated at once from `_scan_log_odds`.
    Returns the new allocation [N] and log q, the log probability of the units' draws. The
    `final` scan (a traced flag: one compiled scan serves all) of a merge is not drawn but set
    to the present split, q its probability (0 unless each unit lies in one of the two
    topics)."""
    diff = _scan_log_odds(in_b, mv, un, tk, beta, vb)
    log_b, log_a = jax.nn.log_sigmoid(diff), jax.nn.log_sigmoid(-diff)
    unit_b = jnp.log(jax.random.uniform(key, (tk.num_docs,))) < log_b
    present = jax.ops.segment_sum((mv.member & (z == mv.kb)).astype(jnp.int32), tk.doc,
                                  num_segments=tk.num_docs)
    coherent = jnp.all((present == 0) | (present == un.size))
    if tk.axis_name is not None:
        coherent = jax.lax.psum(1 - coherent.astype(jnp.int32), tk.axis_name) == 0
    unit_b = jnp.where(final & ~mv.split, present > 0, unit_b)
    to_b = jnp.where(mv.member, gather_materialised(unit_b, tk.doc), in_b)
    logq = shard_sum(jnp.sum(jnp.where(un.size > 0, jnp.where(unit_b, log_b, log_a), 0.0)),
                     tk.axis_name)
    return to_b, jnp.where(final & ~(mv.split | coherent), -jnp.inf, logq)


def _log_split_ratio(in_b: Array, mv: _Move, tk: _Tokens, alpha: Array, gamma: Array,
                     beta: float) -> tuple[Array, Array, tuple, tuple]:
    """(SM7) log p(split) pi_k / p(merged) for the split `in_b` of the pair's tokens (prior,
    document terms, word evidence and the Jacobian pi_k of (pi_k, v) -> (pi_A, pi_B)).
    Returns it, log pi_k = log (pi_A + pi_B), and the (words, total) of A and of B."""
    group = mv.member | mv.anchors
    return _log_ratio_of_counts(_group_counts(group & ~in_b, tk), _group_counts(group & in_b, tk),
                                mv, tk, alpha, gamma, beta)


def _log_ratio_of_counts(group_a: tuple, group_b: tuple, mv: _Move, tk: _Tokens, alpha: Array,
                         gamma: Array, beta: float) -> tuple[Array, Array, tuple, tuple]:
    """`_log_split_ratio` given the (words [V], documents [D], total) of A and of B."""
    (wa, da, na), (wb, db, nb) = group_a, group_b
    log_pk = jnp.logaddexp(mv.log_pa, mv.log_pb)
    log_ratio = (jnp.log(gamma) + 2.0 * log_pk - mv.log_pa - mv.log_pb        # prior, Jacobian
                 + _log_doc_terms(da, mv.log_pa, alpha, tk.axis_name)
                 + _log_doc_terms(db, mv.log_pb, alpha, tk.axis_name)
                 - _log_doc_terms(da + db, log_pk, alpha, tk.axis_name)
                 + _dm_words(wa, beta) + _dm_words(wb, beta) - _dm_words(wa + wb, beta))
    return log_ratio, log_pk, (wa, na), (wb, nb)


def _merge_refused_anyway(log_u: Array, mv: _Move, z: Array, word_topic: Array, topic: Array,
                          tk: _Tokens, alpha: Array, gamma: Array, beta: float) -> Array:
    """Whether a merge is refused whatever its proposal (SM5, SM6) turns out: its log
    acceptance is log q + X (SM8) with log q <= 0 and X given by the present split alone (A,
    B: the tokens of ka and of kb, counted in word_topic, topic and per document), so
    log u >= X refuses it. The same decision as the full attempt (rounding is monotone), with
    one pass over the tokens instead of the launch and the scans."""
    docs = jax.ops.segment_sum(jnp.stack([z == mv.ka, z == mv.kb], 1).astype(jnp.int32)
                               * tk.real[:, None], tk.doc, num_segments=tk.num_docs)
    group_a = (word_topic[:, mv.ka], docs[:, 0], topic[mv.ka])
    group_b = (word_topic[:, mv.kb], docs[:, 1], topic[mv.kb])
    log_ratio, log_pk, _, _ = _log_ratio_of_counts(group_a, group_b, mv, tk, alpha, gamma, beta)
    bound = _log_acceptance(mv, log_ratio, jnp.float32(0.0), log_pk, group_a[2], group_b[2],
                            tk.n_all)
    return ~(log_u < bound)


def _log_acceptance(mv: _Move, log_ratio: Array, logq: Array, log_pk: Array, na: Array,
                    nb: Array, n_all: Array | int) -> Array:
    """(SM8) The log MH acceptance ratio of the move (before min(0, .)), a split's or a
    merge's: SM7, q of SM6, the density of v and the pair selection of SM3."""
    # v ~ U(eps, 1 - eps): density 1 / (1 - 2 eps); a merge whose v lies outside could not
    # have been proposed by a split, so it is refused
    log_qv = jnp.log1p(-2 * _EPS)
    v_back = jnp.exp(mv.log_pa - log_pk)
    # pair selection, log q_sel(a, b | split state) - log q_sel(a, b | merged state): split,
    # b is reached only by the "any" branch (taken always when a is alone in A); merged,
    # by both (a's topic then holds n_A + n_B >= 2 tokens)
    log_sel = (jnp.log(jnp.where(na > 1, 0.5, 1.0) / (n_all - 1))
               - jnp.log(0.5 / (na + nb - 1) + 0.5 / (n_all - 1)))
    return jnp.where(mv.split, log_ratio - logq + log_qv + log_sel,
                     jnp.where((v_back >= _EPS) & (v_back <= 1 - _EPS),
                               logq - log_ratio - log_qv - log_sel, -jnp.inf))


def _apply_move(c: tuple, mv: _Move, in_b: Array, kb_new: Array, group_a: tuple,
                group_b: tuple, log_pk: Array, real: Array) -> tuple:
    """(SM9) An accepted move on c = (z, word_topic, topic, log_pi, changed): a split moves
    group B to the free topic kb_new, a merge topic kb into ka; counts and pi follow and both
    topics are marked changed (their tables are re-seated after the attempts)."""
    z, word_topic, topic, log_pi, changed = c
    (wa, na), (wb, nb) = group_a, group_b
    split, ka, kb = mv.split, mv.ka, mv.kb
    moved = jnp.where(split, in_b, z == kb) & real
    sa = jnp.where(split, 1, 0)
    return (jnp.where(moved, jnp.where(split, kb_new, ka), z),
            word_topic.at[:, ka].set(jnp.where(split, wa, wa + wb)).at[:, kb_new].set(wb * sa),
            topic.at[ka].set(jnp.where(split, na, na + nb)).at[kb_new].set(nb * sa),
            log_pi.at[ka].set(jnp.where(split, mv.log_pa, log_pk))
            .at[kb_new].set(jnp.where(split, mv.log_pb, -jnp.inf)),
            changed.at[ka].set(True).at[kb_new].set(True))


def _compact_proposal(proposal, mv: _Move, tk: _Tokens, z: Array, cap: int) -> tuple:
    """`proposal(mv, tk, z)` on the pair's tokens only (S and the anchors: SM5-SM7 read no
    other token) when every shard holds at most `cap` of them, gathered into [cap] arrays
    (padding: in no group, counted nowhere; one running count places them), the split
    scattered back to [N]; else on all tokens. The same draws either way (they are per
    document) and the same integer counts: the same move, ~N / cap times cheaper for a pair
    of small topics. Returns (in_b [N], what `proposal` returns besides its split)."""
    n = z.shape[0]
    group = mv.member | mv.anchors
    at_rank = jnp.cumsum(group, dtype=jnp.int32) - 1
    over = shard_sum((at_rank[-1] >= cap).astype(jnp.int32), tk.axis_name)

    def small(_):
        idx = jnp.full(cap, n, jnp.int32).at[jnp.where(group, at_rank, cap)].set(
            jnp.arange(n, dtype=jnp.int32), mode="drop")
        ok = idx < n
        at = jnp.minimum(idx, n - 1)
        sub = tk._replace(doc=tk.doc[at], word=tk.word[at], doc_word=tk.doc_word[at],
                          real=tk.real[at] & ok, tok=jnp.where(ok, tk.tok[at], -1),
                          num_pairs=tk.num_pairs or n)
        in_b, *rest = proposal(mv._replace(member=mv.member[at] & ok,
                                           anchors=mv.anchors[at] & ok), sub, z[at])
        return (jnp.zeros(n, bool).at[idx].set(in_b & ok, mode="drop"), *rest)

    return jax.lax.cond(over == 0, small, lambda _: proposal(mv, tk, z), None)


def _attempt(i: Array, carry: tuple, k_att: Array, k_local: Array, tk: _Tokens,
             conc: tuple[Array, Array], params: Params, max_round: int,
             compact: int | None = None, bound_merges: bool = True) -> tuple:
    """Split-merge attempt i: choose the pair (SM3), propose (SM4), launch (SM5), scan (SM6),
    accept (SM7, SM8), apply (SM9). carry = (z [N], word_topic, topic, log_pi, changed [K],
    accepted, overflow); conc = (alpha, gamma); a split without a free topic is refused and
    reported as overflow. `bound_merges`: a merge that `_merge_refused_anyway` refuses skips
    SM5 and SM6 (the same moves, tested)."""
    z, word_topic, topic, log_pi, changed, accepted, overflow = carry
    alpha, gamma = conc
    beta, vb = params.beta, params.beta * tk.num_words
    k1, _, _, _, k5, k6 = jax.random.split(jax.random.fold_in(k_att, i), 6)     # shared draws
    _, _, k3, k4, _, _ = jax.random.split(jax.random.fold_in(k_local, i), 6)    # per shard
    ra, rb = _choose_pair(k1, z, tk)
    mv = _propose(k5, z, log_pi, ra, rb, alpha, tk)
    def proposal(mv, tk, z):                       # SM5, SM6: the split proposed, log q; SM7
        in_b = _launch_state(k3, jax.random.fold_in(k4, 0), mv, tk, beta, vb, max_round)
        un = _units(mv, tk)

        def scan(r, c):            # _SCANS intermediate scans (q unused), then the proposal
            return _restricted_scan(jax.random.fold_in(k4, r + 1), c[0], z, mv, un, tk, beta,
                                    vb, r == _SCANS)
        in_b, logq = jax.lax.fori_loop(0, _SCANS + 1, scan, (in_b, jnp.float32(0.0)))
        return (in_b, logq) + _log_split_ratio(in_b, mv, tk, alpha, gamma, beta)

    def propose(_):
        if compact is None:
            return proposal(mv, tk, z)
        return _compact_proposal(proposal, mv, tk, z, compact)

    def refused(_):                                # the proposal not drawn: log q = -inf
        words = jnp.zeros(word_topic.shape[0], jnp.int32)
        return (jnp.zeros(z.shape[0], bool), jnp.float32(-jnp.inf), jnp.float32(0.0),
                jnp.logaddexp(mv.log_pa, mv.log_pb), (words, topic[mv.ka]), (words, topic[mv.kb]))

    log_u = jnp.log(jax.random.uniform(k6))
    skip = jnp.bool_(False)
    if bound_merges:
        skip = jax.lax.cond(mv.split, lambda: jnp.bool_(False), lambda: _merge_refused_anyway(
            log_u, mv, z, word_topic, topic, tk, alpha, gamma, beta))
    in_b, logq, log_ratio, log_pk, group_a, group_b = jax.lax.cond(skip, refused, propose, None)
    log_accept = _log_acceptance(mv, log_ratio, logq, log_pk, group_a[1], group_b[1], tk.n_all)
    accept = log_u < log_accept
    free = topic == 0
    no_room = accept & mv.split & ~jnp.any(free)
    accept = accept & ~no_room
    kb_new = jnp.where(mv.split, jnp.argmax(free), mv.kb)
    z, word_topic, topic, log_pi, changed = jax.lax.cond(
        accept, lambda c: _apply_move(c, mv, in_b, kb_new, group_a, group_b, log_pk, tk.real),
        lambda c: c, (z, word_topic, topic, log_pi, changed))
    return (z, word_topic, topic, log_pi, changed, accepted + accept.astype(jnp.int32),
            overflow | no_room)


def _split_merge(key: Array, st: State, data: Data, params: Params, attempts: int,
                 axis_name: str | None = None, shared: Array | None = None
                 ) -> tuple[State, Array, Array]:
    """`attempts` split-merge moves of whole topics, each an exact Metropolis-Hastings step
    (Jain & Neal 2004), then a fresh draw of the seating of the topics they changed. Returns
    (state, moves accepted, overflow).

    The moves act on the CRF augmented with the global topic weights pi = (pi_1 .. pi_K, pi_u)
    (Teh et al. 2006, sec. 5.2), on the tokens' topics z with the seating summed out:

    (SM1) pi | tables ~ Dirichlet(m_1, ..., m_K, gamma) (Teh et al. 2006: the posterior of G_0),
          drawn once for all the attempts (`_draw_log_pi`).
    (SM2) Given pi, p(w, t, k) Dir(pi | m, gamma) summed over the seatings (those of n tokens
          in a CRP(c) sum to c^(n), rising factorials) is
            p(w, z, pi) = gamma^K pi_u^(gamma-1) prod_k pi_k^-1
                          prod_j prod_k (alpha pi_k)^(n_jk) / alpha^(n_j)  x  prod_k DirMult(n_k.)
          (DirMult(n_k.) the words' evidence of topic k, `_dm_words`).
    (SM3) The pair (`_choose_pair`): token a uniform; b uniform among the other tokens of a's
          topic with probability 1/2 (when it has others), else among all other tokens. The
          ratio of these probabilities in the split and the merged state enters SM8.
    (SM4) Same topic k: propose to split it (`_propose`), pi_A = v pi_k, pi_B = (1 - v) pi_k,
          v ~ U(eps, 1 - eps) (Jacobian pi_k), a starts group A and b group B. Different
          topics: propose the merge, pi_k = pi_A + pi_B. S: the other tokens of the pair's
          topics, moved in units (the tokens of S in one document).
    (SM5) Launch state (Jain & Neal 2004; `_launch_state`), drawn from S and the anchors only:
          the anchors' documents' units seed A and B, the others are allocated by sequential
          allocation (Dahl 2003) to B with probability
            sigmoid(sum_{i in u} log f_B(w_i) - log f_A(w_i)),  f_G(w) = (n_Gw + beta) / (n_G + V beta)
          given the groups so far, in rounds (O(log N) vectorised rounds); then _SCANS
          restricted Gibbs scans (SM6).
    (SM6) Restricted Gibbs scan (`_restricted_scan`): every unit u (document d) at once, given
          the others, to B with probability sigmoid(x),
            x = sum_{i in u} log f_B^-u(w_i) - log f_A^-u(w_i)
                + log (s_dB + alpha pi_B)^(n_u) - log (s_dA + alpha pi_A)^(n_u)
          (s_dG = 1 if the anchor of G is in d). The proposal is one more scan, q its
          probability; a merge's q is that of the final scan giving the present split.
    (SM7) From SM2 (`_log_split_ratio`), with the Jacobian:
            p(split) pi_k / p(merged) = gamma pi_k^2 / (pi_A pi_B)
                prod_d (alpha pi_A)^(n_dA) (alpha pi_B)^(n_dB) / (alpha pi_k)^(n_dk)
                x DirMult(n_A.) DirMult(n_B.) / DirMult(n_k.)
    (SM8) Accepted (`_log_acceptance`) with probability min(1, R) for a split and
          min(1, 1 / R) for a merge, R = SM7 (1 - 2 eps) q_sel(split) / (q q_sel(merged))
          (a merge whose v = pi_A / pi_k lies outside (eps, 1 - eps) is refused; a merge that
          its present split refuses even with q = 1 skips SM5, SM6: `_merge_refused_anyway`).
    (SM9) Applied (`_apply_move`); after the attempts the tables of the changed topics are
          emptied and their tokens seated from the exact conditional p(t | z, pi): a
          CRP(alpha pi_k) per document and topic (`_reseat`).
    A split needs a free topic and new tables free slots: running out is reported as overflow.

    Sharded (`axis_name`): the same moves over the whole corpus. Tokens are numbered globally
    (shard order), the anchors drawn among all N tokens; every sum over tokens or documents
    (word and topic counts of the groups, the document terms, log q) is summed over the shards;
    pi, the anchors, v and the acceptances are drawn from `shared` (the same key on every shard),
    the per-document launch and scan draws from the shard's own `key`. Each shard moves its own
    tokens; the global tables get the same new columns everywhere. ~30 small collectives per
    attempt (psums of [V + 1] counts, scalars).
    """
    n = data.word.shape[0] - 1
    k_pi, k_att, _ = jax.random.split(key if shared is None else shared, 3)
    _, k_local, k_seat = jax.random.split(key, 3)
    log_pi = _draw_log_pi(k_pi, st)
    z, word_topic, topic, log_pi, changed, accepted, overflow = split_merge_moves(
        k_att, k_local, st.z[:n], st.word_topic, st.topic, log_pi, (st.alpha, st.gamma), data,
        params, attempts, st.table_count.shape[0], axis_name)
    st = st._replace(z=jnp.append(z, 0), word_topic=word_topic, topic=topic)
    st, of_seat = jax.lax.cond(jnp.any(changed),            # `changed`: equal on every shard
                               lambda s: _reseat(k_seat, s, data, changed, log_pi, axis_name),
                               lambda s: (s, jnp.bool_(False)), st)
    return st, accepted, overflow | of_seat


def split_merge_moves(k_att: Array, k_local: Array, z: Array, word_topic: Array, topic: Array,
                      log_pi: Array, conc: tuple[Array, Array], data: Data, params: Params,
                      attempts: int, num_docs: int, axis_name: str | None = None,
                      launch_rounds: int | None = None, compact: int | None = None,
                      bound_merges: bool = True) -> tuple:
    """The `attempts` moves SM3-SM8 of `_split_merge` (each applied by SM9's `_apply_move`) on
    the tokens' topics z [N] given the global weights `log_pi` [K] (-inf: a free topic; the
    weight of the unused topics is 1 - their sum, which no move changes) and conc = (alpha,
    gamma): the part shared by the CRF sampler (pi drawn given its tables, the changed topics
    re-seated afterwards) and the direct-assignment sampler (``hdp_direct``: pi = its
    instantiated weights beta, no tables). `k_att`: the attempts' global draws (equal on every
    shard), `k_local`: the shard's own. Returns (z, word_topic, topic, log_pi, changed [K],
    accepted, overflow). `launch_rounds`: at most this many vectorised rounds of SM5 (default
    log2 N; fewer rounds, a coarser sequential allocation: still an exact move, the launch
    state is not part of q). `compact`: each attempt's proposal runs on the pair's tokens
    gathered into arrays of this size when they fit (`_compact_proposal`). `bound_merges`:
    merges that the present split alone refuses skip their proposal (`_merge_refused_anyway`;
    False: every attempt draws it, the same moves)."""
    n = z.shape[0]
    k_cap = word_topic.shape[1]
    max_round = max(1, (n - 1).bit_length())
    if launch_rounds is not None:
        max_round = min(max_round, launch_rounds)
    tk = _global_tokens(data, num_docs, word_topic.shape[0], axis_name)
    carry = (z, word_topic, topic, log_pi, jnp.zeros(k_cap, bool), jnp.int32(0), jnp.bool_(False))
    return jax.lax.fori_loop(
        0, attempts, lambda i, c: _attempt(i, c, k_att, k_local, tk, conc, params, max_round,
                                           compact, bound_merges), carry)


def _crp_tables(key: Array, q: Array, first: Array, topic: Array, log_pi: Array,
                alpha: Array) -> Array:
    """(SM9) The tables of customers q = 0 .. n-1 sorted in groups (`first` [n]: the first
    customer of each one's group; `topic` [n] its topic k), a CRP(c = alpha pi_k) per group,
    all drawn at once by the "random earlier customer" construction: customer r of a group
    opens a table with probability c / (c + r), else joins the table of a uniformly chosen
    earlier customer of the group. Returns [n] the customer whose table each sits at, the
    table's first (its root)."""
    n = q.shape[0]
    rank = (q - first).astype(_F32)
    k_open, k_join = jax.random.split(key)
    conc = alpha * jnp.exp(log_pi[topic])
    opens = jax.random.uniform(k_open, (n,)) * (conc + rank) < conc
    parent = first + uniform_integer(k_join, q - first, (n,))
    ptr = jnp.where(opens | (rank == 0), q, parent)
    for _ in range(max(1, n.bit_length())):                  # pointer jumping to the roots
        ptr = ptr[ptr]
    return ptr


def _table_slots(root: Array, ptr: Array, sd: Array, q: Array, table_count: Array
                 ) -> tuple[Array, Array]:
    """The slot [n] of each sorted token's new table (`_crp_tables`; `root`: the tokens that
    open one, documents `sd` in sorted order): the r-th table opened in a document takes its
    r-th free slot of `table_count` [D, T]; and whether some document ran out of slots."""
    t_cap = table_count.shape[1]
    new_doc = (q == 0) | (sd != jnp.roll(sd, 1))
    doc_first = jax.lax.cummax(jnp.where(new_doc, q, 0))
    before = jnp.cumsum(root, dtype=jnp.int32) - root
    rank_in_doc = before - before[doc_first]
    free_cum = jnp.cumsum(table_count[sd] == 0, axis=1, dtype=jnp.int32)
    slot = _nth_free(free_cum, rank_in_doc)
    overflow = jnp.any(root & (slot >= t_cap))
    return jnp.minimum(slot, t_cap - 1)[ptr], overflow        # every token: its root's slot


def _reseat(key: Array, st: State, data: Data, changed: Array, log_pi: Array,
            axis_name: str | None = None) -> tuple[State, Array]:
    """(SM9) Empty the tables of the `changed` topics and seat their tokens (topics st.z) from
    p(t | z, pi): per document and topic k a CRP(alpha pi_k) (`_crp_tables`), new tables in
    free slots (`_table_slots`). Sharded: each shard seats its documents; m_k is recounted
    over all shards."""
    n = data.word.shape[0] - 1
    d_cap = st.table_count.shape[0]
    k_cap = st.word_topic.shape[1]
    doc, z = data.doc[:n], st.z[:n]
    move = changed[z] & _real(data)
    freed = (st.table_count > 0) & changed[st.table_topic]
    table_count = jnp.where(freed, 0, st.table_count)
    # the moving tokens grouped by (document, topic), in corpus order within a group
    perm = jnp.argsort(jnp.where(move, doc * k_cap + z, d_cap * k_cap), stable=True)
    q = jnp.arange(n)
    sd, sz, sm = doc[perm], z[perm], move[perm]
    new_group = (q == 0) | (sd != jnp.roll(sd, 1)) | (sz != jnp.roll(sz, 1))
    first = jax.lax.cummax(jnp.where(new_group, q, 0))
    ptr = _crp_tables(key, q, first, sz, log_pi, st.alpha)
    root = sm & (ptr == q)
    slot, overflow = _table_slots(root, ptr, sd, q, table_count)
    t_sorted = jnp.where(sm, slot, st.t[perm])
    t = st.t.at[perm].set(t_sorted)
    w = sm.astype(jnp.int32)
    table_count = table_count.at[sd, slot].add(w)
    table_topic = jnp.where(freed, 0, st.table_topic).at[jnp.where(root, sd, d_cap), slot].set(
        sz, mode="drop")
    active = table_count > 0
    return st._replace(
        t=t, table_count=table_count, table_topic=jnp.where(active, table_topic, 0),
        topic_tables=shard_sum(count_table((k_cap,), table_topic.reshape(-1),
                                       weights=active.reshape(-1)), axis_name),
    ), overflow
