"""Geweke "getting it right" tests of every model's exact kernel (Geweke 2004, "Getting it
right: joint distribution tests of posterior simulators", JASA 99: 799-804).

Two simulators of the joint distribution p(latents, words) of each model are compared:

- marginal-conditional: latents drawn from the model's prior in its collapsed form (Polya urns
  for the Dirichlet-multinomial parts, the Chinese restaurant process / franchise for the
  Dirichlet processes), then every word given the latents by a Polya urn per topic with beta;
- successive-conditional: start from one such draw and alternate (1) one sweep of the kernel on
  the latents given the words and (2) a fresh draw of all words given the latents (same document
  and sentence lengths, so every shape is static; the module's count tables are recounted from
  the latents for the new words). If the kernel leaves the posterior p(latents | words)
  invariant, every (latents after the sweep, words it swept on) pair is a draw of the joint.

Statistics g(latents, words), chosen to be sensitive to the kernel's use of the priors and of
the words (token pairs of one document in one topic; token pairs of one word in one topic;
clusters, tables or topics in use; ...), are recorded after every sweep, on the latents the
sweep returned and the words it swept on. Each successive-conditional chain starts from an
exact joint draw, so under a correct kernel every step is an exact joint draw and the chain's
mean of g over its steps has the joint expectation of g exactly (no burn-in bias); the chains
are independent (vmap), so the standard error of the mean over chains comes from their spread,
with no model of the autocorrelation inside a chain. The test is the two-sample z statistic of
the chain means against the marginal-conditional draws (many more of those: they are cheap),
two-sided, Bonferroni over every statistic of every test in this file so that the family's
false-alarm rate is at most FAMILY_ALPHA (normal theory; thousands of chains).

Kernels: every model's exact ``sequential`` kernel with its default moves: Sentence-LDA with
its split-merge move (``split_merge_steps=1``), HDP with its 10 split-merge moves per sweep,
DPMM with room for every partition (capacity D, no growth). LDA's ``uncollapsed`` kernel passes
the same test (``lda_spec("uncollapsed")`` with threefry keys: measured |z| <= 2.1, its control
z = +39) but its gamma draws take ~45 s, so it is not run here. Hyper-parameters are fixed (no
learned priors, no sampled concentrations).

Negative controls: the same bar must reject the same compiled kernel when the latents and words
are drawn with 2x alpha (the kernel then targets a posterior unlike the joint drawn), or the bar
could not fail; every control is rejected by a wide margin (|z| from 17 to 92 on its most
sensitive statistic at these sizes). A historical bug is rejected too: DMM's sweep with
TopicModel4J's (M - 1 + k alpha) prior denominator (z = +10.8, on a label-specific statistic).

The module layouts are built here from the words with jax (so that all chains run vmapped, each
with its own words): the layouts of ``prepare`` with the word arrays replaced; where ``prepare``
packs each document's or sentence's distinct words, the layout here lists every vocabulary word
with its multiplicity (0 for absent words; V is tiny). `test_layouts_match_prepare` checks
that these layouts give the states and log joints of ``prepare``'s, and its sweeps or
conditionals where the layouts differ.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxtopics import Corpus
from jaxtopics.models import dmm, dpmm, dpmrm, hdp, hdp_direct, lda, ptm, slda
from jaxtopics.ops import dirichlet_weights

FAMILY_ALPHA = 1e-3
#: the PRNG of the draws here: XLA's RngBitGenerator compiles in a fraction of the time of
#: threefry (whose rounds are unrolled into every random call), and compiling is most of the
#: time of these tests; but gamma variates (a rejection loop that splits its key: HDP's
#: split-merge moves draw pi ~ Dir(m, gamma), LDA's uncollapsed kernel theta and phi) run
#: orders of magnitude slower on vmapped rbg keys (500 chains of one HDP sweep: > 2 min against
#: 25 ms), so those models keep threefry
KEY_IMPL = "rbg"


# ------------------------------------------------------------------------------------------
# generative draws (jax, one chain; vmapped by the callers)


def polya_sequence(key, groups, num_groups: int, size: int, conc) -> jax.Array:
    """Items x_i, i = 0..n-1 in order, each from the Polya urn of its group:
    p(x_i = v) = (c[g_i, v] + conc) / (c[g_i] + size conc), c the counts of the earlier items of
    the group (a Dirichlet-multinomial sequence, the collapsed form of theta ~ Dir(conc),
    x ~ Mult(theta) per group). groups [n] int32."""
    n = groups.shape[0]
    gumbel = jax.random.gumbel(key, (n, size))

    def step(counts, xs):
        g, noise = xs
        x = jnp.argmax(jnp.log(counts[g].astype(jnp.float32) + conc) + noise).astype(jnp.int32)
        return counts.at[g, x].add(1), x

    _, x = jax.lax.scan(step, jnp.zeros((num_groups, size), jnp.int32), (groups, gumbel))
    return x


def crp_sequence(key, n: int, conc) -> jax.Array:
    """Table of n customers of a Chinese restaurant process with concentration `conc`: customer
    i joins table t with probability c_t / (i + conc), a new table (the lowest free label) with
    conc / (i + conc)."""
    gumbel = jax.random.gumbel(key, (n, n + 1))

    def step(carry, noise):
        counts, used = carry
        w = jnp.where(jnp.arange(n) < used, jnp.log(jnp.maximum(counts, 1).astype(jnp.float32)),
                      -jnp.inf)
        x = jnp.argmax(jnp.append(w, jnp.log(conc)) + noise)
        x = jnp.where(x == n, used, x).astype(jnp.int32)
        return (counts.at[x].add(1), used + (x == used)), x

    _, x = jax.lax.scan(step, (jnp.zeros((n,), jnp.int32), jnp.int32(0)), gumbel)
    return x


def pairs(counts) -> jax.Array:
    """sum over cells of C(c, 2): pairs of items that share a cell."""
    c = counts.astype(jnp.float32)
    return jnp.sum(c * (c - 1) / 2)


def cell_pairs(rows, cols, num_rows: int, num_cols: int) -> jax.Array:
    """Pairs of items (rows[i], cols[i]) that share both their row and their column."""
    return pairs(jnp.zeros((num_rows, num_cols), jnp.int32).at[rows, cols].add(1))


# ------------------------------------------------------------------------------------------
# the two simulators and the test


class Spec(NamedTuple):
    """One model's Geweke setting (functions of one chain, vmapped by `run`).

    prior(key) -> (latents, words): a draw of the joint (marginal-conditional simulator).
    words(key, latents) -> words: the words given the latents.
    build(latents, words) -> (state, data): the module's state and layout.
    sweep(key, state, data) -> state: one sweep of the kernel under test.
    latents(state) -> latents. stats(latents, words) -> [S] float32. names: the S names.
    prior and words take a third argument, the generative hyper-parameters (a dict of floats,
    traced: a negative control draws with other values through the same compiled code); hyper:
    the model's, those the kernel targets."""

    prior: Callable
    words: Callable
    build: Callable
    sweep: Callable
    latents: Callable
    stats: Callable
    names: tuple
    hyper: dict
    params: object


def run(spec: Spec, seed: int, chains: int, steps: int, prior_draws: int,
        variants: tuple = ({},), impl: str = KEY_IMPL) -> list:
    """For each variant (generative hyper-parameters that differ from the kernel's: {} = none,
    a negative control otherwise), the pair (marginal-conditional statistics [prior_draws, S],
    per-chain means of the successive-conditional statistics over `steps` steps [chains, S]),
    numpy float64. The variants run through the same compiled functions. `impl`: the PRNG."""
    def prior_stats(key, h):
        lat, w = spec.prior(key, h)
        return spec.stats(lat, w)

    def chain(k0, kr, h):
        lat, w = spec.prior(k0, h)

        def step(t, carry):
            lat, w, total = carry
            k_sweep, k_words = jax.random.split(jax.random.fold_in(kr, t))
            state, data = spec.build(lat, w)
            lat = spec.latents(spec.sweep(k_sweep, state, data))
            total = total + spec.stats(lat, w)
            return lat, spec.words(k_words, lat, h), total

        zero = jnp.zeros((len(spec.names),), jnp.float32)
        return jax.lax.fori_loop(0, steps, step, (lat, w, zero))[2] / steps

    marginal = jax.jit(jax.vmap(prior_stats, in_axes=(0, None)))
    successive = jax.jit(jax.vmap(chain, in_axes=(0, 0, None)))
    out = []
    for i, changed in enumerate(variants):
        hyper = {name: jnp.float32(value) for name, value in {**spec.hyper, **changed}.items()}
        k_prior, k_start, k_run = jax.random.split(jax.random.key(seed + 1000 * i, impl=impl), 3)
        mc = marginal(jax.random.split(k_prior, prior_draws), hyper)
        sc = successive(jax.random.split(k_start, chains), jax.random.split(k_run, chains), hyper)
        out.append((np.asarray(mc, np.float64), np.asarray(sc, np.float64)))
    return out


def z_scores(mc: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """Two-sample z of each statistic: (mean of the chain means - prior mean) / standard error of
    the difference (each from its own independent draws)."""
    se = np.sqrt(mc.var(0, ddof=1) / mc.shape[0] + sc.var(0, ddof=1) / sc.shape[0])
    return (sc.mean(0) - mc.mean(0)) / se


def _bar(num_tests: int) -> float:
    """Two-sided z bar of one statistic when `num_tests` statistics share FAMILY_ALPHA."""
    return float(stats.norm.isf(FAMILY_ALPHA / (2 * num_tests)))


def _hyper(case: dict) -> dict:
    """The generative hyper-parameters of a case (those its kernel targets)."""
    return {name: case[name] for name in ("alpha", "beta", "gamma", "eta", "lam") if name in case}


def _offsets(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _template(lengths, v: int, **kwargs) -> Corpus:
    """A corpus with documents of these lengths over V words (every word used, so the layouts
    have V rows); its words are replaced in every draw."""
    n = int(np.sum(lengths))
    words = np.arange(n, dtype=np.int32) % v
    return Corpus.from_arrays(words, _offsets(lengths), [f"w{i}" for i in range(v)], **kwargs)


# ------------------------------------------------------------------------------------------
# LDA: z_i | theta_d ~ Mult(theta_d), theta_d ~ Dir(alpha); w_i | z_i ~ Mult(phi_z), phi ~ Dir(beta)

LDA_CASE = dict(lengths=(3, 3, 2, 4), v=4, k=3, alpha=0.5, beta=0.5)


def lda_spec(sampler: str = "sequential") -> Spec:
    c = LDA_CASE
    corpus = _template(c["lengths"], c["v"])
    n, d, v, k = corpus.num_tokens, corpus.num_docs, c["v"], c["k"]
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    params = lda.check_params(lda.Params(k, alpha=c["alpha"],
                                         beta=c["beta"], sampler=sampler))
    template = lda.prepare(corpus, params)
    blocks, width = template.word.shape

    def prior(key, h):
        kz, kw = jax.random.split(key)
        z = polya_sequence(kz, doc, d, k, h["alpha"])
        return z, words(kw, z, h)

    def words(key, z, h):
        return polya_sequence(key, z, k, v, h["beta"])

    def build(z, w):
        data = dataclasses.replace(template, word=lda_word_layout(w, blocks, width, v))
        return lda.state_from_assignments(z, data, params), data

    def stats(z, w):
        return jnp.stack([cell_pairs(doc, z, d, k), cell_pairs(w, z, v, k),
                          pairs(jnp.bincount(z, length=k))])

    return Spec(prior, words, build, lambda key, s, data: lda.sweep(key, s, data, params)[0],
                lambda s: s.z[:n], stats,
                ("same-topic pairs in a document", "same-topic pairs of a word",
                 "same-topic pairs"),
                _hyper(c), params)


def lda_word_layout(w, blocks: int, width: int, v: int):
    """``lda.Data.word`` of the words w [N] (``prepare``'s strided layout, padding V)."""
    from jaxtopics.ops import to_strided
    return to_strided(w, blocks, fill=v, width=width)


def _dense_counts(rows, w, num_rows: int, v: int):
    """[num_rows + 1, V] multiplicity of every word in every row (a document or a sentence),
    plus the dummy empty row of the module layouts."""
    return jnp.zeros((num_rows + 1, v), jnp.int32).at[rows, w].add(1)


def _all_words(num_rows: int, v: int):
    """[num_rows + 1, V]: every vocabulary word in every row (the dense distinct-word layout)."""
    return jnp.broadcast_to(jnp.arange(v, dtype=jnp.int32), (num_rows + 1, v))


# ------------------------------------------------------------------------------------------
# Sentence-LDA: per sentence z_s ~ Mult(theta_d), theta_d ~ Dir(alpha); every token of s from phi_z

SLDA_CASE = dict(sentences=((2, 1, 3), (2, 2), (1, 3)), v=3, k=3, alpha=0.5, beta=0.5)


def slda_spec(split_merge_steps: int = 1) -> Spec:
    c = SLDA_CASE
    sent_len = [n for doc in c["sentences"] for n in doc]
    doc_len = [sum(doc) for doc in c["sentences"]]
    corpus = _template(doc_len, c["v"], sentence_offsets=_offsets(sent_len))
    d, v, k, s = corpus.num_docs, c["v"], c["k"], len(sent_len)
    params = slda.check_params(slda.Params(k, alpha=c["alpha"], beta=c["beta"],
                                           sampler="sequential",
                                           split_merge_steps=split_merge_steps))
    template = slda.prepare(corpus, params)
    sent_doc = template.sent_doc[:s]
    tok_sent = template.token_sentence

    def prior(key, h):
        kz, kw = jax.random.split(key)
        z = polya_sequence(kz, sent_doc, d, k, h["alpha"])
        return z, words(kw, z, h)

    def words(key, z, h):
        return polya_sequence(key, z[tok_sent], k, v, h["beta"])

    def build(z, w):
        counts = _dense_counts(tok_sent, w, s, v)
        every = _all_words(s, v)
        data = template._replace(once_words=every, once_counts=(counts == 1).astype(jnp.int32),
                                 rep_words=every, rep_counts=jnp.where(counts >= 2, counts, 0),
                                 word_freq=jnp.bincount(w, length=v).astype(jnp.int32))
        return slda.state_from_assignments(z, data, params), data

    def stats(z, w):
        zt = z[tok_sent]
        return jnp.stack([cell_pairs(sent_doc, z, d, k), cell_pairs(w, zt, v, k),
                          pairs(jnp.bincount(zt, length=k))])

    return Spec(prior, words, build, lambda key, st, data: slda.sweep(key, st, data, params)[0],
                lambda st: st.z[:s], stats,
                ("same-topic sentence pairs in a document", "same-topic token pairs of a word",
                 "same-topic token pairs"),
                _hyper(c), params)


# ------------------------------------------------------------------------------------------
# DMM: z_m ~ Mult(pi), pi ~ Dir(alpha); every token of document m from phi_{z_m}

DMM_CASE = dict(lengths=(2, 3, 1, 2, 3, 2), v=3, k=3, alpha=0.5, beta=0.5)


def _mixture_layout(template: dmm.Data, doc, w, d: int, v: int, max_len: int) -> dmm.Data:
    return template._replace(items=_all_words(d, v), counts=_dense_counts(doc, w, d, v),
                             count_range=jnp.arange(max_len, dtype=jnp.int32),
                             word_freq=jnp.bincount(w, length=v).astype(jnp.int32))


def dmm_spec(prior_log_weight: Callable | None = None) -> Spec:
    """`prior_log_weight`: the kernel's prior factor (default the module's; a negative control
    replaces it)."""
    from jaxtopics import learned_priors
    c = DMM_CASE
    corpus = _template(c["lengths"], c["v"])
    d, v, k = corpus.num_docs, c["v"], c["k"]
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    params = dmm.check_params(dmm.Params(k, alpha=c["alpha"], beta=c["beta"], sampler="sequential"))
    template = dmm.prepare(corpus, params)

    def prior(key, h):
        kz, kw = jax.random.split(key)
        z = polya_sequence(kz, jnp.zeros((d,), jnp.int32), 1, k, h["alpha"])
        return z, words(kw, z, h)

    def words(key, z, h):
        return polya_sequence(key, z[doc], k, v, h["beta"])

    def build(z, w):
        data = _mixture_layout(template, doc, w, d, v, max(c["lengths"]))
        state = dmm.State(*dmm.state_from_assignments(z, data, params),
                          *learned_priors.initial_traced(params, k))
        return state, data

    def sweep(key, st, data):
        if prior_log_weight is None:
            return dmm.sweep(key, st, data, params)[0]
        original = dmm.prior_log_weight
        dmm.prior_log_weight = prior_log_weight          # read at trace time only
        try:
            return dmm.sweep(key, st, data, params)[0]
        finally:
            dmm.prior_log_weight = original

    def stats(z, w):
        sizes = jnp.bincount(z, length=k)
        return jnp.stack([pairs(sizes), cell_pairs(w, z[doc], v, k),
                          jnp.sum(sizes > 0).astype(jnp.float32), sizes[0].astype(jnp.float32)])

    return Spec(prior, words, build, sweep, lambda st: st.z[:d], stats,
                ("document pairs in one cluster", "same-cluster token pairs of a word",
                 "clusters in use", "documents in cluster 0 (the labels are exchangeable)"),
                _hyper(c), params)


# ------------------------------------------------------------------------------------------
# DPMM: the documents' partition ~ CRP(alpha); every token of a cluster from its phi ~ Dir(beta)

DPMM_CASE = dict(lengths=(2, 3, 1, 2, 3, 2), v=3, alpha=1.0, beta=0.5)


def dpmm_spec() -> Spec:
    c = DPMM_CASE
    corpus = _template(c["lengths"], c["v"])
    d, v = corpus.num_docs, c["v"]
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    # capacity D: a partition of D documents never needs more slots (no overflow, no growth)
    params = dpmm.check_params(dpmm.Params(alpha=c["alpha"], beta=c["beta"],
                                           sampler="sequential", capacity=d))
    template = dpmm.prepare(corpus, params)

    def prior(key, h):
        kz, kw = jax.random.split(key)
        z = crp_sequence(kz, d, h["alpha"])
        return z, words(kw, z, h)

    def words(key, z, h):
        return polya_sequence(key, z[doc], d, v, h["beta"])

    def build(z, w):
        data = _mixture_layout(template, doc, w, d, v, max(c["lengths"]))
        state = dpmm.State(*dmm.state_from_assignments(z, data, params, d),
                           alpha=jnp.float32(params.alpha))
        return state, data

    def stats(z, w):
        sizes = jnp.bincount(z, length=d)
        return jnp.stack([jnp.sum(sizes > 0).astype(jnp.float32), pairs(sizes),
                          cell_pairs(w, z[doc], v, d)])

    return Spec(prior, words, build, lambda key, st, data: dpmm.sweep(key, st, data, params)[0],
                lambda st: st.z[:d], stats,
                ("clusters", "document pairs in one cluster", "same-cluster token pairs of a word"),
                _hyper(c), params)


# ------------------------------------------------------------------------------------------
# PTM: l_m ~ Mult(psi), psi ~ Dir(lam); z_i ~ Mult(theta_{l_m}), theta_l ~ Dir(alpha);
# w_i ~ Mult(phi_{z_i})

PTM_CASE = dict(lengths=(2, 3, 2, 1, 3), v=3, k=2, p=2, alpha=0.5, beta=0.5, lam=0.5)


def ptm_spec() -> Spec:
    c = PTM_CASE
    corpus = _template(c["lengths"], c["v"])
    n, d, v, k, p = corpus.num_tokens, corpus.num_docs, c["v"], c["k"], c["p"]
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    params = ptm.check_params(ptm.Params(k, p, alpha=c["alpha"], beta=c["beta"],
                                         lam=c["lam"], sampler="sequential"))
    template = ptm.prepare(corpus, params)

    def prior(key, h):
        kl, kz, kw = jax.random.split(key, 3)
        pseudo = polya_sequence(kl, jnp.zeros((d,), jnp.int32), 1, p, h["lam"])
        z = polya_sequence(kz, pseudo[doc], p, k, h["alpha"])
        return (z, pseudo), words(kw, (z, pseudo), h)

    def words(key, latents, h):
        return polya_sequence(key, latents[0], k, v, h["beta"])

    def build(latents, w):
        data = template._replace(word=jnp.append(w, 0).astype(jnp.int32),
                                 word_freq=jnp.bincount(w, length=v).astype(jnp.int32))
        return ptm.state_from_assignments(*latents, data, params), data

    def stats(latents, w):
        z, pseudo = latents
        return jnp.stack([pairs(jnp.bincount(pseudo, length=p)), cell_pairs(pseudo[doc], z, p, k),
                          cell_pairs(w, z, v, k)])

    return Spec(prior, words, build, lambda key, st, data: ptm.sweep(key, st, data, params)[0],
                lambda st: (st.z[:n], st.pseudo), stats,
                ("document pairs in one pseudo-document",
                 "same-topic token pairs in a pseudo-document", "same-topic token pairs of a word"),
                _hyper(c), params)


# ------------------------------------------------------------------------------------------
# HDP: the Chinese restaurant franchise (Teh et al. 2006): tokens of document j sit at tables
# by CRP(alpha), each new table takes a dish by the franchise's CRP(gamma) over tables; every
# token's word from its dish's phi ~ Dir(beta)

HDP_CASE = dict(lengths=(3, 2, 4, 3), v=3, alpha=1.0, gamma=1.0, beta=0.5)


def crf_seating(key, doc, d: int, t_cap: int, k_cap: int, alpha, gamma, table_weight=None,
                dish_choices=None):
    """A draw of the franchise: (table slot of every token [N], dish of every table [D, T]);
    new tables take the lowest free slot of their document, new dishes the lowest free topic."""
    n = doc.shape[0]
    g_table, g_dish = jax.random.gumbel(key, (2, n, t_cap + k_cap + 1))[:, :, :]

    def step(carry, xs):
        count, dish, m = carry
        j, gt, gd = xs
        row = count[j]
        table = jnp.argmax(jnp.append(jnp.where(row > 0, jnp.log(jnp.maximum(row, 1)
                                                                .astype(jnp.float32)), -jnp.inf),
                                      jnp.log(alpha)) + gt[:t_cap + 1])
        opens = table == t_cap
        slot = jnp.where(opens, jnp.argmax(row == 0), table)
        used = jnp.sum(m > 0)
        k = jnp.argmax(jnp.append(jnp.where(m > 0, jnp.log(jnp.maximum(m, 1).astype(jnp.float32)),
                                            -jnp.inf), jnp.log(gamma)) + gd[:k_cap + 1])
        k = jnp.where(k == k_cap, used, k)
        new_dish = jnp.where(opens, k, dish[j, slot])
        return ((count.at[j, slot].add(1), dish.at[j, slot].set(new_dish),
                 m.at[new_dish].add(opens.astype(jnp.int32))), slot.astype(jnp.int32))

    init = (jnp.zeros((d, t_cap), jnp.int32), jnp.zeros((d, t_cap), jnp.int32),
            jnp.zeros((k_cap,), jnp.int32))
    (_, dish, _), t = jax.lax.scan(step, init, (doc, g_table, g_dish))
    return t, dish


def hdp_spec(split_merge_steps: int = 10) -> Spec:
    c = HDP_CASE
    corpus = _template(c["lengths"], c["v"])
    n, d, v = corpus.num_tokens, corpus.num_docs, c["v"]
    t_cap, k_cap = max(c["lengths"]), n          # enough for any seating: no overflow
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    params = hdp.check_params(hdp.Params(alpha=c["alpha"], gamma=c["gamma"], beta=c["beta"],
                                         sampler="crf_sequential", split_merge_steps=split_merge_steps,
                                         topic_capacity=k_cap, table_capacity=t_cap))
    template = hdp.prepare(corpus, params)

    def prior(key, h):
        ks, kw = jax.random.split(key)
        latents = crf_seating(ks, doc, d, t_cap, k_cap, h["alpha"], h["gamma"])
        return latents, words(kw, latents, h)

    def topics(latents):
        t, dish = latents
        return dish[doc, t]

    def words(key, latents, h):
        return polya_sequence(key, topics(latents), k_cap, v, h["beta"])

    def build(latents, w):
        pair = doc * v + w              # a (document, word) pair's id: its first token
        first = jnp.argmax(pair[None, :] == pair[:, None], axis=1).astype(jnp.int32)
        data = template._replace(word=jnp.append(w, 0).astype(jnp.int32),
                                 word_freq=jnp.bincount(w, length=v).astype(jnp.int32),
                                 doc_word=first)
        state = hdp.state_from_seating(*latents, data, k_cap, alpha=c["alpha"],
                                           gamma=c["gamma"])
        return state, data

    def stats(latents, w):
        t, dish = latents
        z = topics(latents)
        tables = jnp.zeros((d, t_cap), jnp.int32).at[doc, t].add(1) > 0
        return jnp.stack([jnp.sum(jnp.bincount(z, length=k_cap) > 0).astype(jnp.float32),
                          jnp.sum(tables).astype(jnp.float32), cell_pairs(doc, z, d, k_cap),
                          cell_pairs(w, z, v, k_cap)])

    return Spec(prior, words, build, lambda key, st, data: hdp.sweep(key, st, data, params)[0],
                lambda st: (st.t[:n], st.table_topic), stats,
                ("topics", "tables", "same-topic token pairs in a document",
                 "same-topic token pairs of a word"),
                _hyper(c), params)


def hdp_direct_spec(split_merge_steps: int = 10) -> Spec:
    """HDP's default kernel family (direct assignment, ``hdp_direct``), its exact sequential
    kernel with its default split-merge schedule: the latents are the tokens' topics z and the
    instantiated weights beta. The joint draw: a CRF seating from the prior (as `hdp_spec`),
    z its dishes, and beta | tables ~ Dirichlet(m_1 .. m_K, gamma) (Teh et al. 2006, sec. 5.3)."""
    c = HDP_CASE
    corpus = _template(c["lengths"], c["v"])
    n, d, v = corpus.num_tokens, corpus.num_docs, c["v"]
    t_cap, k_cap = max(c["lengths"]), 2 * n + 1     # live topics, those opened in a sweep, a free one
    doc = jnp.asarray(corpus.doc_index, jnp.int32)
    params = hdp.check_params(hdp.Params(alpha=c["alpha"], gamma=c["gamma"], beta=c["beta"],
                                         sampler="sequential", split_merge_steps=split_merge_steps,
                                         topic_capacity=k_cap))
    template = hdp_direct.prepare(corpus, params)

    def prior(key, h):
        ks, kb, kw = jax.random.split(key, 3)
        t, dish = crf_seating(ks, doc, d, min(t_cap, k_cap), k_cap, h["alpha"], h["gamma"])
        z = dish[doc, t]
        tables = jnp.zeros((d, dish.shape[1]), jnp.int32).at[doc, t].add(1) > 0
        m = jnp.zeros(k_cap, jnp.int32).at[dish.reshape(-1)].add(tables.reshape(-1))
        latents = (z, *dirichlet_weights(kb, m, h["gamma"]))
        return latents, words(kw, latents, h)

    def words(key, latents, h):
        return polya_sequence(key, latents[0], k_cap, v, h["beta"])

    def build(latents, w):
        z, weight, new_weight = latents
        data = template._replace(word=jnp.append(w, 0).astype(jnp.int32),
                                 word_freq=jnp.bincount(w, length=v).astype(jnp.int32))
        st = hdp_direct.init(jax.random.key(0, impl=KEY_IMPL), data, params)
        st = st._replace(z=jnp.append(z, 0).astype(jnp.int32), topic_weight=weight,
                         new_weight=new_weight,
                         doc_topic=jnp.zeros((d, k_cap), jnp.int32),
                         word_topic=jnp.zeros((v, k_cap), jnp.int32),
                         topic=jnp.zeros(k_cap, jnp.int32), topic_tables=jnp.zeros(k_cap, jnp.int32))
        st = hdp_direct.rebuild(st, data, params)
        return st._replace(topic_tables=jnp.minimum(st.topic, 1)), data

    def stats(latents, w):
        z = latents[0]
        return jnp.stack([jnp.sum(jnp.bincount(z, length=k_cap) > 0).astype(jnp.float32),
                          cell_pairs(doc, z, d, k_cap), cell_pairs(w, z, v, k_cap)])

    return Spec(prior, words, build,
                lambda key, st, data: hdp_direct.sweep(key, st, data, params)[0],
                lambda st: (st.z[:n], st.topic_weight, st.new_weight), stats,
                ("topics", "same-topic token pairs in a document",
                 "same-topic token pairs of a word"), _hyper(c), params)


# ------------------------------------------------------------------------------------------
# DP-MRM (Kim, Kim & Oh 2012), CRF form: tokens of document j sit at tables by CRP(alpha); a new
# table takes a label k of label(j) by a Polya urn over the document's tables (eta), and a topic
# of label k by that label's CRP(gamma) over its tables; every token's word from its topic's phi

DPMRM_CASE = dict(lengths=(3, 2, 3, 2), labels=((0,), (1,), (0, 1), (1, 0)), v=3, alpha=1.0,
                  gamma=1.0, eta=1.0, beta=0.5)


def dpmrm_franchise(key, data: dpmrm.Data, t_cap: int, c_cap: int, alpha, gamma, eta):
    """A draw of the DP-MRM franchise: (table of every token [N], topic slot of every table
    [D+1, T], owner label of every topic slot [C]); new tables and topics take the lowest free
    slots."""
    n = data.word.shape[0]
    d = data.doc_start.shape[0] - 1
    r = data.doc_labels.shape[1]
    g = jax.random.gumbel(key, (n, 3, max(t_cap, c_cap, r) + 1))

    def logs(x):
        return jnp.where(x > 0, jnp.log(jnp.maximum(x, 1).astype(jnp.float32)), -jnp.inf)

    def step(carry, xs):
        size, dish, owner, m, mjr = carry
        j, gt = xs
        table = jnp.argmax(jnp.append(logs(size[j]), jnp.log(alpha)) + gt[0, :t_cap + 1])
        opens = table == t_cap
        slot = jnp.where(opens, jnp.argmax(size[j] == 0), table)
        lab_slot = jnp.argmax(jnp.where(data.label_mask[j], jnp.log(mjr[j] + eta), -jnp.inf)
                              + gt[1, :r])
        label = data.doc_labels[j, lab_slot]
        mine = (owner == label) & (m > 0)
        k = jnp.argmax(jnp.append(jnp.where(mine, logs(m), -jnp.inf), jnp.log(gamma))
                       + gt[2, :c_cap + 1])
        k = jnp.where(k == c_cap, jnp.argmax(m == 0), k)
        new_dish = jnp.where(opens, k, dish[j, slot])
        o = opens.astype(jnp.int32)
        return ((size.at[j, slot].add(1), dish.at[j, slot].set(new_dish),
                 owner.at[new_dish].set(jnp.where(opens, label, owner[new_dish])),
                 m.at[new_dish].add(o), mjr.at[j, lab_slot].add(o)), slot.astype(jnp.int32))

    init = (jnp.zeros((d + 1, t_cap), jnp.int32), jnp.zeros((d + 1, t_cap), jnp.int32),
            jnp.zeros((c_cap,), jnp.int32), jnp.zeros((c_cap,), jnp.int32),
            jnp.zeros((d + 1, r), jnp.float32))
    (_, dish, owner, _, _), table = jax.lax.scan(step, init, (data.doc, g))
    return table, dish, owner


def dpmrm_spec() -> Spec:
    c = DPMRM_CASE
    corpus = _template(c["lengths"], c["v"], labels=[[f"L{k}" for k in s] for s in c["labels"]],
                       label_names=["L0", "L1"])
    n, d, v = corpus.num_tokens, corpus.num_docs, c["v"]
    t_cap, c_cap = max(c["lengths"]), n          # enough for any seating: no overflow
    params = dpmrm.check_params(dpmrm.Params(alpha=c["alpha"], beta=c["beta"],
                                             gamma=c["gamma"], eta=c["eta"], sampler="sequential",
                                             topic_capacity=c_cap, table_capacity=t_cap))
    template = dpmrm.prepare(corpus, params)
    doc = template.doc

    def prior(key, h):
        ks, kw = jax.random.split(key)
        latents = dpmrm_franchise(ks, template, t_cap, c_cap, h["alpha"], h["gamma"], h["eta"])
        return latents, words(kw, latents, h)

    def topics(latents):
        table, dish, _ = latents
        return dish[doc, table]

    def words(key, latents, h):
        return polya_sequence(key, topics(latents), c_cap, v, h["beta"])

    def build(latents, w):
        data = template._replace(word=w.astype(jnp.int32), slot=w.astype(jnp.int32),
                                 doc_words=_all_words(d, v),
                                 word_freq=jnp.bincount(w, length=v).astype(jnp.int32))
        state = dpmrm.state_from_assignments(*latents, data, alpha=c["alpha"], gamma=c["gamma"])
        return state, data

    def stats(latents, w):
        table, dish, owner = latents
        z = topics(latents)
        tables = jnp.zeros((d, t_cap), jnp.int32).at[doc, table].add(1) > 0
        return jnp.stack([jnp.sum(jnp.bincount(z, length=c_cap) > 0).astype(jnp.float32),
                          jnp.sum(tables).astype(jnp.float32), cell_pairs(doc, z, d, c_cap),
                          cell_pairs(w, z, v, c_cap), jnp.sum(owner[z] == 0).astype(jnp.float32)])

    return Spec(prior, words, build, lambda key, st, data: dpmrm.sweep(key, st, data, params)[0],
                lambda st: (st.table, st.dish, st.topic_label), stats,
                ("topics", "tables", "same-topic token pairs in a document",
                 "same-topic token pairs of a word", "tokens of label 0"),
                _hyper(c), params)


# ------------------------------------------------------------------------------------------
# the tests

#: model -> (spec, negative control: generative hyper-parameters unlike the kernel's[, PRNG])
MODELS = {
    "lda": (lambda: lda_spec("sequential"), dict(alpha=2 * LDA_CASE["alpha"])),
    "slda": (slda_spec, dict(alpha=2 * SLDA_CASE["alpha"])),
    "dmm": (dmm_spec, dict(alpha=2 * DMM_CASE["alpha"])),
    "dpmm": (dpmm_spec, dict(alpha=2 * DPMM_CASE["alpha"])),
    "ptm": (ptm_spec, dict(alpha=2 * PTM_CASE["alpha"])),
    # with its default split-merge moves, whose Dirichlet draws want threefry keys (KEY_IMPL)
    "hdp": (hdp_spec, dict(alpha=2 * HDP_CASE["alpha"]), "threefry2x32"),
    "hdp_direct": (hdp_direct_spec, dict(alpha=2 * HDP_CASE["alpha"]), "threefry2x32"),
    "dpmrm": (dpmrm_spec, dict(alpha=2 * DPMRM_CASE["alpha"])),
}
#: independent successive-conditional chains, sweeps per chain, marginal-conditional draws
CHAINS, STEPS, PRIOR_DRAWS = 2000, 10, 20_000
#: statistics tested against the bar, over every test of the file (Bonferroni)
NUM_STATISTICS = 3 * 4 + 4 + 4 + 3 + 5   # LDA, Sentence-LDA, DPMM, PTM; DMM; HDP (CRF, direct); DP-MRM
BAR = _bar(NUM_STATISTICS)


def _report(name: str, spec: Spec, mc: np.ndarray, sc: np.ndarray) -> np.ndarray:
    z = z_scores(mc, sc)
    for label, a, b, zi in zip(spec.names, mc.mean(0), sc.mean(0), z):
        print(f"{name}: {label}: prior {a:.4f}, chains {b:.4f}, z {zi:+.2f} (bar {BAR:.2f})")
    return z


@pytest.mark.slow
@pytest.mark.parametrize("model", list(MODELS))
def test_geweke(model: str) -> None:
    """The exact kernel's successive-conditional simulator matches the marginal-conditional one
    on every statistic (|z| < BAR), and the same bar rejects the same kernel when the latents and
    words are drawn with 2x alpha (the kernel targets a posterior unlike the joint drawn)."""
    make, control, *impl = MODELS[model]
    spec = make()
    (mc, sc), (mc_bad, sc_bad) = run(spec, list(MODELS).index(model), CHAINS, STEPS, PRIOR_DRAWS,
                                     variants=({}, control), impl=(impl or [KEY_IMPL])[0])
    z = _report(model, spec, mc, sc)
    assert np.all(np.abs(z) < BAR), (model, dict(zip(spec.names, z)))
    z_bad = _report(f"{model} (negative control {control})", spec, mc_bad, sc_bad)
    assert np.max(np.abs(z_bad)) >= BAR, ("the negative control passed the bar", model,
                                          dict(zip(spec.names, z_bad)))


@pytest.mark.slow
def test_geweke_rejects_topicmodel4j_dmm() -> None:
    """Negative control of a historical bug: DMM's prior factor with TopicModel4J's denominator
    (m_k,-m + alpha) / (M - 1 + k alpha), k the cluster's index (DESIGN.md, seed notes), run
    through the real sweep, is rejected by the bar of `test_geweke`: it favours low cluster
    labels, which the statistic "documents in cluster 0" sees (exchangeable labels: D/K under
    the joint); the label-blind statistics do not see it."""
    d = len(DMM_CASE["lengths"])

    def k_alpha(others, alpha):
        return (jnp.log(others.astype(jnp.float32) + alpha)
                - jnp.log(d - 1 + jnp.arange(others.shape[-1]) * alpha))

    spec = dmm_spec(prior_log_weight=k_alpha)
    [(mc, sc)] = run(spec, 100, CHAINS, STEPS, PRIOR_DRAWS)
    z = _report("dmm (negative control: TopicModel4J's k alpha)", spec, mc, sc)
    assert np.max(np.abs(z)) >= BAR, ("the negative control passed the bar",
                                      dict(zip(spec.names, z)))


def _words_corpus(spec_case: dict, w: np.ndarray, **kwargs) -> Corpus:
    """The corpus of the case's documents with the words `w` (all V words in the vocabulary)."""
    lengths = spec_case.get("lengths") or [sum(doc) for doc in spec_case["sentences"]]
    v = spec_case["v"]
    return Corpus.from_arrays(np.asarray(w, np.int32), _offsets(lengths),
                              [f"w{i}" for i in range(v)], **kwargs)


@pytest.mark.parametrize("model", ["lda", "slda", "dmm", "dpmm", "ptm", "hdp", "dpmrm"])
def test_layouts_match_prepare(model: str) -> None:
    """The layouts built here from a draw's words give what ``prepare`` gives for a corpus of
    those words: the state passes the module's ``check_state`` and has the same log joint. Where
    the layout differs from ``prepare``'s (the dense distinct-word layouts, which list absent
    words with multiplicity 0): DMM's (DPMM's is the same) and DP-MRM's give the same latents
    after one sweep of 16 chains from the same keys (float32 sums may round differently, so 2
    of 16 may part), Sentence-LDA's the same conditionals (10) of every sentence. Elsewhere the
    word arrays are ``prepare``'s (HDP's (document, word) ids name the same pairs)."""
    spec = MODELS[model][0]()
    module = {"lda": lda, "slda": slda, "dmm": dmm, "dpmm": dpmm, "ptm": ptm, "hdp": hdp,
              "dpmrm": dpmrm}[model]
    case = {"lda": LDA_CASE, "slda": SLDA_CASE, "dmm": DMM_CASE, "dpmm": DPMM_CASE,
            "ptm": PTM_CASE, "hdp": HDP_CASE, "dpmrm": DPMRM_CASE}[model]
    hyper = {name: jnp.float32(value) for name, value in spec.hyper.items()}
    latents, w = spec.prior(jax.random.key(7, impl=KEY_IMPL), hyper)
    state, data = spec.build(latents, w)
    kwargs = {}
    if model == "slda":
        kwargs["sentence_offsets"] = _offsets([n for doc in case["sentences"] for n in doc])
    if model == "dpmrm":
        kwargs.update(labels=[[f"L{k}" for k in s] for s in case["labels"]],
                      label_names=["L0", "L1"])
    corpus = _words_corpus(case, np.asarray(w), **kwargs)
    # the reference state: prepare's layout, the module's own recount of the same latents
    ref_data = module.prepare(corpus, spec.params)
    ref_state = module.rebuild(state, ref_data, spec.params)
    assert module.check_state(jax.tree_util.tree_map(np.asarray, state), spec.params) is None
    assert np.isclose(float(module.log_joint(state, data, spec.params)),
                      float(module.log_joint(ref_state, ref_data, spec.params)), rtol=1e-6)
    if model in ("lda", "ptm", "hdp"):
        np.testing.assert_array_equal(np.asarray(data.word), np.asarray(ref_data.word))
        if model == "hdp":
            ours, theirs = np.asarray(data.doc_word), np.asarray(ref_data.doc_word)
            np.testing.assert_array_equal(ours[:, None] == ours[None, :],
                                          theirs[:, None] == theirs[None, :])
        return
    if model == "slda":
        s_count = state.z.shape[0] - 1
        weights = [slda._log_weights(slda._sentence_inputs(dt, jnp.arange(s_count)),
                                     state.z[:s_count], st, spec.params, case["v"])
                   for st, dt in ((state, data), (ref_state, ref_data))]
        np.testing.assert_allclose(*weights, rtol=1e-5)
        return
    if model == "dpmm":
        return
    keys = jax.random.split(jax.random.key(3), 16)
    one = jax.jit(jax.vmap(lambda k, st, dt: spec.latents(spec.sweep(k, st, dt)),
                           in_axes=(0, None, None)))
    ours = jax.tree_util.tree_leaves(one(keys, state, data))
    theirs = jax.tree_util.tree_leaves(one(keys, ref_state, ref_data))
    same = np.ones(16, bool)
    for a, b in zip(ours, theirs):
        same &= (np.asarray(a) == np.asarray(b)).reshape(16, -1).all(1)
    assert same.sum() >= 14, same
