"""The fitted model: ``FittedModel``, what every estimator's ``fit`` and ``jaxtopics.load``
return (``FittedHDP`` adds HDP's ``to_lda``). It holds one chain (params, final state, trace,
vocabulary, seed, the corpus fingerprint) and gives its read-outs (``topic_word``, ``doc_topic``,
``assignments``, ``top_words``, ``coherence``, ``summary``; the model-specific ones are the keys
of the model module's ``estimate()``), continues the chain (``resume``, on one device or
sharded), folds in new documents (``transform``; ``log_likelihood`` and ``perplexity`` through
``jaxtopics.evaluation``) and writes the model file (``save``). The model module behind a model
name is looked up in the estimators' registry (``estimators.MODELS``) at call time, since
estimators.py imports this module (that import also fills the registry for a model unpickled in
a fresh process).
"""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__, memory
from .corpus import Corpus, TextOptions
from .devices import _on_every_process, _require_same_settings, resolve_devices
from .errors import CorpusError, ParameterError, ShardLayoutWarning
from .fit import TracePoint, chain_keys, check_callback, in_32_bits, run_sweeps
from .io import encode_strings, save_model_file
from .model_files import _check_file_name, _check_writable_file, _rebuilt, trace_arrays
from .models import base, hdp, lda
from .new_documents import TransformInfo, _map_new_documents, _warn_unknown_words
from .validate import INT32_MAX, as_sequence, check_int, check_number, check_positive_int, seed_key

__all__ = ["FittedModel", "FittedHDP", "params_repr"]


def _topic_ids(topics: Any, num_topics: int) -> np.ndarray:
    """`topics` as int64 ids: a 1-D sequence of ints, or a boolean mask of length num_topics."""
    ids = np.asarray(as_sequence(topics))
    if ids.ndim != 1:
        raise ParameterError(f"topics must be a 1-D sequence of topic ids or a boolean mask, got "
                             f"{type(topics).__name__} of shape {ids.shape}")
    if ids.dtype == bool:
        if ids.shape[0] != num_topics:
            raise ParameterError(f"a boolean mask of topics needs one entry per topic "
                                 f"({num_topics}), got {ids.shape[0]}")
        return np.flatnonzero(ids)
    if ids.size and ids.dtype.kind not in "iu":
        raise ParameterError(f"topics must be integer topic ids, got dtype {ids.dtype}")
    return ids.astype(np.int64)


class FittedModel:
    """A fitted chain: final state, trace, and read-outs. Returned by ``Estimator.fit`` and
    ``jaxtopics.load``; the chain continues with ``resume``; ``save``/``jaxtopics.load`` persist it.

    Attributes:
        model: the model's name ("lda", "dmm", ...).
        params: the model module's Params.
        vocab: the training corpus's vocabulary.
        seed: the chain's seed.
        sweeps_done: sweeps run so far.
        trace: the evaluations along the chain (a list of :class:`TracePoint`).
        corpus_fingerprint: the training corpus's ``Corpus.fingerprint`` (``resume`` checks it).
        num_tokens: N, the training corpus's tokens.
        text_options: how the training texts were tokenised (``TextOptions``), or None.
        last_transform: a TransformInfo on the latest ``transform``, or None.

    Args:
        model, params, vocab, seed, corpus_fingerprint, sweeps_done, trace, num_tokens: the
            attributes above (an estimator's ``fit`` and ``jaxtopics.load`` build the object).
        state: the chain's State (a pytree of device arrays).
        data: the model's prepared Data of the training corpus, or None (prepared on ``resume``).

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> model
        FittedModel(model='lda', num_topics=2, ..., sweeps_done=50, seed=0)
        >>> model.topic_word.shape, model.doc_topic.shape, model.assignments.shape
        ((2, 6), (20, 2), (80,))
    """

    text_options: TextOptions | None = None
    last_transform: TransformInfo | None = None
    #: names of the label ids of a multi-label corpus (DP-MRM), kept so that new documents'
    #: labels are matched by name
    label_names: tuple[str, ...] | None = None
    #: devices the chain has run on so far (None: one); ``resume`` keeps it unless told otherwise
    shards: int | None = None
    #: processes those devices belonged to (a multi-process run splits the documents between
    #: its processes first, so 2 processes x 2 devices is another chain than 1 x 4); None:
    #: not recorded (a sharded run saved before 2026-12-03)
    processes: int | None = 1

    def __init__(self, model: str, params: Any, vocab: tuple[str, ...], seed: int,
                 state: Any, data: Any, corpus_fingerprint: str, sweeps_done: int,
                 trace: list[TracePoint], num_tokens: int):
        self.model = model
        self.params = params
        self.vocab = vocab
        self.seed = seed
        self.sweeps_done = sweeps_done
        self.trace = trace
        self.corpus_fingerprint = corpus_fingerprint
        self.num_tokens = num_tokens
        self._state = state
        self._data = data
        self._tables_from_file = False   # load(): resume checks them against the latents

    @property
    def _module(self) -> ModuleType:
        from .estimators import MODELS     # at call time: estimators.py imports this module
        return base.kernel_module(MODELS[self.model].module, self.params)

    def _num_units(self, corpus: Corpus) -> int:
        """What the model's ``SweepInfo.changed`` counts out of: tokens, or documents for a model
        declaring ``CHANGED_UNIT = "documents"`` (over all processes of a multi-process run)."""
        if getattr(self._module, "CHANGED_UNIT", "tokens") != "documents":
            return self.num_tokens
        from .distributed import process_sum
        return process_sum(corpus.num_docs)

    @property
    def state(self) -> Any:
        """The functional chain state (a pytree of device arrays)."""
        return self._state

    @property
    def _state(self) -> Any:
        """The chain state in corpus order. A sharded run keeps its sharded state and gathers it
        only when it is read (in a multi-process run every process must read it: a collective)."""
        pending = self.__dict__.get("_pending")
        if pending is not None:
            sharded, to_global = pending
            self.__dict__["_state_value"] = to_global(sharded)
            self.__dict__["_pending"] = None
        return self.__dict__["_state_value"]

    @_state.setter
    def _state(self, value: Any) -> None:
        self.__dict__["_state_value"] = value
        self.__dict__["_pending"] = None

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and copy: the live chain state (a pending sharded one gathered; the
        buffers a run donated are gone) without the read-out cache, which is rebuilt."""
        self._state                                   # noqa: B018 (gathers a pending state)
        return {k: v for k, v in self.__dict__.items() if k != "_estimate_cache"}

    @property
    def num_topics(self) -> int:
        """K: rows of ``topic_word`` (for nonparametric models, the active topics / clusters)."""
        return int(self._estimates()["phi"].shape[0])

    @in_32_bits
    def _estimates(self) -> dict[str, np.ndarray]:
        """The model module's ``estimate(state, params)`` as numpy, cached until the state moves."""
        cache = self.__dict__.get("_estimate_cache")
        if cache is None or cache[0] is not self._state:
            values = {k: np.asarray(v) for k, v in self._module.estimate(self._state, self.params).items()}
            cache = self.__dict__["_estimate_cache"] = (self._state, values)
        return cache[1]

    def __getattr__(self, name: str) -> Any:
        """Model-specific read-outs: every key of the module's ``estimate`` dict other than
        theta/phi (e.g. DMM's ``labels``, Sentence-LDA's ``sentence_topics``)."""
        if name.startswith("_") or "_state_value" not in self.__dict__:
            raise AttributeError(name)
        values = self._estimates()
        if name in values and name not in ("theta", "phi"):
            value = values[name]
            return value.item() if value.ndim == 0 else value    # a count reads as a number
        raise AttributeError(f"{type(self).__name__} of model {self.model!r} has no attribute {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | (set(self._estimates()) - {"theta", "phi"}))

    @property
    def topic_word(self) -> np.ndarray:
        """phi [K, V]: p(word | topic), rows sum to 1."""
        return self._estimates()["phi"]

    @property
    def doc_topic(self) -> np.ndarray:
        """theta [D, K]: p(topic | document), rows sum to 1."""
        return self._estimates()["theta"]

    @property
    @in_32_bits
    def assignments(self) -> np.ndarray:
        """Topic of every token [N] int32, aligned with ``corpus.word_ids``."""
        return np.asarray(self._module.assignments(self._state))

    @in_32_bits
    def log_joint_per_token(self) -> float:
        """Collapsed log p(w, z) / N of the current state (tomotopy's ``ll_per_word``).

        Returns:
            A float: the trace's last value when it was evaluated at this state (so a fitted
            model, its trace and the model loaded from its file agree to the bit, on any
            number of devices)."""
        if self.trace and self.trace[-1].sweep == self.sweeps_done:    # evaluated at this state
            return self.trace[-1].log_joint_per_token
        if self._data is not None:
            lj = jax.jit(self._module.log_joint, static_argnums=2)(self._state, self._data, self.params)
            return float(lj) / self.num_tokens
        lj = _log_joint_of_state(self._module, self._state, self.params)
        if lj is not None:
            return lj / self.num_tokens
        return self.trace[-1].log_joint_per_token if self.trace else float("nan")

    def top_words(self, n: int = 10, topic: int | None = None
                  ) -> list[list[tuple[str, float]]] | list[tuple[str, float]]:
        """The n most probable words of each topic, in ``top_word_ids``'s order: a topic's words
        with counts first; where it holds fewer than n distinct words the rest are filled in at
        the prior's p.

        Args:
            n: words per topic.
            topic: one topic's index, or None for every topic.

        Returns:
            One list of (word, p) pairs per topic, or the one list of `topic`.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> sorted(sorted(word for word, p in words) for words in model.top_words(3))
            [['apple', 'banana', 'cherry'], ['car', 'engine', 'wheel']]
        """
        n = check_positive_int(n, "n (the number of top words)", high=None)
        if topic is not None:
            topic = check_int(topic, "topic", high=None)
        phi = self.topic_word
        if topic is not None and not 0 <= topic < phi.shape[0]:
            raise ParameterError(f"topic {topic} out of range [0, {phi.shape[0]})")
        topics = np.arange(phi.shape[0]) if topic is None else np.array([topic])
        out = [[(self.vocab[i], float(phi[k, i])) for i in ids]
               for k, ids in zip(topics, self.top_word_ids(n, topics))]
        return out if topic is None else out[0]

    def top_word_ids(self, n: int = 10, topics: Any = None) -> np.ndarray:
        """The n most probable words' ids of each topic, by decreasing phi, ties by lower id (as
        ``top_words``); sorted a few thousand topics at a time, with no Python object per word:
        the way to read the top words of 10^6 topics.

        The words a topic holds tokens of (count > 0) come first; the others all have the
        prior's phi, and fill in a topic that holds fewer than n distinct words: words some
        topic holds before words no training token is (a vocabulary built on more documents
        than the model saw), each by lower id.

        Args:
            n: words per topic.
            topics: topic ids (a 1-D sequence of ints) or a boolean mask over the topics; None:
                all K.

        Returns:
            int64 [topics, min(n, V)]: word ids into ``vocab``.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> sorted(model.vocab[i] for i in model.top_word_ids(1)[:, 0])
            ['apple', 'car']
        """
        n = check_positive_int(n, "n (the number of top words)", high=None)
        phi = self.topic_word
        topics = np.arange(phi.shape[0]) if topics is None else _topic_ids(topics, phi.shape[0])
        bad = topics[(topics < 0) | (topics >= phi.shape[0])]
        if bad.size:
            raise ParameterError(f"topics out of range [0, {phi.shape[0]}): {bad.tolist()[:10]}")
        floors_used = self._count_floors()
        rows = max(1, 2**22 // max(phi.shape[1], 1))
        out = []
        for i in range(0, len(topics), rows):
            block = phi[topics[i:i + rows]]
            if floors_used is None:                  # phi alone: a model of another form
                out.append(np.argsort(-block, axis=1, kind="stable")[:, :n])
                continue
            floors, used = floors_used
            held = block > floors[topics[i:i + rows], None]
            # last key first: held, then phi, then used in the model; ties by lower id (stable)
            unused = np.broadcast_to(~used, block.shape)
            out.append(np.lexsort((unused, -block, ~held), axis=1)[:, :n])
        return np.concatenate(out or [np.zeros((0, min(n, phi.shape[1])), np.int64)])

    def _count_floors(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(floor [K], used [V]): a word has tokens in topic k iff phi_kw > floor_k, and `used`
        marks the words some topic holds; None where phi is not (n_kw + beta) / (n_k + V beta)
        with one topic per token (every built-in model is), so counts cannot be read off it.

        floor_k = (beta + 1/2) / (n_k + V beta), halfway between a count of 0 and of 1; n_k
        from the assignments. One pass over phi (cheaper than the sort that follows it)."""
        phi = self.topic_word
        k, v = phi.shape
        beta = self._estimates().get("beta", getattr(self.params, "beta", None))   # as learned
        if isinstance(beta, np.ndarray) and beta.ndim == 0 and beta.dtype.kind == "f":
            beta = float(beta)
        z = np.asarray(self.assignments)
        result = None
        if (isinstance(beta, numbers.Real) and not isinstance(beta, (bool, np.bool_))
                and 0 < float(beta) < np.inf and z.shape == (self.num_tokens,)):
            beta = float(beta)
            z = z[(z >= 0) & (z < k)]
            scale = np.bincount(z, minlength=k)[:k] + v * beta        # n_k + V beta
            floors = (beta + 0.5) / scale
            used = np.zeros(v, bool)
            consistent = True
            rows = max(1, 2**22 // max(v, 1))
            for i in range(0, k, rows):
                block = phi[i:i + rows].astype(np.float64) * scale[i:i + rows, None] - beta
                consistent &= bool((block > -0.25).all())     # counts >= 0 read back
                used |= (block > 0.5).any(0)
            result = (floors, used) if consistent else None
        return result

    def coherence(self, corpus: Corpus, measure: str = "c_v", top_n: int = 10, *,
                  window_size: int | None | str = "default", topics: Any = None,
                  eps: float = 1e-12) -> np.ndarray:
        """The coherence of each topic's top words in a reference corpus.

        Only words a topic holds tokens of are scored: a topic holding fewer than `top_n`
        distinct words is scored on those it holds (``top_words`` fills in the rest at the
        prior's p, words the topic never drew), and one holding fewer than 2 (none: an empty
        topic or cluster) scores NaN (``np.nanmean`` averages the rest). So the training corpus
        holds every scored word. Words are matched to the corpus by their string. In a
        multi-process run every process calls it with its own documents (a collective): the
        counts are summed over them.

        Args:
            corpus: the reference corpus (usually the training corpus).
            measure: ``jaxtopics.topic_coherence``'s measures: "c_v" (default), "c_npmi",
                "c_uci", "u_mass".
            top_n: the top words scored per topic.
            window_size, eps: as in ``jaxtopics.topic_coherence``.
            topics: as in ``top_word_ids`` (default all K).

        Returns:
            float64 [topics]: one score per topic.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> model.coherence(corpus, "c_npmi", top_n=3).shape
            (2,)
        """
        from .coherence import WindowCounts, check_measure, words_coherence
        from .distributed import process_sum
        check_measure(measure, window_size)
        top_n = check_positive_int(top_n, "top_n", high=None)
        if min(top_n, len(self.vocab)) < 2:
            raise ParameterError("coherence needs at least 2 top words per topic (it scores pairs), "
                                 f"got top_n={top_n} of a vocabulary of {len(self.vocab)}")
        ids = np.arange(self.num_topics) if topics is None else _topic_ids(topics, self.num_topics)
        top = self.top_word_ids(top_n, ids)
        floors_used = self._count_floors()
        if floors_used is None:             # counts unknown: every top word, as ranked by phi
            sizes = np.full(len(ids), top.shape[1])
            hint = ("or fewer top words (top_n): this model's phi does not tell which words a "
                    "topic holds tokens of, so its last top words may be ones it never drew")
        else:                               # the leading words a topic holds tokens of
            phi, floors = self.topic_word, floors_used[0]
            rows = max(1, 2**22 // max(phi.shape[1], 1))
            held = [(phi[ids[i:i + rows]] > floors[ids[i:i + rows], None]).sum(1)
                    for i in range(0, len(ids), rows)]
            sizes = np.minimum(np.concatenate(held or [np.zeros(0, np.int64)]), top.shape[1])
            hint = "(e.g. the training corpus, which holds every word scored)"
        scored = (sizes >= 2) & ~_empty_topics(self)[ids]
        out = np.full(len(ids), np.nan)
        words = [[self.vocab[i] for i in row] for row in top[scored]]

        def total(counts: WindowCounts) -> WindowCounts:   # several processes: their documents
            return WindowCounts(*(process_sum(c) for c in counts))
        out[scored] = words_coherence(words, corpus, measure, window_size=window_size, eps=eps,
                                      total=total, sizes=sizes[scored], names=ids[scored].tolist(),
                                      hint=hint)
        return out

    def to_pyldavis(self, corpus: Corpus) -> dict[str, Any]:
        """The keyword arguments of ``pyLDAvis.prepare`` for this model, every model alike:
        ``pyLDAvis.save_html(pyLDAvis.prepare(**model.to_pyldavis(corpus)), "vis.html")``.

        topic_term_dists is phi and doc_topic_dists theta, both over the topics (clusters) that
        hold a token: empty ones are left out (pyLDAvis cannot place a topic of size 0) and the
        others keep their order, so with ``start_index=0`` and ``sort_topics=False`` (both
        returned) pyLDAvis's topic i is this model's topic i while none is empty (else the
        i-th non-empty one). DMM and DPMM give each document's cluster as a one-hot row (their
        memberships, so the sizes pyLDAvis shows are the clusters' tokens). Words no training
        token uses (an all-zero column of ``Corpus.from_sparse``) are left out of the vocabulary
        (pyLDAvis divides by a word's frequency), phi's rows renormalised over the others.
        Needs no optional package itself; pyLDAvis is in the ``interop`` extra.

        Args:
            corpus: the training corpus (checked by fingerprint, as ``resume`` checks it): its
                document lengths and word frequencies are pyLDAvis's doc_lengths and
                term_frequency.

        Returns:
            {"topic_term_dists": float64 [K', V'], "doc_topic_dists": float64 [D, K'],
            "doc_lengths": int64 [D], "vocab": V' words, "term_frequency": int64 [V'],
            "sort_topics": False, "start_index": 0}, and "mds" (the topic at the origin) when
            a single topic holds tokens (pyLDAvis's own scaling fails on one).

        Raises:
            CorpusError: not the training corpus, or no topic holds a token.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> kw = model.to_pyldavis(corpus)      # then pyLDAvis.prepare(**kw)
            >>> kw["topic_term_dists"].shape, kw["doc_topic_dists"].shape, kw["sort_topics"]
            ((2, 6), (20, 2), False)
        """
        from .interop import pyldavis_kwargs
        return pyldavis_kwargs(self, corpus)

    def doc_topic_frame(self, corpus: Corpus | None = None) -> Any:
        """``doc_topic`` (theta) as a pandas DataFrame (pandas: the ``interop`` extra).

        Args:
            corpus: the training corpus, whose ``doc_names`` become the index; None (or a
                corpus without names): the document ids 0..D-1.

        Returns:
            A DataFrame [D, K], index named "document", columns the topic ids (named "topic").

        Raises:
            CorpusError: `corpus` has another number of documents than the model.
            ImportError: pandas is not installed (the message says what to install).
        """
        from .interop import doc_topic_frame
        return doc_topic_frame(self, corpus)

    def topic_word_frame(self) -> Any:
        """``topic_word`` (phi) as a pandas DataFrame (pandas: the ``interop`` extra).

        Returns:
            A DataFrame [K, V], index the topic ids (named "topic"), columns the words (named
            "word").

        Raises:
            ImportError: pandas is not installed (the message says what to install).
        """
        from .interop import topic_word_frame
        return topic_word_frame(self)

    def summary(self, n: int = 8) -> str:
        """Human-readable summary: model, sizes, hyper-parameters, trace, top words per topic.

        Args:
            n: top words shown per topic.

        Returns:
            The summary, one line per topic after a header.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> print(model.summary(n=3))
            <LDA K=2, V=6, N=80, D=20, sweeps=50, seed=0>
            params: num_topics=2, alpha=0.1, beta=0.01, ...
            log joint per token: ... (after 50 sweeps)
            topics (share of tokens: top words):
              #0 ...
              #1 ...
        """
        n = check_positive_int(n, "n (the number of top words)", high=None)
        p = self.params
        theta = self.doc_topic
        share, what = _topic_shares(self, theta)
        lines = [f"<{self.model.upper()} K={self.num_topics}, V={len(self.vocab)}, "
                 f"N={self.num_tokens}, D={theta.shape[0]}, sweeps={self.sweeps_done}, seed={self.seed}"
                 + (f", devices={self.shards}" if self.shards else "") + ">",
                 "params: " + ", ".join(_shown_param(k, v, self._estimates(),
                                                     getattr(p, "resample_concentrations", False))
                                        for k, v in p._asdict().items())]
        if self.trace:
            last = self.trace[-1]
            lines.append(f"log joint per token: {last.log_joint_per_token:.4f} (after {last.sweep} sweeps)")
        lines.append(f"topics ({what}: top words):")
        empty = _empty_topics(self)
        shown = np.flatnonzero(~empty)
        for k, ids in zip(shown, self.top_word_ids(n, shown)):
            lines.append(f"  #{k:<3d} {share[k]:6.1%}  " + " ".join(self.vocab[i] for i in ids))
        if empty.any():
            lines.append(f"  ({int(empty.sum())} empty topics / clusters not shown)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        # the settings, not the read-outs: a repr must not compute phi (GBs for a large K)
        return (f"FittedModel(model={self.model!r}, {params_repr(self.params)}, "
                f"sweeps_done={self.sweeps_done}, seed={self.seed})")

    # -- continuing and persisting -----------------------------------------------------------

    @in_32_bits
    def resume(self, corpus: Corpus, num_sweeps: int, *, eval_every: int = 10,
               progress: bool | None = None, checkpoint_every: int | None = None,
               checkpoint_path: str | os.PathLike | None = None,
               devices: int | str | None = None,
               callback: Callable[[TracePoint, "FittedModel"], Any] | None = None
               ) -> "FittedModel":
        """Continue the same chain for `num_sweeps` more sweeps (in place).

        Bitwise identical to having run all sweeps at once (with the same `devices`), also when
        a `callback` stopped a run early and it is resumed from there.

        Args:
            corpus: the corpus the model was fitted on (checked by fingerprint).
            num_sweeps: sweeps to run.
            eval_every: sweeps between trace points (and one at the end).
            progress: a progress bar; None: only when stderr is a terminal.
            checkpoint_every, checkpoint_path: save the model to `checkpoint_path` (atomically)
                every `checkpoint_every` sweeps; the two go together.
            devices: shard the documents over the first `devices` devices
                (``jaxtopics.distributed``: the model's ``parallel`` kernel, for every model
                whose module declares ``SHARDING``: all of them; LDA's MH draws are refused);
                ``"auto"`` uses every device of ``jax.devices()`` when the model's kernel can be
                sharded, else one (``resolve_devices``). None continues on the devices the
                chain ran on so far (``shards``, saved in the model file); another count
                continues as a different chain (``ShardLayoutWarning``).
            callback: called as ``callback(point, model)`` at every trace point (every
                `eval_every` sweeps and at the end) with the :class:`TracePoint` and this
                model as it stands there (its read-outs, ``save``, ... are of that sweep).
                Returning ``False`` stops the run cleanly at that point (``sweeps_done`` and
                the trace end there; with a checkpoint path, the checkpoint is written there
                too); None or True go on. An exception it raises propagates, the model
                holding the state of that point and no file half written.

        Returns:
            self, with ``sweeps_done`` and ``trace`` extended.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> model.resume(corpus, num_sweeps=10).sweeps_done
            60
        """
        _require_same_settings(**self.params._asdict(), model=self.model, seed=self.seed,
                               sweeps_done=self.sweeps_done, num_sweeps=num_sweeps,
                               eval_every=eval_every, checkpoint_every=checkpoint_every,
                               devices=devices)
        _check_same_corpus(self, corpus)
        if self._data is None and jax.process_count() == 1:
            self._data = self._module.prepare(corpus, self.params)
            rebuild = getattr(self._module, "rebuild", None)     # recount tables from the latents
            if rebuild is not None:        # checked when read from a file (not e.g. to_lda())
                self._state = _rebuilt(rebuild, self._state, self._data, self.params,
                                       check=self._tables_from_file)
        self._tables_from_file = False
        num_sweeps, eval_every, checkpoint_every = _check_sweeps(
            num_sweeps, eval_every, checkpoint_every, checkpoint_path, progress)
        if self.sweeps_done + num_sweeps > INT32_MAX:    # sweep numbers are int32 in the driver
            raise ParameterError(f"num_sweeps={num_sweeps} after {self.sweeps_done} sweeps done "
                                 f"passes the last sweep number, {INT32_MAX}")
        _, chain_key = chain_keys(self.seed)

        def save_checkpoint(state, done, trace):
            self.save(checkpoint_path)

        model, data, state, to_global = self._module, self._data, self._state, (lambda st: st)
        devices = resolve_devices(self._module, self.params, corpus,
                                  self.shards if devices is None else devices)
        processes = jax.process_count()
        layout_changed = None        # warned once the run is set up (a refused run warns nothing)
        if (devices or 1) != (self.shards or 1) and self.sweeps_done > 0:
            same = (f"pass devices={self.shards or 1} (on the command line: --devices "
                    f"{self.shards or 1}) to continue the same chain")
            if processes > 1:                  # the CLI's --devices counts one process's devices
                per = (self.shards or 1) / processes
                same = (f"pass devices={self.shards or 1}, the total over all processes, to "
                        "continue the same chain; on the command line leave --devices out"
                        + (f" or give --devices {int(per)}" if per == int(per) else ""))
            layout_changed = (f"this chain ran on {self.shards or 1} device(s) so far and "
                              f"continues on {devices or 1}: the result differs from an "
                              f"uninterrupted run ({same})")
        elif (self.processes not in (None, processes) and self.sweeps_done > 0
              and (devices or 1) > 1):
            layout_changed = (f"this chain ran on {self.shards} devices of {self.processes} "
                              f"process(es) so far and continues on {devices} devices of "
                              f"{processes}: the documents may be split between the devices "
                              f"differently, so the result can differ from an uninterrupted run "
                              f"(run it with {self.processes} process(es) to continue the same "
                              f"chain)")
        if devices is not None:
            model, data, state, to_global = self._sharded(corpus, devices)
        if layout_changed:
            warnings.warn(layout_changed, ShardLayoutWarning, stacklevel=3)   # past in_32_bits
        self.shards = devices if devices and devices > 1 else None     # 1 shard == the plain run
        self.processes = processes if self.shards else 1

        def keep(state, done, trace):   # the input buffers are donated: always hold the latest
            self.__dict__["_pending"] = (state, to_global)     # gathered only when read
            self.__dict__.pop("_estimate_cache", None)           # of a donated (deleted) state
            self.sweeps_done, self.trace = done, old_trace + _shifted(trace)

        old_trace = list(self.trace)
        offset = old_trace[-1].seconds if old_trace else 0.0     # seconds count on over resumes

        def _shifted(trace):
            return [p._replace(seconds=p.seconds + offset) for p in trace]
        on_eval = None
        if callback is not None:
            check_callback(callback)

            def on_eval(point):
                if num_sweeps == 0:            # no chunk ran: the model holds the state already
                    if old_trace and old_trace[-1].sweep == point.sweep:
                        return callback(old_trace[-1], self)
                    self.trace = old_trace + _shifted([point])
                return callback(self.trace[-1], self)
        stop = self.sweeps_done + num_sweeps
        state, trace = run_sweeps(
            model, self.params, data, state, chain_key,
            start=self.sweeps_done, num_sweeps=num_sweeps, num_tokens=self.num_tokens,
            num_units=self._num_units(corpus), eval_every=eval_every, progress=progress,
            checkpoint_every=checkpoint_every if checkpoint_path else None,
            on_checkpoint=save_checkpoint, on_chunk=keep, on_eval=on_eval)
        if old_trace and trace and trace[0].sweep == old_trace[-1].sweep:
            trace = trace[1:]                  # resume(0) of a state evaluated already
        self.trace = old_trace + _shifted(trace)
        if (self.sweeps_done < stop and checkpoint_path is not None and checkpoint_every
                and self.sweeps_done % checkpoint_every):
            self.save(checkpoint_path)         # stopped by the callback: checkpoint the stop
        return self

    def _sharded(self, corpus: Corpus, devices: int):
        """(model, data, state, to_global) to run this chain sharded over `devices` devices."""
        from . import distributed

        if base.sharding(self._module) is None:
            raise ParameterError(f"devices=: the {self.model!r} model has no sharded kernel yet")
        if not isinstance(devices, (int, np.integer)) or isinstance(devices, bool) or devices < 1:
            raise ParameterError(f"devices must be a positive integer, got {devices!r}")
        mesh = distributed.make_mesh(devices)
        sdata = distributed.prepare(corpus, self.params, devices, module=self._module)
        local = self.__dict__.get("_local_state", False)     # a multi-process fit's own init
        shards = distributed.shard_state(self._state, sdata, local=local)
        _on_every_process(lambda: memory.check_fits(
            distributed.bytes_per_device(shards, sdata), mesh.local_devices,
            f"the state on {devices} devices", shards, self.params), "fit the state in memory")
        state, sdata = distributed.place(shards, sdata, mesh)
        if jax.process_count() > 1:
            state = distributed.recount(state, sdata, self.params)   # global tables over processes
        self.__dict__["_local_state"] = False
        return (distributed.Sharded(self._module, mesh), sdata, state,
                lambda st: distributed.gather(st, sdata))

    @in_32_bits
    def transform(self, docs: Corpus | Iterable[str], num_sweeps: int = 50,
                  seed: int = 0) -> np.ndarray:
        """Topic proportions of unseen documents (fold-in with the topics held fixed).

        Every token is mapped onto the model's vocabulary by its word, never by its id: tokens
        of words the model does not know are dropped, counted in ``self.last_transform`` (a
        TransformInfo) and reported with an UnknownWordsWarning. A document left with no known
        word gets the prior mean.

        Args:
            docs: raw texts, tokenised as the training texts were (``self.text_options``: the
                model remembers how ``Corpus.from_texts`` tokenised them), or a Corpus with its
                own vocabulary.
            num_sweeps: fold-in sweeps.
            seed: the fold-in's seed.

        Returns:
            theta [D_new, K], rows sum to 1.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> theta = model.transform(["cherry apple banana", "car wheel"])
            >>> theta.shape, theta.sum(1).round(2).tolist()
            ((2, 2), [1.0, 1.0])
            >>> theta.argmax(1).tolist() == model.doc_topic[:2].argmax(1).tolist()  # the twins'
            True
        """
        num_sweeps = check_positive_int(num_sweeps, "num_sweeps")
        key = seed_key(seed)
        corpus, info = _map_new_documents(self, docs)
        self.last_transform = info
        _warn_unknown_words(info, "transform", f"{len(info.empty_docs)} of {info.num_docs} "
                            "documents have no known word left (their theta is the prior mean)")
        data = self._module.prepare(corpus, self.params)
        theta = self._module.fold_in(key, self._state, data, self.params, num_sweeps)
        return np.asarray(theta)[:info.num_docs]

    @in_32_bits
    def log_likelihood(self, docs: Corpus | Iterable[str], method: str | None = None,
                       seed: int = 0, **options: Any) -> np.ndarray:
        """Held-out log p(w_d | trained model) in nats, one value per document.

        Args:
            docs: a Corpus or raw texts, matched to the model's vocabulary by word as in
                ``transform``.
            method: "left_to_right" (Wallach et al. 2009; the default of the token and sentence
                models), "completion" (theta folded in from a seeded random half of each
                document's tokens, the other half scored), "exact" (DMM, DPMM: the sum over
                clusters, their default), "corrected_theta" (DP-MRM's own, its default); None:
                the model's default.
            seed: the seed of the particles or of the fold-in.
            **options: ``num_particles=10`` (left-to-right), ``num_sweeps=50`` (fold-in). See
                ``jaxtopics.evaluation``.

        Returns:
            float64 [D]: log p(w_d) of each document.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> ll = model.log_likelihood(["cherry apple banana", "car wheel"], seed=1)
            >>> ll.shape, bool((ll < 0).all())
            ((2,), True)
        """
        from . import evaluation
        return evaluation.log_likelihood(self, docs, method, seed, **options)

    @in_32_bits
    def perplexity(self, docs: Corpus | Iterable[str], method: str | None = None, seed: int = 0,
                   **options: Any) -> float:
        """Held-out perplexity exp(-sum_d log p(w_d) / scored tokens).

        Args:
            docs, method, seed, **options: as in ``log_likelihood`` ("completion" scores the
                second halves' tokens).

        Returns:
            The perplexity, a float (lower is better; V for a uniform model).

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> 1 < model.perplexity(["cherry apple banana", "car wheel"]) < corpus.num_words
            True
        """
        from . import evaluation
        return evaluation.perplexity(self, docs, method, seed, **options)

    @in_32_bits
    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one file (npz + json metadata, version-tagged, atomic).

        Args:
            path: the file (``.jtm`` by convention); ``jaxtopics.load`` reads it back.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> model.save("lda.jtm")
            >>> jt.load("lda.jtm").sweeps_done
            50
        """
        _check_file_name(path)
        state = self._state            # every process of a multi-process run gathers it ...
        if jax.process_index() != 0:    # ... and process 0 alone writes the file
            return
        arrays = {f"state.{k}": np.asarray(v) for k, v in state._asdict().items()}
        arrays["vocab.utf8"], arrays["vocab.offsets"] = encode_strings(self.vocab)
        arrays.update(trace_arrays(self.trace))
        options = self.text_options
        meta = {"model": self.model, "params": self.params._asdict(), "seed": self.seed,
                "sweeps_done": self.sweeps_done, "num_tokens": self.num_tokens,
                "shards": self.shards or 1, "processes": self.processes,
                "num_docs": int(self.doc_topic.shape[0]),
                "text_options": None if options is None else options.to_json(),
                "label_names": None if self.label_names is None else list(self.label_names),
                "corpus_fingerprint": self.corpus_fingerprint, "jaxtopics_version": __version__,
                "jax_version": jax.__version__, "backend": jax.default_backend()}
        save_model_file(path, arrays, meta)


class FittedHDP(FittedModel):
    """A fitted HDP chain: FittedModel's read-outs over the active topics (largest first), plus
    ``num_active_topics``, ``topic_sizes``, ``topic_tables`` and `to_lda`."""

    @in_32_bits
    def to_lda(self, alpha: float | None = None, beta: float | None = None,
               sampler: str = "parallel", **options: Any) -> FittedModel:
        """An LDA fitted object initialised from this state, to continue with LDA's kernels.

        K = the active topics, each token keeps its topic (numbered as ``topic_word``'s rows).
        The LDA chain starts at sweep 0 with this model's seed; continue it with
        ``.resume(corpus, num_sweeps)`` (the corpus this model was fitted on).

        Args:
            alpha: LDA's alpha; None: the HDP's alpha / K (the same total prior mass per
                document).
            beta: LDA's beta; None: the HDP's.
            sampler, **options: LDA's other settings (``jt.LDA``'s arguments).

        Returns:
            A FittedModel of model "lda", at sweep 0."""
        state = self._state
        module = self._module
        slots = module.active_topics(state)
        z = jnp.asarray(module.assignments(state))
        k = int(slots.shape[0])
        if alpha is None:
            alpha = float(state.alpha) / k
        lda_params = lda.check_params(lda.Params(
            num_topics=k, alpha=check_number(alpha, "alpha"),
            beta=check_number(self.params.beta if beta is None else beta, "beta"),
            sampler=sampler, **options))
        # LDA's counts come from the HDP's own tables, so a model loaded from a file (which has
        # no corpus layout) converts exactly as one in memory: n_dk = sum of the d's tables
        # serving dish k, n_kw and n_k = the active topics' columns.
        if module is hdp:             # CRF: n_dk from the tables
            table_count = np.asarray(state.table_count)
            rank = np.full(np.asarray(state.topic_tables).shape[-1], k, np.int64)
            rank[slots] = np.arange(k)
            dish = rank[np.asarray(state.table_topic)]
            doc_topic = np.zeros((table_count.shape[0], k + 1), np.int64)
            np.add.at(doc_topic, (np.arange(table_count.shape[0])[:, None], dish), table_count)
        else:                         # direct assignment keeps n_dk
            doc_topic = np.asarray(state.doc_topic)[:, slots]
        lda_state = lda.State(z=jnp.append(z, 0).astype(jnp.int32),
                              doc_topic=jnp.asarray(doc_topic[:, :k], jnp.int32),
                              word_topic=jnp.asarray(np.asarray(state.word_topic)[:, slots], jnp.int32),
                              topic=jnp.asarray(np.asarray(state.topic)[slots], jnp.int32),
                              **{k: jnp.asarray(v) for k, v in zip(
                                  ("alpha", "beta"), lda.initial_priors(lda_params))})
        lj = _log_joint_of_state(lda, lda_state, lda_params)
        start = [TracePoint(0, lj / max(self.num_tokens, 1), 0.0, 0.0)] if lj is not None else []
        fitted = FittedModel("lda", lda_params, self.vocab, self.seed, lda_state, None,
                             self.corpus_fingerprint, 0, start, self.num_tokens)
        fitted.text_options = self.text_options
        return fitted


def params_repr(params: Any) -> str:
    """A model's parameters as keyword arguments: what an estimator's and a fitted model's
    repr show.

    Args:
        params: a model module's Params.

    Returns:
        ``"num_topics=20, alpha=0.1, ..."``."""
    return ", ".join(f"{k}={v!r}" for k, v in params._asdict().items())


def _shown_param(name: str, value: Any, estimates: dict[str, np.ndarray],
                 sampled_chain: bool = False) -> str:
    """`name=value` for ``summary``; a parameter the chain samples (its current value in the
    estimates as ``sampled_<name>``, e.g. HDP's alpha and gamma, or as `name` in a chain with
    `sampled_chain`: DPMM's and DP-MRM's ``resample_concentrations``) or learns (LDA's alpha and
    beta) shows the value in use."""
    if name == "seed_words":
        from .seed_words import describe
        return f"seed_words={describe(value)}"
    sampled = estimates.get(f"sampled_{name}")
    if sampled is not None and float(sampled) != float(np.float32(value)):
        return f"{name}={float(sampled):.4g} (sampled; started at {value})"
    learned = estimates.get(name)        # a prior the chain learns (LDA's alpha, beta)
    if (learned is not None and name not in ("theta", "phi") and np.ndim(learned) <= 1
            and isinstance(value, numbers.Real) and not isinstance(value, bool)
            and np.any(np.asarray(learned, np.float32) != np.float32(value))):
        shown = (f"{float(learned):.4g}" if np.ndim(learned) == 0 else
                 f"[{float(np.min(learned)):.4g} .. {float(np.max(learned)):.4g}, "
                 f"sum {float(np.sum(learned)):.4g}]")
        return f"{name}={shown} ({'sampled' if sampled_chain else 'learned'}; started at {value})"
    return f"{name}={value}"


def _empty_topics(model: FittedModel) -> np.ndarray:
    """[K] bool: topics / clusters that hold nothing: where the model reports sizes (a
    ``*_sizes`` read-out of length K, e.g. DMM's cluster_sizes), those of size 0; where it has
    one topic per token, those no token holds. Their top words would be the prior's alone."""
    k = model.num_topics
    empty = np.zeros(k, bool)
    for name, value in model._estimates().items():
        if name.endswith("_sizes") and np.shape(value) == (k,):
            empty = np.asarray(value) == 0
            break
    z = np.asarray(model.assignments)
    if z.shape == (model.num_tokens,):
        empty |= np.bincount(z[z >= 0], minlength=k)[:k] == 0
    return empty


def _topic_shares(model: FittedModel, theta: np.ndarray) -> tuple[np.ndarray, str]:
    """(share of each topic, label): n_k / N from the token assignments where the model has one
    topic per token, else the mean of theta over documents (and it says so)."""
    z = np.asarray(model.assignments)
    if model.num_tokens > 0 and z.shape == (model.num_tokens,):
        seated = z[z != -1]         # -1: a document not seated yet (DPMM before its first sweep)
        return np.bincount(seated, minlength=theta.shape[1]) / z.shape[0], "share of tokens"
    return theta.mean(0), "mean theta over documents"


def _fingerprint(corpus: Corpus, model: str, version: int = 2,
                 sentences: bool | None = None) -> str:
    """The corpus fingerprint as `model` sees it (sentence boundaries included for a model that
    needs them, unless `sentences` is False); in a multi-process run, of all processes'
    documents together (version 2, what new model files store, is the same for any number of
    processes)."""
    from .estimators import MODELS         # at call time, as in FittedModel._module
    sentences = MODELS[model].needs_sentences and sentences is not False
    if jax.process_count() == 1:
        return corpus.fingerprint(sentences, version)
    from . import distributed
    return distributed.global_fingerprint(corpus, sentences, version)


def _check_sweeps(num_sweeps: int, eval_every: int, checkpoint_every: int | None,
                  checkpoint_path: str | os.PathLike | None = None, progress: Any = None
                  ) -> tuple[int, int, int | None]:
    """(num_sweeps, eval_every, checkpoint_every) as Python ints after checking them (integers,
    no bools), `progress` (None or a bool) and, before any sweep runs, the checkpoint location:
    a checkpoint that cannot be written would otherwise fail only at the first checkpoint."""
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ParameterError(f"progress must be True, False or None (a bar when stderr is a "
                             f"terminal), got {type(progress).__name__} {progress!r}"[:200])
    num_sweeps = check_int(num_sweeps, "num_sweeps", low=0)
    eval_every = check_int(eval_every, "eval_every", low=1)
    if checkpoint_every is not None:
        checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
        if checkpoint_path is None:
            raise ParameterError("checkpoint_every needs checkpoint_path (where to save); "
                                 "on the command line, --checkpoint-every needs --out")
    if checkpoint_path is not None:
        if checkpoint_every is None:
            raise ParameterError("checkpoint_path needs checkpoint_every (how many sweeps "
                                 "between checkpoints)")
        _check_writable_file(checkpoint_path)
    return num_sweeps, eval_every, checkpoint_every


def _check_same_corpus(model: FittedModel, corpus: Corpus, what: str = "resume") -> None:
    """resume's check (and `what`'s): the very corpus (fingerprint) and the model's vocabulary,
    word by word."""
    if not isinstance(corpus, Corpus):
        raise CorpusError(f"{what} expects a jaxtopics.Corpus, got {type(corpus).__name__}")
    version = 2 if model.corpus_fingerprint.startswith("v2:") else 1     # older files: version 1
    fingerprint = _fingerprint(corpus, model.model, version)
    if (fingerprint != model.corpus_fingerprint and version == 1
            and _fingerprint(corpus, model.model, 1, sentences=False) == model.corpus_fingerprint):
        # a sentence model's file from before its fingerprint held the sentence boundaries
        # (commit 7ba1aed): resume's recount checks the saved sentence of every token instead
        fingerprint = model.corpus_fingerprint
    if fingerprint != model.corpus_fingerprint:
        layout = (" or, for a model file written before version-2 fingerprints, a multi-process "
                  "run with another number of processes" if version == 1 else "")
        raise CorpusError(f"{what}: this corpus is not the one the model was fitted on "
                          f"(fingerprint {fingerprint[:15]} != {model.corpus_fingerprint[:15]}"
                          f"{layout})")
    if corpus.vocab != model.vocab:
        if len(corpus.vocab) != len(model.vocab):
            why = f"{len(corpus.vocab)} words, the model has {len(model.vocab)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(corpus.vocab, model.vocab)) if a != b)
            why = f"word {i} is {corpus.vocab[i]!r}, the model's is {model.vocab[i]!r}"
        raise CorpusError(f"{what}: the corpus's vocabulary differs from the model's ({why})")


def _log_joint_of_state(module: ModuleType, state: Any, params: Any) -> float | None:
    """log joint of a state without the corpus layout, if the module's needs none, else None."""
    if getattr(module, "LOG_JOINT_USES_DATA", True):
        return None
    return float(_jit_state_log_joint(module, state, params))


@partial(jax.jit, static_argnums=(0, 2))
def _jit_state_log_joint(module: ModuleType, state: Any, params: Any) -> jax.Array:
    return module.log_joint(state, None, params)
