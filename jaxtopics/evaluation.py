"""Held-out likelihood of unseen documents under a fitted model, one definition for every model.

``log_likelihood(model, docs, method)`` is log p(w_d | trained model) in nats, one value per
document; ``perplexity`` is exp(-sum_d log p(w_d) / scored tokens). The trained model enters
through its point estimates: phi [K, V] (``model.topic_word``) and the prior of a new document's
topic proportions, which each model module supplies (``held_out_prior``; LDA's alpha by default).

Methods:

* ``"left_to_right"`` (Wallach, Murray, Salakhutdinov & Mimno 2009, algorithm 3): R particles
  walk the document left to right; at position n every particle resamples the topics of units
  1..n-1 (one collapsed Gibbs step each), then contributes
  p(w_n | w_<n, z_<n) = sum_k p(w_n | k) (N_k^<n + a_k) / (n - 1 + sum_k a_k)
  and draws z_n; log p(w_d) ~= sum_n log mean_r p_n^r (an unbiased estimate of p(w_d) per
  position product; in log space it is a consistent lower-biased estimate, as usual).
  A unit is a token (LDA, HDP, PTM) or a sentence whose tokens share a topic (Sentence-LDA,
  log p(sentence | k) = sum_i log phi_k,w_i). Models whose documents first pick a group
  (PTM: a pseudo-document l with p(l) = (M_l + lambda) / (D + P lambda), whose fitted topic
  counts join the prior: a_k = N_lk + alpha) sum the group out exactly. HDP's prior is the CRF
  predictive of a new document, a_k = alpha m_k / (m + gamma) with the fitted table counts held
  fixed, plus one new-topic component of mass alpha gamma / (m + gamma) and p(w | new) = 1/V
  (the base measure's predictive).
* ``"completion"`` (document completion, Wallach et al. 2009 section 4.2): each document's
  tokens are split in two halves (``split_halves``: a seeded random floor(N_d / 2) of them
  observed, the rest scored; random because bag-of-words files store tokens sorted by word);
  theta is folded in from the observed half (``transform``'s fold-in), and the other half is
  scored, log p = sum_{i scored} log sum_k theta_k phi_k,w_i. The same split for every model
  and seed; the value is of the scored half only (and its tokens are the ones counted).
* ``"exact"`` (DMM, DPMM: one cluster per document): the sum over clusters of the Polya
  predictive, supplied by the module (``held_out_exact``).

Everything is in log space, vectorised over documents and particles, seeded and bitwise
reproducible. Left-to-right runs on the devices the model was fitted on (``fit(devices=P)``:
each batch of documents split over them); the other methods run on one device. A document's
left-to-right value and completion split depend on it and its position d (it uses
``fold_in(key, d)``), not on the other documents; an exact value on the document alone; completion
and DP-MRM's corrected theta fold theta in for the documents together (the models' ``fold_in``,
as ``transform``), so those values move with the batch by the fold-in's sampling noise.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .corpus import Corpus
from .errors import CorpusError, ParameterError
from .new_documents import _map_new_documents, _warn_unknown_words
from .validate import check_positive_int, seed_key

__all__ = ["HeldOutPrior", "METHODS", "default_method", "log_likelihood", "perplexity",
           "left_to_right"]

METHODS = ("left_to_right", "completion", "exact", "corrected_theta")


class HeldOutPrior(NamedTuple):
    """What left-to-right needs of a fitted model (``held_out_prior(state, params)`` of a model
    module).

    Attributes:
        log_phi: [K', V] log p(word | component) (a new-topic component included where the
            model has one).
        prior: [G, K'] the Dirichlet prior of a new document's topic proportions under each of
            G groups.
        log_weight: [G] log p(group) (one group of weight 1 for most models)."""

    log_phi: Array
    prior: Array
    log_weight: Array


def default_method(module: Any) -> str:
    """The model's own held-out method.

    Args:
        module: a model module (``jaxtopics.models.lda``, ...).

    Returns:
        Its ``DEFAULT_HELD_OUT_METHOD``, else "left_to_right"."""
    return getattr(module, "DEFAULT_HELD_OUT_METHOD", "left_to_right")


def methods_of(module: Any) -> tuple[str, ...]:
    """The methods a model module supports."""
    return getattr(module, "HELD_OUT_METHODS", ("left_to_right", "completion"))


def _lda_like_prior(model: Any) -> HeldOutPrior:
    """The alpha in use over the fitted topics (learned, where the chain learns it: the
    estimates' "alpha", a float or [K]), one group (LDA, Sentence-LDA)."""
    phi = np.asarray(model.topic_word, np.float64)
    k = phi.shape[0]
    alpha = model._estimates().get("alpha", model.params.alpha)
    return HeldOutPrior(jnp.asarray(np.log(phi), jnp.float32),
                        jnp.broadcast_to(jnp.asarray(alpha, jnp.float32), (1, k)),
                        jnp.zeros((1,), jnp.float32))


def _draw(logw: Array, u: Array) -> Array:
    """Index drawn from unnormalised log-weights `logw` [K] with one uniform `u` (inverse CDF)."""
    c = jnp.cumsum(jnp.exp(logw - jnp.max(logw)))
    return jnp.minimum(jnp.sum(c < u * c[-1]), logw.shape[0] - 1).astype(jnp.int32)


def _particle(key: Array, ll: Array, length: Array, prior: Array) -> Array:
    """One left-to-right particle over one document: log p(unit_n | units_<n, z_<n) [L] (0 past
    `length`). ll [L, K]: log p(unit_n | k); prior [K]: a_k."""
    size, k = ll.shape
    total = jnp.sum(prior)

    def step(carry, n):
        z, counts = carry
        u = jax.random.uniform(jax.random.fold_in(key, n), (size + 1,))

        def resample(m, c):
            z, counts = c
            counts = counts.at[z[m]].add(-1.0)
            new = _draw(ll[m] + jnp.log(counts + prior), u[m])
            return z.at[m].set(new), counts.at[new].add(1.0)

        before = jnp.minimum(n, length)
        z, counts = jax.lax.fori_loop(0, before, resample, (z, counts))
        logw = ll[n] + jnp.log(counts + prior)
        lp = jax.scipy.special.logsumexp(logw) - jnp.log(before.astype(jnp.float32) + total)
        valid = n < length
        new = _draw(logw, u[size])
        return (z.at[n].set(new), counts.at[new].add(valid.astype(jnp.float32))), jnp.where(valid, lp, 0.0)

    init = (jnp.zeros((size,), jnp.int32), jnp.zeros((k,), jnp.float32))
    _, lp = jax.lax.scan(step, init, jnp.arange(size))
    return lp


def _placer(devices: list | None):
    """A function placing a batch's arrays (leading axis: documents) on `devices`, split along
    the documents (None or one device: on the default device, as they are)."""
    if not devices or len(devices) == 1:
        return lambda *arrays: tuple(jnp.asarray(a) for a in arrays)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    mesh = Mesh(np.array(devices), ("docs",))

    def place(*arrays):
        return tuple(jax.device_put(jnp.asarray(a), NamedSharding(
            mesh, PartitionSpec("docs", *([None] * (np.ndim(a) - 1))))) for a in arrays)
    return place


@partial(jax.jit, static_argnums=(6,))
def _left_to_right_batch(keys: Array, words: Array, units: Array, lengths: Array,
                         token_mask: Array, pieces: HeldOutPrior, num_particles: int) -> Array:
    """log p(doc) [B] of a batch: words, units [B, T] (unit index of each token slot, T slots),
    token_mask [B, T], lengths [B] (units per document)."""
    log_phi_t = pieces.log_phi.T                                              # [V, K]
    b, t = words.shape
    size = t                                                # at most one unit per token
    tok = jnp.where(token_mask[..., None], log_phi_t[jnp.where(token_mask, words, 0)], 0.0)
    ll = jnp.zeros((b, size, log_phi_t.shape[1]), jnp.float32)
    ll = ll.at[jnp.arange(b)[:, None], units].add(tok)                       # [B, L, K]

    def doc(key, ll_d, length):
        def group(prior, g):
            pkeys = jax.vmap(lambda r: jax.random.fold_in(jax.random.fold_in(key, g), r))(
                jnp.arange(num_particles))
            lp = jax.vmap(_particle, in_axes=(0, None, None, None))(pkeys, ll_d, length, prior)
            per_pos = jax.scipy.special.logsumexp(lp, axis=0) - jnp.log(jnp.float32(num_particles))
            return jnp.sum(per_pos)
        per_group = jax.vmap(group)(pieces.prior, jnp.arange(pieces.prior.shape[0]))
        return jax.scipy.special.logsumexp(per_group + pieces.log_weight)

    return jax.vmap(doc)(keys, ll, lengths)


def left_to_right(key: Array, pieces: HeldOutPrior, word_ids: np.ndarray, doc_offsets: np.ndarray,
                  unit_offsets: np.ndarray | None = None, num_particles: int = 10,
                  devices: list | None = None) -> np.ndarray:
    """log p(w_d) by the left-to-right algorithm (Wallach et al. 2009, algorithm 3; module
    docstring). Documents are scored in groups of similar length (padded to a power of 2).

    Args:
        key: the PRNG key (document d uses ``fold_in(key, d)``).
        pieces: the fitted model's :class:`HeldOutPrior`.
        word_ids, doc_offsets: the documents' tokens (ids in the model's vocabulary) and
            offsets, as a Corpus holds them.
        unit_offsets: token offsets of units sharing a topic (sentences; None: every token is
            a unit), nested in the documents.
        num_particles: R, the particles per document.
        devices: score each group's documents split over these devices (a 1-d mesh; the
            model's pieces replicated); a document's value does not depend on where it is
            scored. None: one device.

    Returns:
        float64 [D]: log p(w_d) of each document."""
    num_particles = check_positive_int(num_particles, "num_particles")
    place = _placer(devices)
    word_ids = np.asarray(word_ids, np.int64)
    doc_offsets = np.asarray(doc_offsets, np.int64)
    d = doc_offsets.shape[0] - 1
    n = word_ids.shape[0]
    if unit_offsets is None:
        unit_of_token = np.arange(n, dtype=np.int64)
        unit_start_of_doc = doc_offsets[:-1]
    else:
        unit_offsets = np.asarray(unit_offsets, np.int64)
        unit_of_token = np.repeat(np.arange(unit_offsets.shape[0] - 1), np.diff(unit_offsets))
        unit_start_of_doc = np.searchsorted(unit_offsets, doc_offsets[:-1])
    lengths_tok = np.diff(doc_offsets)
    doc_of_token = np.repeat(np.arange(d), lengths_tok)
    local_unit = unit_of_token - unit_start_of_doc[doc_of_token]
    units_per_doc = np.zeros(d, np.int64)
    if n:
        np.maximum.at(units_per_doc, doc_of_token, local_unit + 1)
    out = np.zeros(d, np.float64)
    k_comp, g = pieces.prior.shape[1], pieces.prior.shape[0]
    order = np.argsort(lengths_tok, kind="stable")
    order = order[lengths_tok[order] > 0]                       # an empty document: log p = 0
    buckets = np.maximum(8, 2 ** np.ceil(np.log2(np.maximum(lengths_tok[order], 1)))).astype(np.int64)
    for size in np.unique(buckets):
        docs = order[buckets == size]
        per_batch = max(1, min(len(docs), (1 << 22) // int(size * max(k_comp, g * num_particles))))
        per_batch = 1 << int(math.floor(math.log2(per_batch)))            # few distinct shapes
        if devices:                                   # whole rows per device
            per_batch = -(-per_batch // len(devices)) * len(devices)
        for start in range(0, len(docs), per_batch):
            batch = docs[start:start + per_batch]
            pad = per_batch - len(batch)
            idx = np.concatenate([batch, np.full(pad, batch[0])])
            cols = np.arange(size)
            tok_idx = doc_offsets[idx][:, None] + cols[None, :]
            mask = cols[None, :] < lengths_tok[idx][:, None]
            tok_idx = np.where(mask, tok_idx, 0)
            words = np.where(mask, word_ids[tok_idx] if n else 0, 0).astype(np.int32)
            units = np.where(mask, local_unit[tok_idx] if n else 0, size - 1).astype(np.int32)
            keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.asarray(idx, jnp.int32))
            vals = _left_to_right_batch(*place(keys, words, units,
                                               units_per_doc[idx].astype(np.int32), mask),
                                        pieces, num_particles)
            out[batch] = np.asarray(vals, np.float64)[:len(batch)]
    return out


def split_halves(corpus: Corpus, seed: Any = 0) -> tuple[Corpus, Corpus]:
    """(observed halves, scored halves) of every document: a seeded random floor(N_d / 2) of
    its tokens, and the rest, each kept in document order (a sentence's tokens in a half stay
    one sentence). Document d's split comes from numpy's ``default_rng([*seed, d])`` alone, so
    it does not depend on the other documents. Random, not the first half: bag-of-words files
    (LDA-C, UCI) store a document's tokens sorted by word id, often by frequency, so a
    positional split would fold in from the frequent words and score the rare ones."""
    offsets = np.asarray(corpus.doc_offsets, np.int64)
    lengths = np.diff(offsets)
    n = int(offsets[-1])
    doc = np.repeat(np.arange(lengths.shape[0]), lengths)
    base = [int(x) for x in np.atleast_1d(seed)]
    keys = np.concatenate([np.random.default_rng(base + [d]).random(int(m))
                           for d, m in enumerate(lengths)] or [np.zeros(0)])
    order = np.lexsort((keys, doc))                       # each document's tokens, shuffled
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - offsets[doc[order]]
    observed = rank < (lengths // 2)[doc]
    sentence = (np.searchsorted(np.asarray(corpus.sentence_offsets, np.int64), np.arange(n),
                                side="right") if corpus.sentence_offsets is not None else None)

    def part(mask):
        tokens = np.flatnonzero(mask)
        offs = np.concatenate([[0], np.cumsum(np.bincount(doc[tokens], minlength=lengths.shape[0]))])
        sentences = None
        if sentence is not None:
            s = sentence[tokens]
            starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]])) if tokens.size else []
            sentences = np.unique(np.concatenate([starts, offs]).astype(np.int64))
        return Corpus.from_arrays(corpus.word_ids[tokens].astype(np.int32), offs, corpus.vocab,
                                  sentence_offsets=sentences, **_labels_of(corpus))

    return part(observed), part(~observed)


def _labels_of(corpus: Corpus) -> dict[str, Any]:
    if corpus.label_offsets is not None:
        return {"labels": corpus.label_sets, "label_names": corpus.label_names}
    return {}


def log_likelihood(model: Any, docs: Any, method: str | None = None, seed: int = 0,
                   **options: Any) -> np.ndarray:
    """log p(w_d | model) in nats (see the module docstring); ``FittedModel.log_likelihood``.

    Args:
        model: a FittedModel.
        docs: a Corpus or raw texts, matched to the model's vocabulary by word as ``transform``
            does (unknown words dropped, counted in ``model.last_transform``,
            UnknownWordsWarning).
        method: one of ``METHODS`` the model supports; None: the model's default.
        seed: the seed of the particles, split or fold-in.
        **options: ``num_particles`` (left-to-right, default 10), ``num_sweeps`` (completion's
            fold-in and DP-MRM's corrected theta, default 50).

    Returns:
        float64 [D]: one value per document.

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import evaluation
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> evaluation.log_likelihood(model, ["cherry apple banana", "car wheel"], "completion").shape
        (2,)
    """
    return _evaluate(model, docs, method, seed, options, "log_likelihood")[0]


def perplexity(model: Any, docs: Any, method: str | None = None, seed: int = 0,
               **options: Any) -> float:
    """Held-out perplexity exp(-sum_d log p(w_d) / scored tokens); ``FittedModel.perplexity``.

    Args:
        model, docs, method, seed, **options: as in :func:`log_likelihood`.

    Returns:
        The perplexity, a float; the scored tokens are those of known words, or with
        "completion" those of the second halves.

    Raises:
        CorpusError: no token to score.

    Example:
        >>> import jaxtopics as jt
        >>> from jaxtopics import evaluation
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> 1 < evaluation.perplexity(model, corpus, "completion") < corpus.num_words
        True
    """
    ll, scored = _evaluate(model, docs, method, seed, options, "perplexity")
    if scored == 0:
        raise CorpusError("perplexity: no token of the documents is in the model's vocabulary"
                          if model.last_transform.num_tokens == 0 else
                          "perplexity: no document has a second half to score (completion)")
    return float(np.exp(-float(np.sum(ll)) / scored))


def _evaluate(model: Any, docs: Any, method: str | None, seed: int, options: dict,
              what: str) -> tuple[np.ndarray, int]:
    """(log p(w_d) [D], tokens scored) of `method` on `docs`."""
    module = model._module
    method = default_method(module) if method is None else method
    if method not in methods_of(module):
        raise ParameterError(f"method must be one of {methods_of(module)} for the {model.model} "
                             f"model, got {method!r}")
    allowed = {"left_to_right": {"num_particles"}, "completion": {"num_sweeps"},
               "exact": set(), "corrected_theta": {"num_sweeps"}}[method]
    unknown = set(options) - allowed
    if unknown:
        raise ParameterError(f"{method}: unknown option(s) {', '.join(sorted(unknown))} (it takes "
                             f"{', '.join(sorted(allowed)) or 'none'})")
    key = seed_key(seed)
    corpus, info = _map_new_documents(model, docs, what)
    model.last_transform = info
    _warn_unknown_words(info, what, f"the log-likelihood is of the other {info.num_tokens} tokens")
    d = info.num_docs
    lengths = np.diff(np.asarray(corpus.doc_offsets))[:d] if info.num_tokens else np.zeros(d, np.int64)
    scored = int(np.sum(lengths - lengths // 2) if method == "completion" else np.sum(lengths))
    if info.num_tokens == 0:
        return np.zeros(d, np.float64), 0
    return _METHODS[method](model, corpus, key, **options)[:d], scored


def _left_to_right_method(model: Any, corpus: Corpus, key: Array, num_particles: int = 10) -> np.ndarray:
    make = getattr(model._module, "held_out_prior", None)
    pieces = make(model._state, model.params) if make is not None else _lda_like_prior(model)
    units = corpus.sentence_offsets if getattr(model._module, "HELD_OUT_UNITS", "tokens") == "sentences" else None
    return left_to_right(key, pieces, corpus.word_ids, corpus.doc_offsets, units, num_particles,
                         devices=_model_devices(model))


def _model_devices(model: Any) -> list | None:
    """The devices a model fitted sharded ran on (``fit(devices=P)``: the first P of this
    process, as the fit's mesh), where this process has them; None: the default device."""
    shards = getattr(model, "shards", None)
    if not shards or jax.process_count() > 1:
        return None
    devices = sorted(jax.local_devices(), key=lambda dv: dv.id)
    return devices[:shards] if len(devices) >= shards else None


def _completion_method(model: Any, corpus: Corpus, key: Array, num_sweeps: int = 50) -> np.ndarray:
    num_sweeps = check_positive_int(num_sweeps, "num_sweeps")
    if np.all(np.diff(np.asarray(corpus.doc_offsets)) < 2):   # nothing to fold in from
        second, theta = corpus, _prior_fold_in(model, corpus, key, num_sweeps)
    else:
        split_seed = np.asarray(jax.random.key_data(jax.random.fold_in(key, 1)), np.uint32).ravel()
        first, second = split_halves(corpus, [int(x) for x in split_seed])
        theta = _fold_in(model, first, key, num_sweeps)
    theta = np.asarray(theta, np.float64)                                     # [D, K]
    phi = np.asarray(model.topic_word, np.float64)                              # [K, V]
    doc = np.repeat(np.arange(second.num_docs), np.diff(np.asarray(second.doc_offsets)))
    p = np.einsum("nk,kn->n", theta[doc], phi[:, second.word_ids]) if doc.size else np.zeros(0)
    out = np.zeros(second.num_docs, np.float64)
    np.add.at(out, doc, np.log(p))
    return out


def _fold_in(model: Any, corpus: Corpus, key: Array, num_sweeps: int) -> np.ndarray:
    """theta of the documents of `corpus` (over the model's vocabulary already) by the model's
    fold-in; a corpus without any token gets the prior mean through a dummy document."""
    if corpus.num_tokens == 0:
        return _prior_fold_in(model, corpus, key, num_sweeps)
    data = model._module.prepare(corpus, model.params)
    return np.asarray(model._module.fold_in(key, model._state, data, model.params, num_sweeps))


def _prior_fold_in(model: Any, template: Corpus, key: Array, num_sweeps: int) -> np.ndarray:
    """theta of `template`'s documents (their labels, where the model uses them) as if they had
    no tokens: the model's fold-in of them beside one dummy one-token document."""
    d = template.num_docs
    dummy = Corpus.from_arrays(np.zeros(1, np.int32), np.append(np.zeros(d + 1, np.int64), 1),
                               model.vocab, sentence_offsets=(None if template.sentence_offsets is None
                                                              else np.asarray([0, 1])),
                               **_extend_labels(template))
    return _fold_in(model, dummy, key, num_sweeps)[:d]


def _extend_labels(corpus: Corpus) -> dict[str, Any]:
    labels = _labels_of(corpus)
    if labels:
        labels["labels"] = list(labels["labels"]) + [labels["labels"][-1]]
    return labels


def _exact_method(model: Any, corpus: Corpus, key: Array) -> np.ndarray:
    data = model._module.prepare(corpus, model.params)
    return np.asarray(model._module.held_out_exact(model._state, data, model.params), np.float64)


def _corrected_theta_method(model: Any, corpus: Corpus, key: Array, num_sweeps: int = 50) -> np.ndarray:
    num_sweeps = check_positive_int(num_sweeps, "num_sweeps")
    data = model._module.prepare(corpus, model.params)
    return np.asarray(model._module.held_out_doc_log_likelihood(key, model._state, data, model.params,
                                                                num_sweeps), np.float64)


_METHODS = {"left_to_right": _left_to_right_method, "completion": _completion_method,
            "exact": _exact_method, "corrected_theta": _corrected_theta_method}
