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
from .models import hdp, lda

__all__ = ["LDA", "HDP", "FittedModel", "FittedHDP", "Option", "load", "MODELS"]

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
        if name.startswith("_") or "_state" not in self.__dict__:
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
        if corpus.fingerprint() != self.corpus_fingerprint:
            raise CorpusError("resume: this corpus is not the one the model was fitted on "
                              f"(fingerprint {corpus.fingerprint()[:12]} != {self.corpus_fingerprint[:12]})")
        if self._data is None:
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
            self._state, self.sweeps_done, self.trace = to_global(state), done, old_trace + trace

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
        state, sdata = distributed.place(distributed.shard_state(self._state, sdata), sdata, mesh)
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

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one file (npz + json metadata, version-tagged, atomic)."""
        arrays = {f"state.{k}": np.asarray(v) for k, v in self._state._asdict().items()}
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
    return MODELS[name].fitted_class(
        name, params, tuple(str(w) for w in arrays["vocab"]), int(meta["seed"]), state, None,
        meta["corpus_fingerprint"], int(meta["sweeps_done"]), trace, int(meta["num_tokens"]))


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
    #: the fitted object's class (a FittedModel subclass adds model-specific methods)
    fitted_class: ClassVar[type[FittedModel]] = FittedModel

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
        state = self.module.init(init_key, data, self.params)
        fitted = self.fitted_class(self.name, self.params, corpus.vocab, int(seed), state, data,
                                   corpus.fingerprint(), 0, [], corpus.num_tokens)
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
    options = (Option("--num-topics", "num_topics", int, "K, the number of topics"),)

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, mh_steps: int = 0,
                 chunk_size: int = 8192, init: str = "random"):
        self.params = lda.check_params(lda.Params(
            num_topics=num_topics, alpha=_number(alpha, "alpha"), beta=_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, mh_steps=mh_steps, chunk_size=chunk_size,
            init=init))


def _number(x: Any, name: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {x!r}") from None


class FittedHDP(FittedModel):
    """A fitted HDP chain: FittedModel's read-outs over the active topics (largest first), plus
    ``num_active_topics``, ``topic_sizes``, ``topic_tables`` and `to_lda`."""

    def to_lda(self, alpha: float | None = None, beta: float | None = None,
               sampler: str = "parallel", **options: Any) -> FittedModel:
        """An LDA fitted object initialised from this state, to continue with LDA's kernels.

        K = the active topics, each token keeps its topic (numbered as ``topic_word``'s rows).
        `alpha` defaults to the HDP's alpha / K (the same total prior mass per document),
        `beta` to the HDP's. The LDA chain starts at sweep 0 with this model's seed; continue it
        with ``.resume(corpus, num_sweeps)`` (the corpus this model was fitted on).
        """
        from .ops import count_table

        state = self._state
        z = jnp.asarray(hdp.assignments(state))
        k = int(hdp.active_topics(state).shape[0])
        if alpha is None:
            alpha = float(state.alpha) / k
        lda_params = lda.check_params(lda.Params(
            num_topics=k, alpha=_number(alpha, "alpha"),
            beta=_number(self.params.beta if beta is None else beta, "beta"),
            sampler=sampler, **options))
        lda_state = None
        if self._data is not None:
            n = z.shape[0]
            doc, word = self._data.doc[:n], self._data.word[:n]
            v = self._data.word_freq.shape[0]
            lda_state = lda.State(z=jnp.append(z, 0).astype(jnp.int32),
                                  doc_topic=count_table((self._data.doc_len.shape[0], k), doc, z),
                                  word_topic=count_table((v, k), word, z),
                                  topic=count_table((k,), z))
        else:           # loaded from a file: the counts are rebuilt by resume(corpus, ...)
            lda_state = lda.State(z=jnp.append(z, 0).astype(jnp.int32),
                                  doc_topic=jnp.zeros((self.doc_topic.shape[0], k), jnp.int32),
                                  word_topic=jnp.zeros((len(self.vocab), k), jnp.int32),
                                  topic=jnp.zeros((k,), jnp.int32))
        return FittedModel("lda", lda_params, self.vocab, self.seed, lda_state, None,
                           self.corpus_fingerprint, 0, [], self.num_tokens)


class HDP(_Estimator):
    """Hierarchical Dirichlet process (Chinese restaurant franchise), a nonparametric LDA.

    ``HDP(alpha=1.0, gamma=1.0, beta=0.05, sampler="parallel", initial_topics=1)``: alpha the
    document-level and gamma the corpus-level DP concentration, beta the topic-word Dirichlet.
    Samplers: "parallel" (blocked table and dish steps, the fast default), "sequential" (the
    exact CRF sampler of Teh et al. 2006). Both run ``split_merge_steps`` exact split-merge moves
    of whole topics per sweep; ``resample_concentrations=True`` draws alpha and gamma too.
    Fitted: ``num_active_topics``, ``topic_sizes``, ``topic_word`` / ``doc_topic`` over the active
    topics, ``to_lda()``. See ``jaxtopics.models.hdp`` for the kernels and their equations.
    """

    name = "hdp"
    module = hdp
    fitted_class = FittedHDP
    options = (Option("--gamma", "gamma", float, "corpus-level DP concentration (hdp)"),
               Option("--initial-topics", "initial_topics", int,
                      "topics of the random initial state (hdp)"))

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
