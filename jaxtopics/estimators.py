"""User facade: ``LDA(num_topics=20).fit(corpus)`` -> a fitted model (tomotopy-short).

The functional core (``jaxtopics.models.lda``: prepare/init/sweep/...) stays available for users
who want to vmap chains or write kernels; this module only wires it to the driver (fit.py) and
to model files (io.py). Every later model follows the same public contract:
``Estimator(...).fit(corpus, num_sweeps, seed)`` -> ``FittedModel`` with ``topic_word``,
``doc_topic``, ``assignments``, ``log_joint_per_token()``, ``trace``, ``top_words(n)``,
``summary()``, ``save(path)``, ``resume(corpus, num_sweeps)``; ``jaxtopics.load(path)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__
from .corpus import Corpus
from .errors import CorpusError, FormatError, ParameterError
from .fit import TracePoint, chain_keys, run_sweeps
from .io import load_model_file, save_model_file
from .models import dpmrm, lda, slda

__all__ = ["LDA", "SentenceLDA", "DPMRM", "FittedModel", "Option", "load", "MODELS"]

#: model name -> estimator class (filled by ``_Estimator.__init_subclass__``), for load() and the CLI
MODELS: dict[str, type["_Estimator"]] = {}


@dataclass(frozen=True)
class Option:
    """A constructor argument an estimator exposes on the command line (``jaxtopics fit``).

    `flag`: e.g. "--num-topics"; `arg`: the constructor's keyword; `type`: int, float or str;
    `help`: one line. The CLI offers the union of every model's options and passes a model only
    the ones it declares (an option of another model is refused with a clear error).
    """

    flag: str
    arg: str
    type: type
    help: str = ""


class FittedModel:
    """A fitted chain: final state, trace, and read-outs. Returned by ``Estimator.fit``.

    Attributes: model (name), params, vocab, seed, sweeps_done, trace (list of TracePoint),
    corpus_fingerprint. The chain continues with ``resume``; ``save``/``jaxtopics.load`` persist it.
    """

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

    @property
    def _module(self) -> ModuleType:
        return MODELS[self.model].module

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

    @property
    def num_topics(self) -> int:
        """K: rows of ``topic_word`` (for nonparametric models, the active topics / clusters)."""
        return int(self._estimates()["phi"].shape[0])

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
            return values[name]
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
    def assignments(self) -> np.ndarray:
        """Topic of every token [N] int32, aligned with ``corpus.word_ids``."""
        return np.asarray(self._module.assignments(self._state))

    def log_joint_per_token(self) -> float:
        """Collapsed log p(w, z) / N of the current state (tomotopy's ``ll_per_word``)."""
        if self._data is not None:
            lj = self._module.log_joint(self._state, self._data, self.params)
            return float(lj) / self.num_tokens
        return self.trace[-1].log_joint_per_token if self.trace else float("nan")

    def top_words(self, n: int = 10, topic: int | None = None
                  ) -> list[list[tuple[str, float]]] | list[tuple[str, float]]:
        """The n most probable words of each topic as (word, p) pairs (or of one `topic`)."""
        phi = self.topic_word
        topics = range(phi.shape[0]) if topic is None else [topic]
        out = []
        for k in topics:
            if not 0 <= k < phi.shape[0]:
                raise ParameterError(f"topic {k} out of range [0, {phi.shape[0]})")
            order = np.argsort(-phi[k], kind="stable")[:n]
            out.append([(self.vocab[i], float(phi[k, i])) for i in order])
        return out if topic is None else out[0]

    def summary(self, n: int = 8) -> str:
        """Human-readable summary: model, sizes, hyper-parameters, trace, top words per topic."""
        p = self.params
        theta = self.doc_topic
        share = theta.mean(0)
        lines = [f"<{self.model.upper()} K={self.num_topics}, V={len(self.vocab)}, "
                 f"N={self.num_tokens}, D={theta.shape[0]}, sweeps={self.sweeps_done}, seed={self.seed}>",
                 "params: " + ", ".join(f"{k}={v}" for k, v in p._asdict().items())]
        if self.trace:
            last = self.trace[-1]
            lines.append(f"log joint per token: {last.log_joint_per_token:.4f} (after {last.sweep} sweeps)")
        lines.append("topics (share of tokens: top words):")
        for k, words in enumerate(self.top_words(n)):
            lines.append(f"  #{k:<3d} {share[k]:6.1%}  " + " ".join(w for w, _ in words))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"FittedModel(model={self.model!r}, num_topics={self.num_topics}, "
                f"sweeps_done={self.sweeps_done}, seed={self.seed})")

    # -- continuing and persisting -----------------------------------------------------------

    def resume(self, corpus: Corpus, num_sweeps: int, *, eval_every: int = 10,
               progress: bool | None = None, checkpoint_every: int | None = None,
               checkpoint_path: str | os.PathLike | None = None,
               devices: int | None = None) -> "FittedModel":
        """Continue the same chain for `num_sweeps` more sweeps (in place; returns self).

        Bitwise identical to having run all sweeps at once (with the same `devices`). `corpus`
        must be the one the model was fitted on (checked by fingerprint). `devices`: shard the
        documents over the first `devices` devices (``jaxtopics.distributed``; LDA's parallel
        kernel only); None runs on the default device.
        """
        fingerprint = _fingerprint(corpus)
        if fingerprint != self.corpus_fingerprint:
            raise CorpusError("resume: this corpus is not the one the model was fitted on "
                              f"(fingerprint {fingerprint[:12]} != {self.corpus_fingerprint[:12]})")
        if self._data is None and jax.process_count() == 1:
            self._data = self._module.prepare(corpus, self.params)
            rebuild = getattr(self._module, "rebuild", None)     # recount tables from the latents
            if rebuild is not None:
                self._state = rebuild(self._state, self._data, self.params)
        _check_sweeps(num_sweeps, eval_every, checkpoint_every)
        _, chain_key = chain_keys(self.seed)

        def save_checkpoint(state, done, trace):
            self.save(checkpoint_path)

        model, data, state, to_global = self._module, self._data, self._state, (lambda st: st)
        if devices is not None:
            model, data, state, to_global = self._sharded(corpus, devices)

        def keep(state, done, trace):   # the input buffers are donated: always hold the latest
            self.__dict__["_pending"] = (state, to_global)     # gathered only when read
            self.sweeps_done, self.trace = done, old_trace + trace

        old_trace = list(self.trace)
        state, trace = run_sweeps(
            model, self.params, data, state, chain_key,
            start=self.sweeps_done, num_sweeps=num_sweeps, num_tokens=self.num_tokens,
            eval_every=eval_every, progress=progress,
            checkpoint_every=checkpoint_every if checkpoint_path else None,
            on_checkpoint=save_checkpoint, on_chunk=keep)
        self.trace = old_trace + trace
        return self

    def _sharded(self, corpus: Corpus, devices: int):
        """(model, data, state, to_global) to run this chain sharded over `devices` devices."""
        from . import distributed

        if not getattr(self._module, "SHARDABLE", False):
            raise ParameterError(f"devices=: the {self.model!r} model has no sharded kernel yet")
        if not isinstance(devices, (int, np.integer)) or isinstance(devices, bool) or devices < 1:
            raise ParameterError(f"devices must be a positive integer, got {devices!r}")
        mesh = distributed.make_mesh(devices)
        sdata = distributed.prepare(corpus, self.params, devices)
        local = self.__dict__.get("_local_state", False)     # a multi-process fit's own init
        state, sdata = distributed.place(distributed.shard_state(self._state, sdata, local=local),
                                         sdata, mesh)
        if jax.process_count() > 1:
            state = distributed.recount(state, sdata, self.params)   # global tables over processes
        self.__dict__["_local_state"] = False
        return (distributed.ShardedLDA(mesh), sdata, state,
                lambda st: distributed.gather(st, sdata))

    def transform(self, corpus: Corpus, num_sweeps: int = 50, seed: int = 0) -> np.ndarray:
        """theta [D_new, K] for unseen documents (fold-in with the topics held fixed)."""
        if corpus.num_words > len(self.vocab):
            raise CorpusError(f"transform: corpus has {corpus.num_words} words, "
                              f"model vocabulary {len(self.vocab)}")
        data = self._module.prepare(corpus, self.params)
        return np.asarray(self._module.fold_in(jax.random.key(seed), self._state, data,
                                               self.params, num_sweeps))

    def perplexity(self, corpus: Corpus, num_sweeps: int = 50, seed: int = 0) -> float:
        """Held-out perplexity exp(-log p(corpus) / N) of unseen documents (in log space), for the
        models whose module defines ``held_out_log_likelihood(key, state, data, params,
        num_sweeps)`` (e.g. DP-MRM: fold-in against the fitted topics, seed 004's corrected theta)."""
        fn = getattr(self._module, "held_out_log_likelihood", None)
        if fn is None:
            raise ParameterError(f"perplexity: the {self.model!r} model has no held-out likelihood")
        if not isinstance(corpus, Corpus):
            raise CorpusError(f"perplexity expects a jaxtopics.Corpus, got {type(corpus).__name__}")
        if corpus.num_words > len(self.vocab):
            raise CorpusError(f"perplexity: corpus has {corpus.num_words} words, "
                              f"model vocabulary {len(self.vocab)}")
        data = self._module.prepare(corpus, self.params)
        ll = fn(jax.random.key(seed), self._state, data, self.params, num_sweeps)
        return float(np.exp(-float(ll) / max(corpus.num_tokens, 1)))

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one file (npz + json metadata, version-tagged, atomic)."""
        state = self._state            # every process of a multi-process run gathers it ...
        if jax.process_index() != 0:    # ... and process 0 alone writes the file
            return
        arrays = {f"state.{k}": np.asarray(v) for k, v in state._asdict().items()}
        arrays["vocab"] = np.asarray(self.vocab, dtype=str)
        arrays["trace"] = np.asarray(self.trace, dtype=np.float64).reshape(-1, 4)
        meta = {"model": self.model, "params": self.params._asdict(), "seed": self.seed,
                "sweeps_done": self.sweeps_done, "num_tokens": self.num_tokens,
                "corpus_fingerprint": self.corpus_fingerprint, "jaxtopics_version": __version__,
                "jax_version": jax.__version__, "backend": jax.default_backend()}
        save_model_file(path, arrays, meta)


def load(path: str | os.PathLike) -> FittedModel:
    """Restore a model written by ``FittedModel.save`` (``resume`` needs the same corpus)."""
    arrays, meta = load_model_file(path)
    name = meta.get("model")
    if name not in MODELS:
        raise FormatError(f"unknown model {name!r} (known: {sorted(MODELS)})", path=str(path))
    module = MODELS[name].module
    params = module.Params(**meta["params"])
    try:
        state = module.State(**{f: jnp.asarray(arrays[f"state.{f}"]) for f in module.State._fields})
    except KeyError as e:
        raise FormatError(f"model file lacks array {e.args[0]!r}", path=str(path)) from None
    trace = [TracePoint(int(r[0]), float(r[1]), float(r[2]), float(r[3])) for r in arrays["trace"]]
    return FittedModel(name, params, tuple(str(w) for w in arrays["vocab"]), int(meta["seed"]),
                       state, None, meta["corpus_fingerprint"], int(meta["sweeps_done"]), trace,
                       int(meta["num_tokens"]))


def _fingerprint(corpus: Corpus) -> str:
    """The corpus fingerprint; in a multi-process run, of all processes' documents together."""
    if jax.process_count() == 1:
        return corpus.fingerprint()
    from . import distributed
    return distributed.global_fingerprint(corpus)


def _check_sweeps(num_sweeps: int, eval_every: int, checkpoint_every: int | None) -> None:
    for name, v, low in (("num_sweeps", num_sweeps, 0), ("eval_every", eval_every, 1)):
        if not isinstance(v, (int, np.integer)) or v < low:
            raise ParameterError(f"{name} must be an integer >= {low}, got {v!r}")
    if checkpoint_every is not None and (not isinstance(checkpoint_every, (int, np.integer))
                                         or checkpoint_every < 1):
        raise ParameterError(f"checkpoint_every must be a positive integer, got {checkpoint_every!r}")


class _Estimator:
    """Shared fit() of every estimator: prepare, init, run the driver, wrap the result."""

    name: ClassVar[str]
    module: ClassVar[ModuleType]
    #: command-line options of this model (``jaxtopics fit --model NAME``), beyond the shared
    #: --alpha/--beta/--sampler
    options: ClassVar[tuple[Option, ...]] = ()
    #: the corpus must carry sentence boundaries (``Corpus.from_texts(..., sentences=True)``)
    needs_sentences: ClassVar[bool] = False

    params: Any

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            MODELS[cls.name] = cls

    def fit(self, corpus: Corpus, num_sweeps: int = 1000, seed: int = 0, *, eval_every: int = 10,
            progress: bool | None = None, checkpoint_every: int | None = None,
            checkpoint_path: str | os.PathLike | None = None,
            devices: int | None = None) -> FittedModel:
        """Run one seeded chain for `num_sweeps` sweeps; same seed => bitwise identical result.

        With `checkpoint_path`, the model is saved (atomically) every `checkpoint_every` sweeps
        (default: every eval) so a killed run can continue with ``load(path).resume(corpus, ...)``.
        `devices=P` shards the documents over P devices (``jaxtopics.distributed``): the same
        blocked sweep with its draws split P ways; the chain differs from the one-device chain of
        the same seed (each shard draws its own uniforms) but is reproducible for a given P.
        """
        if not isinstance(corpus, Corpus):
            raise CorpusError(f"fit expects a jaxtopics.Corpus, got {type(corpus).__name__}")
        if not isinstance(seed, (int, np.integer)):
            raise ParameterError(f"seed must be an integer, got {seed!r}")
        _check_sweeps(num_sweeps, eval_every, checkpoint_every)
        data = self.module.prepare(corpus, self.params)
        init_key, _ = chain_keys(int(seed))
        num_tokens = corpus.num_tokens
        if jax.process_count() > 1:        # this process's documents of a multi-process fit
            from . import distributed
            if devices is None:
                raise ParameterError("a multi-process fit is sharded: pass devices= (the number of "
                                     "shards over all processes)")
            init_key = jax.random.fold_in(init_key, jax.process_index())
            num_tokens = int(distributed._allgather_host(np.asarray([num_tokens])).sum())
        state = self.module.init(init_key, data, self.params)
        fitted = FittedModel(self.name, self.params, corpus.vocab, int(seed), state, data,
                             _fingerprint(corpus), 0, [], num_tokens)
        fitted.__dict__["_local_state"] = jax.process_count() > 1
        if checkpoint_path is not None and checkpoint_every is None:
            checkpoint_every = eval_every
        return fitted.resume(corpus, num_sweeps, eval_every=eval_every, progress=progress,
                             checkpoint_every=checkpoint_every, checkpoint_path=checkpoint_path,
                             devices=devices)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params._asdict().items())
        return f"{type(self).__name__}({args})"


class LDA(_Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling.

    ``LDA(num_topics=20, alpha=0.1, beta=0.01, sampler="parallel")``; samplers: "parallel"
    (blocked collapsed sweep, the fast default; ``mh_steps=2`` swaps its O(K) exact draws for O(1)
    Metropolis-Hastings moves, for very large K), "sequential" (exact collapsed Gibbs,
    token by token), "uncollapsed" (exact blocked Gibbs over theta, phi, z).
    See ``jaxtopics.models.lda`` for the kernels and their equations.
    """

    name = "lda"
    module = lda
    options = (Option("--num-topics", "num_topics", int, "K, the number of topics"),
               Option("--sync-every", "sync_every", int,
                      "sharded runs: blocks between exchanges of word-topic moves (LDA; default 1)"))

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, mh_steps: int = 0,
                 chunk_size: int = 8192, init: str = "random", sync_every: int = 1):
        self.params = lda.check_params(lda.Params(
            num_topics=num_topics, alpha=_number(alpha, "alpha"), beta=_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, mh_steps=mh_steps, chunk_size=chunk_size,
            init=init, sync_every=sync_every))


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
    options = (Option("--num-topics", "num_topics", int, "K, the number of topics"),)
    needs_sentences = True

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, chunk_size: int = 8192):
        self.params = slda.check_params(slda.Params(
            num_topics=num_topics, alpha=_number(alpha, "alpha"), beta=_number(beta, "beta"),
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
    options = (Option("--gamma", "gamma", float, "concentration of each label's DP over topics (dpmrm)"),
               Option("--eta", "eta", float, "Dirichlet over a document's labels (dpmrm)"))
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
        """``_Estimator.fit`` after checking the corpus: label sets present, every label used."""
        if isinstance(corpus, Corpus):
            dpmrm.check_training_corpus(corpus)
        return super().fit(corpus, *args, **kwargs)


def _number(x: Any, name: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {x!r}") from None
