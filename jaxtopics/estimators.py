"""User facade: ``LDA(num_topics=20).fit(corpus)`` -> a fitted model (tomotopy-short).

The functional core (``jaxtopics.models.lda``: prepare/init/sweep/...) stays available for users
who want to vmap chains or write kernels; this module only wires it to the driver (fit.py) and
to model files (io.py). Every later model follows the same public contract:
``Estimator(...).fit(corpus, num_sweeps, seed)`` -> ``FittedModel`` with ``topic_word``,
``doc_topic``, ``assignments``, ``log_joint_per_token()``, ``trace``, ``top_words(n)``,
``summary()``, ``save(path)``, ``resume(corpus, num_sweeps)``; ``jaxtopics.load(path)``.
"""

from __future__ import annotations

import errno
import inspect
import numbers
import os
import warnings
from collections.abc import Iterable
from functools import partial
from types import ModuleType
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__, memory
from .corpus import Corpus, TextOptions, split_sentences
from .errors import (CorpusError, FormatError, ParameterError, ShardLayoutWarning, UnknownWordsWarning,
                     warn_caller)
from .fit import TracePoint, chain_keys, in_32_bits, run_sweeps
from .io import CHECKSUM_KEY, decode_strings, encode_strings, load_model_file, save_model_file
from .models import dmm, dpmm, dpmrm, hdp, lda, ptm, slda
from .options import MODEL_OPTIONS, Option
from .validate import INT32_MAX, as_sequence, check_int, check_positive_int, check_seed, seed_key

__all__ = ["LDA", "DMM", "DPMM", "DPMRM", "HDP", "PTM", "SentenceLDA", "FittedModel", "FittedHDP",
           "Option", "TransformInfo", "load", "MODELS"]

#: model name -> estimator class (filled by ``_Estimator.__init_subclass__``), for load() and the CLI
MODELS: dict[str, type["_Estimator"]] = {}


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
    """A fitted chain: final state, trace, and read-outs. Returned by ``Estimator.fit``.

    Attributes: model (name), params, vocab, seed, sweeps_done, trace (list of TracePoint),
    corpus_fingerprint, text_options (how the training texts were tokenised, or None),
    last_transform (a TransformInfo on the latest ``transform``). The chain continues with
    ``resume``; ``save``/``jaxtopics.load`` persist it.
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
        return MODELS[self.model].module

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
        """Collapsed log p(w, z) / N of the current state (tomotopy's ``ll_per_word``): the
        trace's last value when it was evaluated at this state (so a fitted model, its trace
        and the model loaded from its file agree to the bit, on any number of devices)."""
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
        """The n most probable words of each topic as (word, p) pairs (or of one `topic`), in
        ``top_word_ids``'s order: a topic's words with counts first; where it holds fewer than n
        distinct words the rest are filled in at the prior's p."""
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
        """The n most probable words' ids of each topic (or of `topics`), [topics, min(n, V)],
        by decreasing phi, ties by lower id (as ``top_words``); sorted a few thousand topics at
        a time, with no Python object per word: the way to read the top words of 10^6 topics.
        `topics`: topic ids (a 1-D sequence of ints) or a boolean mask over the topics.

        The words a topic holds tokens of (count > 0) come first; the others all have the
        prior's phi, and fill in a topic that holds fewer than n distinct words: words some
        topic holds before words no training token is (a vocabulary built on more documents
        than the model saw), each by lower id."""
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
        """float64 [topics]: the coherence of each topic's `top_n` words in the reference
        `corpus` (usually the training corpus), ``jaxtopics.topic_coherence``'s measures:
        "c_v" (default), "c_npmi", "c_uci", "u_mass". `topics` as in ``top_word_ids`` (default
        all K). Only words a topic holds tokens of are scored: a topic holding fewer than
        `top_n` distinct words is scored on those it holds (``top_words`` fills in the rest at
        the prior's p, words the topic never drew), and one holding fewer than 2 (none: an empty
        topic or cluster) scores NaN (``np.nanmean`` averages the rest). So the training corpus
        holds every scored word. Words are matched to the corpus by their string. In a
        multi-process run every process calls it with its own documents (a collective): the
        counts are summed over them."""
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

    def summary(self, n: int = 8) -> str:
        """Human-readable summary: model, sizes, hyper-parameters, trace, top words per topic."""
        n = check_positive_int(n, "n (the number of top words)", high=None)
        p = self.params
        theta = self.doc_topic
        share, what = _topic_shares(self, theta)
        lines = [f"<{self.model.upper()} K={self.num_topics}, V={len(self.vocab)}, "
                 f"N={self.num_tokens}, D={theta.shape[0]}, sweeps={self.sweeps_done}, seed={self.seed}"
                 + (f", devices={self.shards}" if self.shards else "") + ">",
                 "params: " + ", ".join(_shown_param(k, v, self._estimates())
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
               devices: int | str | None = None) -> "FittedModel":
        """Continue the same chain for `num_sweeps` more sweeps (in place; returns self).

        Bitwise identical to having run all sweeps at once (with the same `devices`). `corpus`
        must be the one the model was fitted on (checked by fingerprint). `devices=None`
        continues on the devices the chain ran on so far (``shards``, saved in the model file);
        another count continues as a different chain (``ShardLayoutWarning``). `devices`: shard the
        documents over the first `devices` devices (``jaxtopics.distributed``: the model's
        ``parallel`` kernel, for every model whose module is ``SHARDABLE``: all of them; LDA's
        MH draws are refused); ``"auto"`` uses every device of
        ``jax.devices()`` when the model's kernel can be sharded, else one
        (``resolve_devices``); None runs on the default device.
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
        state, trace = run_sweeps(
            model, self.params, data, state, chain_key,
            start=self.sweeps_done, num_sweeps=num_sweeps, num_tokens=self.num_tokens,
            num_units=self._num_units(corpus), eval_every=eval_every, progress=progress,
            checkpoint_every=checkpoint_every if checkpoint_path else None,
            on_checkpoint=save_checkpoint, on_chunk=keep)
        if old_trace and trace and trace[0].sweep == old_trace[-1].sweep:
            trace = trace[1:]                  # resume(0) of a state evaluated already
        self.trace = old_trace + _shifted(trace)
        return self

    def _sharded(self, corpus: Corpus, devices: int):
        """(model, data, state, to_global) to run this chain sharded over `devices` devices."""
        from . import distributed

        if not getattr(self._module, "SHARDABLE", False):
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
        """theta [D_new, K] for unseen documents (fold-in with the topics held fixed).

        `docs` is raw texts, tokenised as the training texts were (``self.text_options``: the
        model remembers how ``Corpus.from_texts`` tokenised them), or a Corpus with its own
        vocabulary. Either way every token is mapped onto the model's vocabulary by its word,
        never by its id: tokens of words the model does not know are dropped, counted in
        ``self.last_transform`` (a TransformInfo) and reported with an UnknownWordsWarning. A
        document left with no known word gets the prior mean.
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
        """Held-out log p(w_d | trained model) [D] float64 in nats, one value per document.

        `docs`: a Corpus or raw texts, matched to the model's vocabulary by word as in
        ``transform``. `method`: "left_to_right" (Wallach et al. 2009; the default of the token
        and sentence models), "completion" (theta folded in from each document's first half,
        the second half scored), "exact" (DMM, DPMM: the sum over clusters, their default),
        "corrected_theta" (DP-MRM's own, its default). Options: ``num_particles=10``
        (left-to-right), ``num_sweeps=50`` (fold-in). See ``jaxtopics.evaluation``.

        Example: ``model.log_likelihood(["a held-out text"], seed=1)`` -> ``array([-23.1])``.
        """
        from . import evaluation
        return evaluation.log_likelihood(self, docs, method, seed, **options)

    @in_32_bits
    def perplexity(self, docs: Corpus | Iterable[str], method: str | None = None, seed: int = 0,
                   **options: Any) -> float:
        """Held-out perplexity exp(-sum_d log p(w_d) / scored tokens) (``log_likelihood``'s
        methods and options; "completion" scores the second halves' tokens)."""
        from . import evaluation
        return evaluation.perplexity(self, docs, method, seed, **options)

    @in_32_bits
    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one file (npz + json metadata, version-tagged, atomic)."""
        _check_file_name(path)
        state = self._state            # every process of a multi-process run gathers it ...
        if jax.process_index() != 0:    # ... and process 0 alone writes the file
            return
        arrays = {f"state.{k}": np.asarray(v) for k, v in state._asdict().items()}
        arrays["vocab.utf8"], arrays["vocab.offsets"] = encode_strings(self.vocab)
        arrays["trace"] = np.asarray(self.trace, dtype=np.float64).reshape(-1, 4)
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


@in_32_bits
def load(path: str | os.PathLike) -> FittedModel:
    """Restore a model written by ``FittedModel.save`` (``resume`` needs the same corpus).

    Nothing in the file is trusted: a missing or malformed entry, parameters that
    ``check_params`` refuses, or arrays whose shapes disagree with each other (K, V, N, D) raise
    a FormatError naming the file and the entry.
    """
    arrays, meta = load_model_file(path)
    name = meta.get("model")
    if not isinstance(name, str) or name not in MODELS:
        raise FormatError(f"unknown model {name!r} (known: {sorted(MODELS)})", path=str(path))
    module = MODELS[name].module
    params = _params_from_meta(module, meta.get("params"), path)
    seed = _meta_value(meta, "seed", path, check_seed)
    sweeps_done = _meta_value(meta, "sweeps_done", path,
                              lambda v, n: check_int(v, n, low=0, high=INT32_MAX))
    num_tokens = _meta_value(meta, "num_tokens", path,
                             lambda v, n: check_int(v, n, low=1, high=INT32_MAX - 1))
    num_docs = None     # format 1 files do not record it
    if meta["format_version"] >= 2 or "num_docs" in meta:
        num_docs = _meta_value(meta, "num_docs", path, lambda v, n: check_int(v, n, low=1))
    fingerprint = _meta_value(meta, "corpus_fingerprint", path, _check_str)
    options = None
    if meta.get("text_options") is not None:
        try:
            options = TextOptions.from_json(meta["text_options"])
        except ValueError as e:
            raise FormatError(f"metadata 'text_options': {e}", path=str(path)) from None
    vocab = _vocab_from_arrays(arrays, path)
    names = meta.get("label_names")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise FormatError("metadata 'label_names' must be a list of strings", path=str(path))
        if len(set(names)) != len(names):
            raise FormatError("metadata 'label_names' repeats a label", path=str(path))
        if not all(n.strip() for n in names):      # as Corpus refuses it
            raise FormatError("metadata 'label_names' holds an empty label", path=str(path))
    elif getattr(MODELS[name], "needs_labels", False):
        raise FormatError(f"a {name} model file needs metadata 'label_names'", path=str(path))
    state = _state_from_arrays(module, params, arrays, path, num_tokens=num_tokens,
                               num_docs=num_docs, num_words=len(vocab),
                               num_labels=None if names is None else len(names))
    trace = _trace_from_arrays(arrays, sweeps_done, path)
    model = MODELS[name].fitted_class(name, params, vocab, seed, state, None, fingerprint,
                                      sweeps_done, trace, num_tokens)
    model.text_options = options
    model._tables_from_file = True
    # older files: one device; a chain never has more shards than documents
    shards = 1 if "shards" not in meta else _meta_value(
        meta, "shards", path, lambda v, n: check_int(v, n, low=1, high=num_docs))
    model.shards = None if shards == 1 else shards
    # files of a sharded run from before the process count was recorded: unknown (None)
    model.processes = (1 if model.shards is None else None if "processes" not in meta else
                       _meta_value(meta, "processes", path,
                                   lambda v, n: check_int(v, n, low=1, high=shards)))
    if names is not None:
        model.label_names = tuple(names)
    if CHECKSUM_KEY not in meta:
        _check_read_outs(model, path)
    return model


def _check_read_outs(model: FittedModel, path: Any) -> None:
    """A file from before checksums (format <= 2) meets only the checks of its metadata and
    shapes and the model's ``check_state``: its read-outs are computed once here, so that read-outs
    failing on edited latents are one FormatError at load, not an IndexError in ``summary()``
    later (an edit they survive is left to ``resume``'s recount)."""
    try:
        model.summary()
    except (IndexError, ValueError, TypeError, FloatingPointError) as e:
        raise FormatError(f"inconsistent state: its read-outs fail ({type(e).__name__}: {e})",
                          path=str(path)) from None


def _fingerprint(corpus: Corpus, model: str, version: int = 2) -> str:
    """The corpus fingerprint as `model` sees it (sentence boundaries included for a model that
    needs them); in a multi-process run, of all processes' documents together (version 2, what
    new model files store, is the same for any number of processes)."""
    sentences = MODELS[model].needs_sentences
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


class _Estimator:
    """Shared fit() of every estimator: prepare, init, run the driver, wrap the result."""

    name: ClassVar[str]
    module: ClassVar[ModuleType]
    #: command-line options of this model (``jaxtopics fit --model NAME``), beyond the shared
    #: --alpha/--beta/--sampler
    options: ClassVar[tuple[Option, ...]] = ()
    #: the corpus must carry sentence boundaries (``Corpus.from_texts(..., sentences=True)``)
    needs_sentences: ClassVar[bool] = False
    #: the fitted object's class (a FittedModel subclass adds model-specific methods)
    fitted_class: ClassVar[type[FittedModel]] = FittedModel

    @property
    def params(self) -> Any:
        """The model module's Params (hashable: they key the compiled sweeps)."""
        return self._params

    @params.setter
    def params(self, value: Any) -> None:
        self._params = _plain_params(value)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            MODELS[cls.name] = cls

    @in_32_bits
    def fit(self, corpus: Corpus, num_sweeps: int = 1000, seed: int = 0, *, eval_every: int = 10,
            progress: bool | None = None, checkpoint_every: int | None = None,
            checkpoint_path: str | os.PathLike | None = None,
            devices: int | str | None = None) -> FittedModel:
        """Run one seeded chain for `num_sweeps` sweeps; same seed => bitwise identical result.

        With `checkpoint_path` and `checkpoint_every` (the two go together), the model is saved
        (atomically) every `checkpoint_every` sweeps so a killed run can continue with
        ``load(path).resume(corpus, ...)``; `num_sweeps=0` returns the initial state, its log
        joint evaluated (the trace's one point, sweep 0).
        `devices=P` shards the documents over P devices (``jaxtopics.distributed``; the
        ``parallel`` sampler of every model, LDA without MH draws): the
        same blocked sweep with its draws split P ways; the chain differs from the one-device
        chain of the same seed (each shard draws its own uniforms) but is reproducible for a
        given P, and ``devices=1`` is the default run.
        ``devices="auto"``: every device of ``jax.devices()`` when this model's kernel can be
        sharded (on a CPU, first split it: ``jax.config.update("jax_num_cpu_devices",
        os.cpu_count())``), else one device.
        """
        if not isinstance(corpus, Corpus):
            raise CorpusError(f"fit expects a jaxtopics.Corpus, got {type(corpus).__name__}")
        _require_same_settings(**self.params._asdict(), model=self.name, num_sweeps=num_sweeps,
                               seed=seed, eval_every=eval_every, checkpoint_every=checkpoint_every,
                               devices=devices)
        seed = check_seed(seed)
        num_sweeps, eval_every, checkpoint_every = _check_sweeps(
            num_sweeps, eval_every, checkpoint_every, checkpoint_path, progress)
        data = _on_every_process(lambda: self.module.prepare(corpus, self.params))
        init_key, _ = chain_keys(seed)
        num_tokens = corpus.num_tokens
        if jax.process_count() > 1:        # this process's documents of a multi-process fit
            from . import distributed
            if devices is None:
                raise ParameterError("a multi-process fit is sharded: pass devices= (the number of "
                                     "shards over all processes)")
            init_key = jax.random.fold_in(init_key, jax.process_index())
            num_tokens = distributed.process_sum(num_tokens)
        _on_every_process(lambda: self._check_memory(init_key, data), "fit the state in memory")
        state = self.module.init(init_key, data, self.params)
        fitted = self.fitted_class(self.name, self.params, corpus.vocab, int(seed), state, data,
                                   _fingerprint(corpus, self.name), 0, [], num_tokens)
        fitted.__dict__["_local_state"] = jax.process_count() > 1
        fitted.text_options = corpus.text_options
        fitted.label_names = corpus.label_names
        return fitted.resume(corpus, num_sweeps, eval_every=eval_every, progress=progress,
                             checkpoint_every=checkpoint_every, checkpoint_path=checkpoint_path,
                             devices=devices)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({params_repr(self.params)})"

    def _check_memory(self, init_key: jax.Array, data: Any) -> None:
        """Refuse (``memory.check_fits``) a state that cannot fit on the device with what it
        passes through: its initialisation, run op by op, holds the state plus its largest table
        once more (an op's output beside its input), and the read-outs (theta, phi, ...; sized
        where their shapes do not depend on the counts) are computed beside the state, again op
        by op (x2)."""
        module, params = self.module, self.params

        def shapes(p):
            return jax.eval_shape(lambda: module.init(init_key, data, p))
        state = shapes(params)
        tables = [memory.state_bytes(a) for a in jax.tree.leaves(state)]
        try:
            readouts = memory.state_bytes(jax.eval_shape(lambda st: module.estimate(st, params), state))
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerBoolConversionError):
            readouts = 0                # compacted to the active topics: no static size
        needed = sum(tables) + max(max(tables, default=0), 2 * readouts)
        memory.check_fits(needed, jax.local_devices()[:1],
                          f"{type(self).__name__}'s state, with its initialisation and read-outs,",
                          state, params, shapes)


class LDA(_Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling.

    ``LDA(num_topics=20, alpha=0.1, beta=0.01, sampler="parallel")``; samplers: "parallel"
    (blocked collapsed sweep, the fast default; ``mh_steps=2`` swaps its O(K) exact draws for O(1)
    Metropolis-Hastings moves, for very large K), "sequential" (exact collapsed Gibbs,
    token by token), "uncollapsed" (exact blocked Gibbs over theta, phi, z). Fitted on several
    devices (``fit(..., devices=P)``), the devices share n_kw by rotating P word groups
    (``exchange="rotate"``, the default: exact rows, 2P + 1 collectives a sweep) or by exchanging
    their moves every ``sync_every`` blocks (``exchange="moves"``).
    ``optimize_alpha="symmetric"`` or ``"asymmetric"`` and ``optimize_beta=True`` learn the
    priors from the chain (``jaxtopics.hyper``: the Dirichlet-multinomial evidence of the counts,
    every ``optimize_every`` sweeps after ``burn_in``); the fitted ``alpha`` (a float, [K] when
    asymmetric) and ``beta`` are the values in use.
    See ``jaxtopics.models.lda`` for the kernels and their equations.
    """

    name = "lda"
    module = lda
    options = MODEL_OPTIONS["lda"]

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, mh_steps: int = 0,
                 chunk_size: int = 8192, init: str = "random", sync_every: int = 4,
                 exchange: str = "rotate", optimize_alpha: str | None = None,
                 optimize_beta: bool = False, optimize_every: int = 10, burn_in: int = 50,
                 optimizer: str = "minka"):
        self.params = lda.check_params(lda.Params(
            num_topics=num_topics, alpha=_number(alpha, "alpha"), beta=_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, mh_steps=mh_steps, chunk_size=chunk_size,
            init=init, sync_every=sync_every, exchange=exchange, optimize_alpha=optimize_alpha,
            optimize_beta=optimize_beta, optimize_every=optimize_every, burn_in=burn_in,
            optimizer=optimizer))


class SentenceLDA(_Estimator):
    """Sentence-LDA: every sentence's tokens share one topic (seed 000 eq. 10-12).

    ``SentenceLDA(num_topics=20, alpha=0.1, beta=0.01, sampler="parallel")`` on a corpus with
    sentences (``Corpus.from_texts(texts, sentences=True)``, or token lists of sentences);
    samplers: "parallel" (blocks of sentences drawn at once, the fast default), "sequential"
    (exact collapsed Gibbs, sentence by sentence). Fitted: LDA's read-outs plus
    ``sentence_topics`` [num_sentences]. See ``jaxtopics.models.slda``.
    """

    name = "slda"
    module = slda
    options = MODEL_OPTIONS["slda"]
    needs_sentences = True

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, chunk_size: int = 8192,
                 split_merge_steps: int = 1):
        self.params = slda.check_params(slda.Params(
            num_topics=num_topics, alpha=_number(alpha, "alpha"), beta=_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, chunk_size=chunk_size,
            split_merge_steps=split_merge_steps))


class PTM(_Estimator):
    """Pseudo-document topic model (Zuo et al. 2016) for short texts, by collapsed Gibbs sampling.

    ``PTM(num_topics=K, num_pseudo_docs=P, alpha=0.1, beta=0.01, lam=0.1, sampler="parallel")``:
    each short document joins one of P latent pseudo-documents whose topic mixture its tokens
    share. Samplers: "parallel" (blocked: documents' pseudo-documents, then tokens' topics, each
    block drawn at once; the fast default), "sequential" (exact collapsed Gibbs, document by
    document). Fitted read-outs besides LDA's: ``pseudo_doc_topic`` [P, K], ``pseudo_labels`` [D];
    ``doc_topic`` is each short document's. See ``jaxtopics.models.ptm``.
    """

    name = "ptm"
    module = ptm
    options = MODEL_OPTIONS["ptm"]

    def __init__(self, num_topics: int = 20, num_pseudo_docs: int = 100, alpha: float = 0.1,
                 beta: float = 0.01, lam: float = 0.1, sampler: str = "parallel", *,
                 num_blocks: int = 64, chunk_size: int = 8192):
        self.params = ptm.check_params(ptm.Params(
            num_topics=num_topics, num_pseudo_docs=num_pseudo_docs, alpha=_number(alpha, "alpha"),
            beta=_number(beta, "beta"), lam=_number(lam, "lam"),
            sampler=sampler, num_blocks=num_blocks, chunk_size=chunk_size))


class DPMRM(_Estimator):
    """DP-MRM, Dirichlet process with mixed random measures (Kim et al. ICML 2012, seed 004): a
    nonparametric topic model of multi-label documents, each label with its own DP over topics.

    ``DPMRM(alpha=1.0, beta=0.05, gamma=1.0, eta=1.0, sampler="parallel")`` on a corpus with a
    label set on every document (``Corpus.from_texts(texts, labels=[["a", "b"], ["a"], ...])`` or
    ``Corpus.from_text_file(path, labelled=True)`` for ``label1--label2<TAB>text`` lines).
    alpha: document DP concentration; beta: topic-word Dirichlet; gamma: every label's DP
    concentration; eta: Dirichlet over a document's labels. Samplers: "parallel" (blocks of
    documents at once, the fast default), "sequential" (exact collapsed Gibbs over tables,
    labels and topics). Fitted, over the active topics: ``topic_word``, ``doc_topic`` (corrected
    theta), ``topic_label`` (label id of each topic; names in ``corpus.label_names``),
    ``topics_per_label``, ``label_topic`` (label-topic weights), ``doc_label``,
    ``num_active_topics``, ``topic_sizes``; ``perplexity(held_out)``. See
    ``jaxtopics.models.dpmrm``.
    """

    name = "dpmrm"
    module = dpmrm
    options = MODEL_OPTIONS["dpmrm"]
    #: the corpus must carry label sets (the CLI reads ``label1--label2<TAB>text`` lines)
    needs_labels = True

    def __init__(self, alpha: float = 1.0, beta: float = 0.05, gamma: float = 1.0, eta: float = 1.0,
                 sampler: str = "parallel", *, initial_topics: int = 4, num_blocks: int = 64,
                 topic_capacity: int = 0, table_capacity: int = 0, chunk_size: int = 8192):
        params = dpmrm.check_params(dpmrm.Params(          # refuses bools, strings, inf, <= 0
            alpha=alpha, beta=beta, gamma=gamma, eta=eta, sampler=sampler, num_blocks=num_blocks,
            topic_capacity=topic_capacity, table_capacity=table_capacity,
            initial_topics=initial_topics, chunk_size=chunk_size))
        self.params = params._replace(alpha=float(alpha), beta=float(beta), gamma=float(gamma),
                                      eta=float(eta), num_blocks=int(num_blocks),
                                      topic_capacity=int(topic_capacity),
                                      table_capacity=int(table_capacity),
                                      initial_topics=int(initial_topics), chunk_size=int(chunk_size))

    def fit(self, corpus: Corpus, *args: Any, **kwargs: Any) -> FittedModel:
        """``_Estimator.fit`` after checking the corpus: label sets present, every label used
        (on some process's documents, in a multi-process fit)."""
        if isinstance(corpus, Corpus):
            from .distributed import process_sum           # the identity in one process
            _on_every_process(lambda: dpmrm.check_label_sets(corpus))
            dpmrm.check_training_corpus(corpus, process_sum)
        return super().fit(corpus, *args, **kwargs)


def _require_same_settings(**settings: Any) -> None:
    """In a multi-process run, a ParameterError on every process unless all were given the same
    `settings` (``distributed.require_same_settings``); one process: nothing."""
    if jax.process_count() > 1:
        from .distributed import require_same_settings
        require_same_settings(settings)


def _on_every_process(fn: Any, what: str = "lay out their documents") -> Any:
    """``fn()``; in a multi-process run a JaxTopicsError or OSError on any process ends every
    process (``distributed.on_every_process``), so none waits for one that stopped."""
    from .distributed import on_every_process
    return on_every_process(fn, what)


def _number(x: Any, name: str) -> float:
    """A real number (not a bool or a string) as a float; the model's check_params checks its
    range (``validate.check_float32``)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {x!r}")
    return float(str(x)) if isinstance(x, np.float32) else float(x)   # 0.1, not 0.10000000149


# -- helpers of the facade's methods ---------------------------------------------------------


class TransformInfo(NamedTuple):
    """What ``FittedModel.transform`` did with the new documents' tokens.

    num_docs: documents folded in. num_tokens: tokens of words the model knows (folded in).
    dropped_tokens: tokens of other words (dropped). unknown_words: those words, each once.
    empty_docs: indices of the documents with no known token (their theta is the prior mean).
    """

    num_docs: int
    num_tokens: int
    dropped_tokens: int
    unknown_words: tuple[str, ...]
    empty_docs: tuple[int, ...]


def _map_new_documents(model: FittedModel, docs: Any) -> tuple[Corpus, TransformInfo]:
    """New documents over the model's vocabulary, matched word by word (never by id), and what
    was dropped. `docs`: a Corpus, or raw texts tokenised with ``model.text_options`` (split
    into sentences where the model needs them). Tokens of unknown words are dropped (and
    sentences left empty); documents are kept. A result without any token gets one dummy
    document at the end (its theta is not returned)."""
    cls = MODELS[model.model]
    if isinstance(docs, Corpus):                                    # before any word is counted
        if getattr(cls, "needs_labels", False) and docs.label_offsets is None:
            has = ("one integer label per document, not label sets" if docs.labels is not None
                   else "none (labels missing)")
            raise CorpusError(f"transform: the {model.model} model needs a label set on every "
                              f"document, and this Corpus has {has}: build it with "
                              f"labels=[[...], ...]")
        if cls.needs_sentences and docs.sentence_offsets is None:
            raise CorpusError(f"transform: the {model.model} model needs sentence boundaries, "
                              f"and this Corpus has none (Corpus.from_texts(texts, "
                              f"sentences=True))")
    index = {w: i for i, w in enumerate(model.vocab)}
    labels: dict[str, Any] = {}
    if isinstance(docs, Corpus):
        # label sets travel with them, matched by name, for a model that uses them; other
        # models ignore labels (gold clusters, label sets of another model), seen or not
        if getattr(cls, "needs_labels", False):
            names = model.label_names if model.label_names is not None else docs.label_names
            known = set(names)
            for d, labs in enumerate(docs.label_sets):
                unknown_labels = [lab for lab in labs if lab not in known]
                if unknown_labels:
                    raise CorpusError(f"document {d} has label {unknown_labels[0]!r}, which the "
                                      f"model does not know (its labels: {', '.join(names)})")
            labels = {"labels": docs.label_sets, "label_names": names}
        lookup = np.fromiter((index.get(w, -1) for w in docs.vocab), np.int64, docs.num_words)
        mapped, offsets, sentences = lookup[docs.word_ids], docs.doc_offsets, docs.sentence_offsets
        words = docs.vocab
        unknown_ids = docs.word_ids[mapped < 0]
    elif getattr(cls, "needs_labels", False):
        raise CorpusError(f"transform: the {model.model} model needs a label set on every "
                          f"document, and raw texts carry none: pass a Corpus with label sets "
                          f"(Corpus.from_texts(texts, labels=[[...], ...]))")
    else:
        tokens, offsets, sentences = _tokenise_new_texts(model, docs)
        mapped = np.fromiter((index.get(t, -1) for t in tokens), np.int64, len(tokens))
        words = tokens
        unknown_ids = np.flatnonzero(mapped < 0)
    if offsets.shape[0] < 2:
        raise CorpusError("transform: no documents given")
    _, first = np.unique(np.asarray([words[i] for i in unknown_ids], dtype=object), return_index=True)
    unknown = tuple(words[unknown_ids[i]] for i in sorted(first))        # in first-seen order
    keep = mapped >= 0
    position = np.concatenate([[0], np.cumsum(keep)])
    ids, offsets = mapped[keep].astype(np.int32), position[np.asarray(offsets)]
    if sentences is not None:
        sentences = np.unique(position[np.asarray(sentences)])
    empty = tuple(int(d) for d in np.flatnonzero(np.diff(offsets) == 0))
    info = TransformInfo(int(offsets.shape[0] - 1), int(ids.shape[0]), int((~keep).sum()), unknown,
                         empty)
    if ids.shape[0] == 0:      # a corpus needs a token: one dummy document at the end
        ids, offsets = np.zeros(1, np.int32), np.append(offsets, 1)
        sentences = None if sentences is None else np.asarray([0, 1])
        if "labels" in labels:
            labels["labels"] = list(labels["labels"]) + [labels["labels"][-1]]
    return Corpus.from_arrays(ids, offsets, model.vocab, sentence_offsets=sentences, **labels), info


def _tokenise_new_texts(model: FittedModel, docs: Any) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """(tokens, doc offsets, sentence offsets or None) of raw texts, tokenised as the training
    texts were."""
    if isinstance(docs, (str, bytes)):
        raise CorpusError("transform expects a Corpus or a list of texts, got a single string")
    try:
        texts = list(docs)
    except TypeError:
        raise CorpusError(f"transform expects a Corpus or a list of texts, got "
                          f"{type(docs).__name__}") from None
    options = model.text_options
    if options is None:
        raise ParameterError(
            "transform: this model was not fitted on a corpus built from raw texts "
            "(Corpus.from_texts and the readers built on it), so it does not know how to "
            "tokenise them; pass a Corpus (its words are mapped onto the model's vocabulary)")
    if any(not isinstance(t, str) for t in texts):
        d = next(d for d, t in enumerate(texts) if not isinstance(t, str))
        raise CorpusError(f"transform: texts[{d}] must be a str, got {type(texts[d]).__name__} "
                          f"(for token lists, pass Corpus.from_token_lists(docs))")
    by_sentence = MODELS[model.model].needs_sentences
    tokens: list[str] = []
    offsets, sentences = [0], [0]
    for text in texts:
        for part in options.tokenize(split_sentences(text) if by_sentence else [text]):
            tokens.extend(part)
            if part:
                sentences.append(len(tokens))
        offsets.append(len(tokens))
    return tokens, np.asarray(offsets, np.int64), np.asarray(sentences) if by_sentence else None


def params_repr(params: Any) -> str:
    """A model's parameters as keyword arguments (``num_topics=20, alpha=0.1, ...``): what an
    estimator's and a fitted model's repr show."""
    return ", ".join(f"{k}={v!r}" for k, v in params._asdict().items())


def _warn_unknown_words(info: "TransformInfo", what: str, consequence: str) -> None:
    """The UnknownWordsWarning of a read-out of new documents that dropped unknown words."""
    if info.dropped_tokens:
        warn_caller(
            f"{what}: {info.dropped_tokens} of {info.dropped_tokens + info.num_tokens} tokens "
            f"({len(info.unknown_words)} distinct words, e.g. "
            f"{', '.join(map(repr, info.unknown_words[:5]))}) are not in the model's vocabulary "
            f"and were dropped; {consequence}", UnknownWordsWarning)


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


def resolve_devices(module, params: NamedTuple, corpus: Corpus,
                    devices: int | str | None) -> int | None:
    """The shard count a fit runs with: `devices` itself, or for ``"auto"`` every device of
    ``jax.devices()`` (at most one per document) when the model's kernel with these params can
    be sharded (``SHARDABLE`` and no ``shard_refusal``), else None (the default device)."""
    from .distributed import balanced_ranges, shard_refusal
    if devices is not None and not isinstance(devices, (str, int, np.integer)):
        raise ParameterError(f"devices must be a positive integer, 'auto' or None, got "
                             f"{type(devices).__name__} {devices!r}"[:200])
    if isinstance(devices, np.integer):
        devices = int(devices)                 # a numpy count is stored (model.shards) as an int
    if devices is None or not isinstance(devices, str):
        if (not isinstance(devices, bool) and devices == 1 and jax.process_count() == 1
                and shard_refusal(module, params)):
            return None              # one device of a kernel that cannot be sharded: the plain run
        return devices
    if devices != "auto":
        raise ParameterError(f"devices must be a positive integer, 'auto' or None, got {devices!r}")
    refusal = shard_refusal(module, params)
    if refusal:
        if jax.process_count() > 1:
            raise ParameterError(f"a multi-process fit is sharded, which this one cannot be: {refusal}")
        return None
    if jax.process_count() > 1:
        return jax.device_count()
    lengths = np.asarray(corpus.doc_lengths)
    for n in range(min(jax.device_count(), corpus.num_docs), 1, -1):
        ends = np.concatenate([[0], np.cumsum(lengths)])[balanced_ranges(lengths, n)]
        if np.all(np.diff(ends) > 0):           # every shard holds tokens
            return n
    return None


def _check_same_corpus(model: FittedModel, corpus: Corpus) -> None:
    """resume's check: the very corpus (fingerprint) and the model's vocabulary, word by word."""
    if not isinstance(corpus, Corpus):
        raise CorpusError(f"resume expects a jaxtopics.Corpus, got {type(corpus).__name__}")
    version = 2 if model.corpus_fingerprint.startswith("v2:") else 1     # older files: version 1
    fingerprint = _fingerprint(corpus, model.model, version)
    if fingerprint != model.corpus_fingerprint:
        layout = (" or, for a model file written before version-2 fingerprints, a multi-process "
                  "run with another number of processes" if version == 1 else "")
        raise CorpusError("resume: this corpus is not the one the model was fitted on "
                          f"(fingerprint {fingerprint[:15]} != {model.corpus_fingerprint[:15]}"
                          f"{layout})")
    if corpus.vocab != model.vocab:
        if len(corpus.vocab) != len(model.vocab):
            why = f"{len(corpus.vocab)} words, the model has {len(model.vocab)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(corpus.vocab, model.vocab)) if a != b)
            why = f"word {i} is {corpus.vocab[i]!r}, the model's is {model.vocab[i]!r}"
        raise CorpusError(f"resume: the corpus's vocabulary differs from the model's ({why})")


def _check_file_name(path: Any) -> str | bytes:
    """`path` as a str; an empty or blank name (which the OS would read as the current
    directory) is a ParameterError."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ParameterError(f"a model file path must be a str or path, got {type(path).__name__}")
    target = os.fspath(path)
    if not target.strip():
        raise ParameterError(f"the model file path is empty ({target!r}): name a file, "
                             "e.g. 'model.jtm'")
    return target


def _check_writable_file(path: str | os.PathLike) -> None:
    """Raise the OSError that writing `path` atomically would raise (naming `path`), now."""
    import tempfile

    target = _check_file_name(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "is a directory, expected a file path", target)
    try:
        fd, probe = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".jaxtopics-probe.")
    except OSError as e:
        raise OSError(e.errno, e.strerror, target) from None
    os.close(fd)
    os.unlink(probe)


def _log_joint_of_state(module: ModuleType, state: Any, params: Any) -> float | None:
    """log joint of a state without the corpus layout, if the module's needs none, else None."""
    if getattr(module, "LOG_JOINT_USES_DATA", True):
        return None
    return float(_jit_state_log_joint(module, state, params))


@partial(jax.jit, static_argnums=(0, 2))
def _jit_state_log_joint(module: ModuleType, state: Any, params: Any) -> jax.Array:
    return module.log_joint(state, None, params)


def _check_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ParameterError(f"{name} must be a string, got {value!r}")
    return value


def _meta_value(meta: dict, key: str, path: Any, check: Any) -> Any:
    """meta[key] passed through check(value, key); a missing or bad one is a FormatError."""
    if key not in meta:
        raise FormatError(f"metadata lacks {key!r}", path=str(path))
    try:
        return check(meta[key], key)
    except ParameterError as e:
        raise FormatError(f"metadata {key!r}: {e}", path=str(path)) from None


def _params_from_meta(module: ModuleType, obj: Any, path: Any) -> Any:
    """The model's Params from the file, re-validated by the module's check_params."""
    if not isinstance(obj, dict):
        raise FormatError(f"metadata 'params' must be an object, got {obj!r}", path=str(path))
    fields = module.Params._fields
    extra = sorted(set(obj) - set(fields))
    if extra:
        raise FormatError(f"metadata 'params' has unknown parameter {extra[0]!r} "
                          f"(known: {', '.join(fields)})", path=str(path))
    # every parameter must be in the file, except those a module added later: older files lack
    # them and ran with the value the module records for them (not today's default)
    added_later = getattr(module, "PARAMS_ADDED_LATER", {})
    missing = [f for f in fields if f not in obj and f not in added_later]
    if missing:
        raise FormatError(f"metadata 'params' lacks {missing[0]!r}", path=str(path))
    try:
        return module.check_params(module.Params(**{**added_later, **obj}))
    except ParameterError as e:
        raise FormatError(f"metadata 'params': {e}", path=str(path)) from None


def _vocab_from_arrays(arrays: dict, path: Any) -> tuple[str, ...]:
    """The vocabulary: UTF-8 bytes + offsets (format 2) or a unicode array (format 1)."""
    if "vocab.utf8" in arrays or "vocab.offsets" in arrays:
        for key in ("vocab.utf8", "vocab.offsets"):
            if key not in arrays:
                raise FormatError(f"model file lacks array {key!r}", path=str(path))
        try:
            vocab = decode_strings(arrays["vocab.utf8"], arrays["vocab.offsets"])
        except ValueError as e:
            raise FormatError(f"array 'vocab.utf8': {e}", path=str(path)) from None
    elif "vocab" in arrays and arrays["vocab"].dtype.kind == "U" and arrays["vocab"].ndim == 1:
        vocab = tuple(str(w) for w in arrays["vocab"])
    else:
        raise FormatError("model file lacks the vocabulary (arrays 'vocab.utf8', 'vocab.offsets')",
                          path=str(path))
    if not vocab:
        raise FormatError("the vocabulary is empty", path=str(path))
    for i, w in enumerate(vocab):           # what no corpus can hold (Corpus.from_token_lists)
        if not w or "\n" in w or "\r" in w:
            raise FormatError(f"vocabulary word {i} ({w!r}) is empty or holds a line break",
                              path=str(path))
    if len(set(vocab)) != len(vocab):
        seen: dict[str, int] = {}
        for i, w in enumerate(vocab):
            if w in seen:
                raise FormatError(f"vocabulary has duplicate word {w!r} at ids {seen[w]} and {i}",
                                  path=str(path))
            seen[w] = i
    return vocab


def _state_from_arrays(module: ModuleType, params: Any, arrays: dict, path: Any, *,
                       num_tokens: int, num_docs: int | None, num_words: int,
                       num_labels: int | None = None) -> Any:
    """The State from `state.<field>` arrays, each checked against the module's
    ``state_shapes(params, num_tokens, num_docs, num_words)`` (a State of ShapeDtypeStruct; a
    size the file does not record is passed as -1; a negative length matches any length, and
    ``validate.same_length(i)`` the same length in every array where it appears; a module with
    a per-label table takes ``num_labels`` too, the length of the file's label names) and then
    against the module's ``check_state`` (consistency of the values) and, for a state without
    a per-token array, its ``state_tokens`` against `num_tokens`, where the module has them. A
    `state.` array the State does not have is refused too."""
    fields = module.State._fields
    # State fields a module added later: older files lack them, and their chains ran with the
    # value the module gives from their params
    state_added_later = getattr(module, "STATE_ADDED_LATER", {})
    arrays = {**{f"state.{f}": make(params) for f, make in state_added_later.items()
                 if f"state.{f}" not in arrays}, **arrays}
    for f in fields:
        if f"state.{f}" not in arrays:
            raise FormatError(f"model file lacks array 'state.{f}'", path=str(path))
    extra = sorted(k for k in arrays if k.startswith("state.") and k[len("state."):] not in fields)
    if extra:
        raise FormatError(f"model file has array {extra[0]!r}, which a {module.__name__.split('.')[-1]} "
                          f"state does not have", path=str(path))
    host = module.State(*(arrays[f"state.{f}"] for f in fields))
    shapes = getattr(module, "state_shapes", None)
    if shapes is not None:
        sizes = {"num_tokens": num_tokens, "num_docs": -1 if num_docs is None else num_docs,
                 "num_words": num_words}
        if "num_labels" in inspect.signature(shapes).parameters:
            sizes["num_labels"] = -1 if num_labels is None else num_labels
        shared: dict[int, tuple[int, str]] = {}      # same_length(i) -> (length, first array)
        for f, arr, spec in zip(fields, host, shapes(params, **sizes)):
            problem = _shape_problem(np.asarray(arr), spec, f, shared)
            if problem:
                k = getattr(params, "num_topics", None)
                raise FormatError(
                    f"array 'state.{f}' is {problem} for "
                    + ("" if k is None else f"num_topics={k}, ")
                    + f"{num_words} vocabulary words, {num_tokens} tokens"
                    + ("" if num_docs is None else f", {num_docs} documents"), path=str(path))
    check = getattr(module, "check_state", None)
    problem = check(host, params) if check is not None else None
    if problem:
        raise FormatError(f"inconsistent state: {problem}", path=str(path))
    tokens = getattr(module, "state_tokens", None)      # models without a per-token array
    if tokens is not None and tokens(host) != num_tokens:
        raise FormatError(f"metadata 'num_tokens' is {num_tokens}, but the state's documents "
                          f"hold {tokens(host)} tokens", path=str(path))
    return module.State(*(jnp.asarray(a) for a in host))


def _shape_problem(arr: np.ndarray, spec: Any, name: str, shared: dict) -> str | None:
    """How `arr` differs from the ShapeDtypeStruct `spec` of ``state_shapes`` ("int32[3, 4],
    expected int32[3, 5]"), or None; records the lengths of ``same_length`` dimensions in
    `shared` so that the next arrays must agree with them."""
    want = []
    fits = arr.ndim == len(spec.shape) and arr.dtype == spec.dtype
    for i, e in enumerate(spec.shape):
        got = arr.shape[i] if i < arr.ndim else None
        if e >= 0:
            want.append(str(e))
            fits = fits and got == e
        elif e == -1 or got is None:
            want.append("*")
        else:
            length, first = shared.setdefault(e, (got, name))
            want.append(str(length) if first != name else "*")
            fits = fits and got == length
    if fits:
        return None
    note = ""
    for e in spec.shape:
        if e < -1 and e in shared and shared[e][1] != name:
            note = f" (a capacity that 'state.{shared[e][1]}' has as {shared[e][0]})"
            break
    return (f"{arr.dtype}{list(arr.shape)}, expected {np.dtype(spec.dtype)}[{', '.join(want)}]"
            + note)


def _rebuilt(rebuild, state: Any, data: Any, params: Any, check: bool) -> Any:
    """The model's ``rebuild`` (count tables recounted from the latent variables). With `check`
    (a state read from a file) it must give the tables back unchanged: a file whose tables
    disagree with its own assignments is damaged or edited, and is refused, not repaired."""
    if not check:
        return rebuild(state, data, params)
    try:
        rebuilt = rebuild(state, data, params)
    except (ValueError, TypeError, IndexError) as e:      # e.g. latents of the wrong length
        raise FormatError(f"inconsistent state: its assignments do not fit the corpus "
                          f"({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
    differ = [f for f, a, b in zip(state._fields, state, rebuilt)
              if np.shape(a) != np.shape(b) or not np.array_equal(np.asarray(a), np.asarray(b))]
    if differ:
        raise FormatError(f"inconsistent state: {', '.join(differ)} disagree(s) with the "
                          "assignments saved with them (a damaged or edited model file)")
    return rebuilt


def _trace_from_arrays(arrays: dict, sweeps_done: int, path: Any) -> list[TracePoint]:
    """The trace [T, 4] (sweep, log joint per token, changed fraction, seconds)."""
    if "trace" not in arrays:
        raise FormatError("model file lacks array 'trace'", path=str(path))
    tr = arrays["trace"]
    if tr.dtype.kind != "f" or tr.ndim != 2 or tr.shape[1] != len(TracePoint._fields):
        raise FormatError(f"array 'trace' is {tr.dtype}{list(tr.shape)}, expected float64[T, 4]",
                          path=str(path))
    sweeps = tr[:, 0]
    if tr.shape[0] and (not np.all(np.isfinite(sweeps)) or np.any(sweeps != np.round(sweeps))
                        or np.any(np.diff(sweeps) <= 0) or sweeps[0] < 0 or sweeps[-1] > sweeps_done):
        raise FormatError(f"array 'trace': sweep numbers must be integers rising within "
                          f"0..{sweeps_done} (sweeps_done)", path=str(path))
    return [TracePoint(int(r[0]), float(r[1]), float(r[2]), float(r[3])) for r in tr]


class DMM(_Estimator):
    """Dirichlet multinomial mixture for short texts, by collapsed Gibbs sampling (GSDMM).

    ``DMM(num_clusters=300, alpha=0.1, beta=0.1, sampler="parallel")``: every document belongs
    to one of at most K clusters (GSDMM leaves the unneeded ones empty). Samplers: "parallel"
    (blocks of documents drawn at once against the counts at the block's start, the default)
    and "sequential" (exact collapsed Gibbs, one document at a time). Fitted read-outs:
    ``labels`` [D], ``cluster_sizes`` [K], ``num_active_clusters``, ``cluster_weights`` [K],
    ``topic_word`` (phi [K, V]) and ``doc_topic`` (p(cluster | document) [D, K]).
    See ``jaxtopics.models.dmm`` for the equations.
    """

    name = "dmm"
    module = dmm
    options = MODEL_OPTIONS["dmm"]

    def __init__(self, num_clusters: int = 300, alpha: float = 0.1, beta: float = 0.1,
                 sampler: str = "parallel", *, num_blocks: int = 64, chunk_size: int = 8192):
        self.params = dmm.check_params(dmm.Params(
            num_clusters=num_clusters, alpha=_concentration(alpha, "alpha"),
            beta=_concentration(beta, "beta"), sampler=sampler, num_blocks=num_blocks,
            chunk_size=chunk_size))


class DPMM(_Estimator):
    """Dirichlet process multinomial mixture for short texts, by collapsed Gibbs (GSDPMM).

    ``DPMM(alpha=1.0, beta=0.02, sampler="parallel")``: the number of clusters is inferred
    (alpha, the Dirichlet process concentration, is the weight of a new cluster; Yin & Wang use
    0.1 x the number of documents). Cluster slots grow on demand (``capacity`` is only the
    starting size). Read-outs cover the active clusters only, relabelled 0..C-1 by decreasing
    size: ``labels`` [D], ``cluster_sizes`` [C], ``num_active_clusters``, ``cluster_weights``,
    ``topic_word`` [C, V], ``doc_topic`` [D, C]. See ``jaxtopics.models.dpmm``.
    """

    name = "dpmm"
    module = dpmm
    options = MODEL_OPTIONS["dpmm"]

    def __init__(self, alpha: float = 1.0, beta: float = 0.02, sampler: str = "parallel", *,
                 num_blocks: int = 64, capacity: int = 64, init: str = "incremental",
                 init_clusters: int = 1, chunk_size: int = 8192):
        self.params = dpmm.check_params(dpmm.Params(
            alpha=_concentration(alpha, "alpha"), beta=_concentration(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, capacity=capacity, init=init,
            init_clusters=init_clusters, chunk_size=chunk_size))

    def fit(self, corpus: Corpus, num_sweeps: int = 1000, *args: Any, **kwargs: Any) -> FittedModel:
        """``_Estimator.fit``; the "incremental" start seats the documents in the first sweep,
        so it needs at least one (its state before that has no clusters to read out)."""
        if self.params.init == "incremental" and not isinstance(num_sweeps, bool) and num_sweeps == 0:
            raise ParameterError("DPMM's incremental start (init='incremental', the default) seats "
                                 "the documents in the first sweep: fit at least 1 sweep, or "
                                 "start from init='one' or 'random' to read an unswept state")
        return super().fit(corpus, num_sweeps, *args, **kwargs)


def _shown_param(name: str, value: Any, estimates: dict[str, np.ndarray]) -> str:
    """`name=value` for ``summary``; a parameter the chain samples (its current value in the
    estimates as ``sampled_<name>``, e.g. HDP's alpha and gamma) shows the value in use."""
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
        return f"{name}={shown} (learned; started at {value})"
    return f"{name}={value}"


def _plain_params(params: Any) -> Any:
    """`params` with numpy scalars (np.int32(3), np.float64(0.1), np.bool_) as the Python
    numbers they equal (a float32 as its shortest decimal, 0.1 not 0.10000000149011612: the
    same float32 the sampler computes with), so reprs, saved metadata and traces show plain
    values."""
    plain = {k: (float(str(v)) if isinstance(v, np.float32) else v.item())
             if isinstance(v, np.generic) else v for k, v in params._asdict().items()}
    return params._replace(**plain)


def _concentration(x: Any, name: str) -> float:
    """A Dirichlet concentration as a float; bools and non-numbers are refused by name (the
    module's check_params refuses non-finite, <= 0 and float32-unrepresentable values)."""
    if isinstance(x, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number, got {x!r}")
    return _number(x, name)


class FittedHDP(FittedModel):
    """A fitted HDP chain: FittedModel's read-outs over the active topics (largest first), plus
    ``num_active_topics``, ``topic_sizes``, ``topic_tables`` and `to_lda`."""

    @in_32_bits
    def to_lda(self, alpha: float | None = None, beta: float | None = None,
               sampler: str = "parallel", **options: Any) -> FittedModel:
        """An LDA fitted object initialised from this state, to continue with LDA's kernels.

        K = the active topics, each token keeps its topic (numbered as ``topic_word``'s rows).
        `alpha` defaults to the HDP's alpha / K (the same total prior mass per document),
        `beta` to the HDP's. The LDA chain starts at sweep 0 with this model's seed; continue it
        with ``.resume(corpus, num_sweeps)`` (the corpus this model was fitted on).
        """
        state = self._state
        slots = hdp.active_topics(state)
        z = jnp.asarray(hdp.assignments(state))
        k = int(slots.shape[0])
        if alpha is None:
            alpha = float(state.alpha) / k
        lda_params = lda.check_params(lda.Params(
            num_topics=k, alpha=_number(alpha, "alpha"),
            beta=_number(self.params.beta if beta is None else beta, "beta"),
            sampler=sampler, **options))
        # LDA's counts come from the HDP's own tables, so a model loaded from a file (which has
        # no corpus layout) converts exactly as one in memory: n_dk = sum of the d's tables
        # serving dish k, n_kw and n_k = the active topics' columns.
        table_count = np.asarray(state.table_count)
        rank = np.full(np.asarray(state.topic_tables).shape[-1], k, np.int64)
        rank[slots] = np.arange(k)
        dish = rank[np.asarray(state.table_topic)]
        doc_topic = np.zeros((table_count.shape[0], k + 1), np.int64)
        np.add.at(doc_topic, (np.arange(table_count.shape[0])[:, None], dish), table_count)
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


class HDP(_Estimator):
    """Hierarchical Dirichlet process (Chinese restaurant franchise), a nonparametric LDA.

    ``HDP(alpha=1.0, gamma=1.0, beta=0.05, sampler="parallel", initial_topics=1)``: alpha the
    document-level and gamma the corpus-level DP concentration, beta the topic-word Dirichlet.
    Samplers: "parallel" (blocked table and dish steps, the fast default), "sequential" (the
    exact CRF sampler of Teh et al. 2006). Both run ``split_merge_steps`` exact split-merge moves
    of whole topics per sweep; ``resample_concentrations=True`` draws alpha and gamma too
    (Gamma(prior_shape, prior_rate) priors; a draw below 1e-30, outside float32's useful range,
    is kept at 1e-30).
    Fitted: ``num_active_topics``, ``topic_sizes``, ``topic_word`` / ``doc_topic`` over the active
    topics, ``to_lda()``. See ``jaxtopics.models.hdp`` for the kernels and their equations.
    """

    name = "hdp"
    module = hdp
    fitted_class = FittedHDP
    options = MODEL_OPTIONS["hdp"]

    def __init__(self, alpha: float = 1.0, gamma: float = 1.0, beta: float = 0.05,
                 sampler: str = "parallel", initial_topics: int = 1, *,
                 resample_concentrations: bool = False, split_merge_steps: int = 10,
                 num_blocks: int = 64, dish_groups: int = 1, topic_capacity: int = 0,
                 table_capacity: int = 0, prior_shape: float = 1.0, prior_rate: float = 1.0,
                 chunk_size: int = 4096):
        params = hdp.check_params(hdp.Params(
            alpha=alpha, gamma=gamma, beta=beta, sampler=sampler, initial_topics=initial_topics,
            resample_concentrations=resample_concentrations,
            split_merge_steps=split_merge_steps, num_blocks=num_blocks, dish_groups=dish_groups,
            topic_capacity=topic_capacity, table_capacity=table_capacity,
            prior_shape=prior_shape, prior_rate=prior_rate, chunk_size=chunk_size))
        floats = ("alpha", "gamma", "beta", "prior_shape", "prior_rate")
        ints = ("initial_topics", "split_merge_steps", "num_blocks", "dish_groups",
                "topic_capacity", "table_capacity", "chunk_size")
        self.params = params._replace(
            **{f: float(getattr(params, f)) for f in floats},
            **{f: int(getattr(params, f)) for f in ints},
            resample_concentrations=bool(resample_concentrations))
