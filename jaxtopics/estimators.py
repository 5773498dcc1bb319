"""User facade: ``LDA(num_topics=20).fit(corpus)`` -> a fitted model (tomotopy-short).

The functional core (``jaxtopics.models.lda``: prepare/init/sweep/...) stays available for users
who want to vmap chains or write kernels; this module only wires it to the driver (fit.py): the
shared ``_Estimator.fit``, one short estimator class per model (LDA, SentenceLDA, PTM, DMM,
DPMM, DPMRM, HDP) and the registry they enter (``MODELS``: ``load``, the CLI and the fitted
model find a model by its name there). Every model follows the same public contract:
``Estimator(...).fit(corpus, num_sweeps, seed)`` -> ``FittedModel`` with ``topic_word``,
``doc_topic``, ``assignments``, ``log_joint_per_token()``, ``trace``, ``top_words(n)``,
``summary()``, ``save(path)``, ``resume(corpus, num_sweeps)``; ``jaxtopics.load(path)``. The
fitted model lives in ``fitted.py``, model files in ``model_files.py``, the mapping of new
documents in ``new_documents.py`` and device resolution in ``devices.py``.
"""

from __future__ import annotations

import copy
import os
from types import ModuleType
from typing import Any, Callable, ClassVar, Mapping, Sequence

import jax
import numpy as np

from . import memory, sampled_concentrations, seed_words as _seeds
from .corpus import Corpus
from .devices import _on_every_process, _require_same_settings
from .errors import CorpusError, ParameterError
from .fit import TracePoint, chain_keys, check_callback, in_32_bits, run_chains
from .fitted import FittedHDP, FittedModel, _check_sweeps, _fingerprint, params_repr
from .models import dmm, dpmm, dpmrm, hdp, lda, ptm, slda
from .models.base import Growable, kernel_module
from .options import MODEL_OPTIONS, Option
from .validate import check_number, check_seed

# Re-exported from the modules this one was split into (issue 32), so that the package's
# importers and pickles of fitted models made while FittedModel lived here (pickle finds a class
# by its module and name) keep working:
from .devices import resolve_devices  # noqa: F401
from .fitted import _empty_topics  # noqa: F401
from .model_files import _check_writable_file, load  # noqa: F401
from .new_documents import TransformInfo, _map_new_documents, _warn_unknown_words  # noqa: F401

__all__ = ["LDA", "DMM", "DPMM", "DPMRM", "HDP", "PTM", "SentenceLDA", "FittedModel", "FittedHDP",
           "Option", "TransformInfo", "load", "MODELS"]

#: model name -> estimator class (filled by ``_Estimator.__init_subclass__``), for load(), the CLI,
#: the fitted model (its model module) and the mapping of new documents (sentences, labels)
MODELS: dict[str, type["_Estimator"]] = {}


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
            devices: int | str | None = None,
            callback: Callable[[TracePoint, FittedModel], Any] | None = None) -> FittedModel:
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

        Args:
            corpus: the training Corpus.
            num_sweeps: sweeps to run (0: the initial state).
            seed: any integer; the chain is a function of it.
            eval_every: sweeps between trace points (and one at the end).
            progress: a progress bar; None: only when stderr is a terminal.
            checkpoint_every, checkpoint_path: save the model every `checkpoint_every` sweeps.
            devices: shard the documents over this many devices, "auto", or None (one device).
            callback: ``callback(point, model)`` after every trace point (every `eval_every`
                sweeps and at the end): the :class:`TracePoint` and the fitted model so far.
                Returning ``False`` stops the fit cleanly there (the model has the sweeps run
                so far, its trace ends there, and it saves and resumes as any other); None or
                True go on; an exception propagates (see ``FittedModel.resume``).

        Returns:
            The :class:`FittedModel` (``FittedHDP`` for HDP).

        Raises:
            CorpusError: a corpus the model cannot take (no sentences for Sentence-LDA, ...).
            ParameterError: a bad setting, or a state that would not fit in memory.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> first = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> again = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
            >>> bool((first.assignments == again.assignments).all()), first.sweeps_done
            (True, 50)
        """
        if not isinstance(corpus, Corpus):
            raise CorpusError(f"fit expects a jaxtopics.Corpus, got {type(corpus).__name__}")
        resolved = self._for_corpus(corpus)
        if resolved is not self:
            return resolved.fit(corpus, num_sweeps, seed, eval_every=eval_every, progress=progress,
                                checkpoint_every=checkpoint_every, checkpoint_path=checkpoint_path,
                                devices=devices, callback=callback)
        if callback is not None:
            check_callback(callback)
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
                             devices=devices, callback=callback)

    @in_32_bits
    def fit_chains(self, corpus: Corpus, num_sweeps: int = 1000, seeds: Sequence[int] = (0, 1, 2),
                   *, eval_every: int = 10,
                   callback: Callable[[TracePoint, FittedModel], Any] | None = None
                   ) -> list[FittedModel]:
        """One chain per seed, run together: their states stacked and every sweep ``jax.vmap``-ed
        over the chains (one compiled loop for all; on a GPU, S small chains cost about one).
        Returns one FittedModel per seed, each the chain ``fit(corpus, num_sweeps, seed)`` runs,
        up to float rounding (XLA may order a batch's float sums differently, and then a
        draw near a boundary can go the other way); the same seeds give the same result bitwise.
        A model that grows its state (DPMM, DP-MRM, HDP), a multi-process run or
        ``num_sweeps=0`` runs the chains one after another (``fit``). One device.

        Args:
            corpus: the training Corpus.
            num_sweeps: sweeps per chain.
            seeds: one chain per seed.
            eval_every: sweeps between trace points.
            callback: as in ``fit``, called for every chain at every trace point with that
                chain's point and model. Chains run together stop together: at the first
                point where the callback returned ``False`` for every chain (chains run one
                after another, as listed above, each stop on their own).

        Returns:
            One FittedModel per seed, in the order of `seeds`.

        Example:
            >>> import jaxtopics as jt
            >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
            >>> chains = jt.LDA(num_topics=2).fit_chains(corpus, num_sweeps=50, seeds=(0, 1))
            >>> [chain.seed for chain in chains], [chain.sweeps_done for chain in chains]
            ([0, 1], [50, 50])
        """
        if isinstance(corpus, Corpus) and self._for_corpus(corpus) is not self:
            return self._for_corpus(corpus).fit_chains(corpus, num_sweeps, seeds,
                                                       eval_every=eval_every)
        seeds = [check_seed(s) for s in seeds]
        if not seeds:
            raise ParameterError("seeds must list at least one seed")
        num_sweeps, eval_every, _ = _check_sweeps(num_sweeps, eval_every, None)
        if callback is not None:
            check_callback(callback)
        module = self.module
        if isinstance(module, Growable) or jax.process_count() > 1 or num_sweeps == 0:
            return [self.fit(corpus, num_sweeps, seed, eval_every=eval_every, progress=False,
                             callback=callback) for seed in seeds]
        first = self.fit(corpus, 0, seeds[0], progress=False)   # checks the corpus and memory
        first.trace = []
        data = first._data
        chains = [first] + [
            self.fitted_class(self.name, self.params, corpus.vocab, seed,
                              module.init(chain_keys(seed)[0], data, self.params), data,
                              first.corpus_fingerprint, 0, [], first.num_tokens)
            for seed in seeds[1:]]
        states = jax.tree.map(lambda *a: jax.numpy.stack(a), *[c._state for c in chains])
        keys = jax.numpy.stack([chain_keys(seed)[1] for seed in seeds])
        for chain in chains:
            chain.text_options, chain.label_names = corpus.text_options, corpus.label_names

        def settle(states, traces):            # every chain's model as it stands after a chunk
            for c, (chain, trace) in enumerate(zip(chains, traces)):
                chain._state = jax.tree.map(lambda a, c=c: a[c], states)
                chain.sweeps_done, chain.trace = trace[-1].sweep, list(trace)
                chain.__dict__.pop("_estimate_cache", None)

        def on_eval(states, done, traces):
            settle(states, traces)
            answers = [callback(chain.trace[-1], chain) for chain in chains]
            return not all(a is not None and not a for a in answers)
        states, traces = run_chains(module, self.params, data, states, keys,
                                    num_sweeps=num_sweeps, num_tokens=first.num_tokens,
                                    eval_every=eval_every, num_units=first._num_units(corpus),
                                    on_eval=None if callback is None else on_eval)
        settle(states, traces)
        return chains

    def __repr__(self) -> str:
        return f"{type(self).__name__}({params_repr(self.params)})"

    #: seed words given by their strings, resolved against a corpus at fit time (None: none)
    _seed_spec: tuple | None = None

    def _for_corpus(self, corpus: Corpus) -> "_Estimator":
        """This estimator with what depends on the corpus resolved (seed words given as strings:
        a copy whose Params hold their word ids); itself when nothing does."""
        if self._seed_spec is None:
            return self
        spec, weight, unknown = self._seed_spec
        resolved = copy.copy(self)
        resolved._seed_spec = None
        resolved.params = self.module.check_params(self.params._replace(
            seed_words=_seeds.resolve(spec, corpus.vocab, self.params.num_topics, weight, unknown)))
        return resolved

    def _take_seed_words(self, seed_words: Mapping | None, seed_weight: float,
                         unknown_seed_words: str) -> None:
        """Check the seed words' form now (topics, strings, weights; the words themselves are
        matched to the vocabulary at fit time) and keep them for :meth:`_for_corpus`."""
        _seeds.resolve(seed_words, (), self.params.num_topics, seed_weight, "skip")
        if unknown_seed_words not in ("error", "skip"):
            raise ParameterError(f"unknown_seed_words must be 'error' or 'skip', got "
                                 f"{unknown_seed_words!r}")
        if seed_words:
            self._seed_spec = (dict(seed_words), float(seed_weight), unknown_seed_words)
            # the seeds' settings checks (optimize_beta, mh_steps) apply before fit too
            self.module.check_params(self.params._replace(
                seed_words=tuple((int(t), 0, 1.0) for t in seed_words)))

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
    return check_number(x, name)


class LDA(_Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling.

    ``LDA(num_topics=20, alpha=0.1, beta=0.01, sampler="parallel")``; samplers: "parallel"
    (blocked collapsed sweep, the fast default; ``mh_steps=2`` swaps its O(K) exact draws for O(1)
    Metropolis-Hastings moves, for very large K), "sequential" (exact collapsed Gibbs,
    token by token), "uncollapsed" (exact blocked Gibbs over theta, phi, z). Fitted on several
    devices (``fit(..., devices=P)``), the devices share n_kw by rotating P word groups
    (``exchange="rotate"``, the default with the dense draw: exact rows, 2P + 1 collectives a
    sweep) or by exchanging their moves every ``sync_every`` blocks (``exchange="moves"``, the
    default with ``draw="sparse"``).
    ``optimize_alpha="symmetric"`` or ``"asymmetric"`` and ``optimize_beta=True`` learn the
    priors from the chain (``jaxtopics.hyper``: the Dirichlet-multinomial evidence of the counts,
    every ``optimize_every`` sweeps after ``burn_in``); the fitted ``alpha`` (a float, [K] when
    asymmetric) and ``beta`` are the values in use.
    ``seed_words={topic: [words]}`` guides topics (``jaxtopics.seed_words``): each seed word gets
    beta + ``seed_weight`` in its topic's row of the topic-word prior (beta elsewhere), used by
    every kernel, the joint, phi, ``transform`` and the held-out scores; the fitted ``beta`` is
    then that [K, V] prior. The words are matched to the corpus vocabulary at fit time.
    See ``jaxtopics.models.lda`` for the kernels and their equations.

    Args:
        num_topics: K.
        alpha: the symmetric doc-topic Dirichlet (the start, when learned).
        beta: the symmetric topic-word Dirichlet (the start, when learned).
        sampler: "parallel", "sequential" or "uncollapsed".
        num_blocks: blocks per parallel sweep (its staleness is ~1/num_blocks of the corpus).
        mh_steps: 0: exact draws; > 0: that many Metropolis-Hastings cycles per token.
        chunk_size: tokens per chunk of a [tokens, K] working array.
        init: "random" (uniform topics) or "incremental" (each block drawn given those before).
        sync_every, exchange: sharded runs (above; ``jaxtopics.models.lda.Params``).
        optimize_alpha: None (alpha stays as given), "symmetric" or "asymmetric": learn alpha.
        optimize_beta: learn beta.
        optimize_every, burn_in: sweeps between two updates; sweeps before the first.
        optimizer: "minka" (Minka's fixed point) or "optax" (L-BFGS); ``jaxtopics.hyper``.
        seed_words: {topic id: [words]} (or {topic id: {word: weight}}): guided topics; None:
            the symmetric prior. Not with ``optimize_beta`` or ``mh_steps``.
        seed_weight: the pseudo-count a listed seed word adds to its topic's prior (default 1).
        unknown_seed_words: "error" (default: a seed word the corpus lacks is an error naming
            it and its topic) or "skip" (it is left out).
        draw: the exact parallel kernel's per-token draw: "dense" (O(K)), "sparse" (SparseLDA /
            CuLDA's split, ``jaxtopics.ops.sparse_draw``: the same law, O(document length +
            sqrt(K)) per token) or "auto" (default: by K and backend,
            ``jaxtopics.models.lda_sparse``).

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0)
        >>> sorted(sorted(word for word, p in words) for words in model.top_words(3))
        [['apple', 'banana', 'cherry'], ['car', 'engine', 'wheel']]
        >>> model.doc_topic.shape, model.topic_word.shape
        ((20, 2), (2, 6))
    """

    name = "lda"
    module = lda
    options = MODEL_OPTIONS["lda"]

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, mh_steps: int = 0,
                 chunk_size: int = 8192, init: str = "random", sync_every: int = 4,
                 exchange: str | None = None, optimize_alpha: str | None = None,
                 optimize_beta: bool = False, optimize_every: int = 10, burn_in: int = 50,
                 optimizer: str = "minka", seed_words: Mapping[int, Any] | None = None,
                 seed_weight: float = _seeds.DEFAULT_WEIGHT, unknown_seed_words: str = "error",
                 draw: str = "auto"):
        self.params = lda.check_params(lda.Params(
            num_topics=num_topics, alpha=check_number(alpha, "alpha"), beta=check_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, mh_steps=mh_steps, chunk_size=chunk_size,
            init=init, sync_every=sync_every, exchange=exchange, optimize_alpha=optimize_alpha,
            optimize_beta=optimize_beta, optimize_every=optimize_every, burn_in=burn_in,
            optimizer=optimizer, draw=draw))
        self._take_seed_words(seed_words, seed_weight, unknown_seed_words)


#: why ``SentenceLDA(seed_words=...)`` is refused
_SLDA_NO_SEEDS = (
    "SentenceLDA does not support seed_words: a sentence's topic is drawn from the Polya "
    "predictive of all its words at once (eq. 10, ops.block_log_predictive), whose per-topic "
    "word prior is not wired through Sentence-LDA's kernels, split-merge moves, sharded sweeps "
    "and read-outs; seed words are supported by LDA and PTM (jt.LDA or jt.PTM with seed_words)")


class SentenceLDA(_Estimator):
    """Sentence-LDA: every sentence's tokens share one topic (seed 000 eq. 10-12).

    ``SentenceLDA(num_topics=20, alpha=0.1, beta=0.01, sampler="parallel")`` on a corpus with
    sentences (``Corpus.from_texts(texts, sentences=True)``, or token lists of sentences);
    samplers: "parallel" (blocks of sentences drawn at once, the fast default), "sequential"
    (exact collapsed Gibbs, sentence by sentence). Fitted: LDA's read-outs plus
    ``sentence_topics`` [num_sentences]. Learned priors as LDA's (``optimize_alpha``,
    ``optimize_beta``, ``optimize_every``, ``burn_in``, ``optimizer``): alpha from the
    sentences-per-topic counts of the documents, beta from the topics' word counts; the fitted
    ``alpha`` (a float, [K] when asymmetric) and ``beta`` are the values in use.
    See ``jaxtopics.models.slda``.

    Args:
        num_topics: K.
        alpha, beta: the symmetric doc-topic and topic-word Dirichlets.
        sampler: "parallel", "sequential", "crf" or "crf_sequential".
        num_blocks: blocks of sentences per parallel sweep.
        chunk_size: sentences per chunk of a working array.
        split_merge_steps: split-merge moves of two topics' sentences per sweep (0: none).
        optimize_alpha: None (alpha stays as given), "symmetric" or "asymmetric": learn alpha.
        optimize_beta: learn beta.
        optimize_every, burn_in: sweeps between two updates; sweeps before the first.
        optimizer: "minka" (Minka's fixed point) or "optax" (L-BFGS); ``jaxtopics.hyper``.
        seed_words: not supported (only None): seed words exist for LDA and PTM, whose token
            step takes a per-topic word prior; Sentence-LDA's sentence draw, its split-merge
            moves and its sharded sweeps are not wired for one (a ParameterError says so).

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["Apple banana apple. Cherry apple fruit.",
        ...                                "Car engine car. Wheel road car."] * 10, sentences=True)
        >>> corpus.num_sentences
        40
        >>> jt.SentenceLDA(num_topics=2)             # then .fit(corpus, num_sweeps, seed)
        SentenceLDA(num_topics=2, alpha=0.1, beta=0.01, sampler='parallel', ...)
    """

    name = "slda"
    module = slda
    options = MODEL_OPTIONS["slda"]
    needs_sentences = True

    def __init__(self, num_topics: int = 20, alpha: float = 0.1, beta: float = 0.01,
                 sampler: str = "parallel", *, num_blocks: int = 64, chunk_size: int = 8192,
                 split_merge_steps: int = 1, optimize_alpha: str | None = None,
                 optimize_beta: bool = False, optimize_every: int = 10, burn_in: int = 50,
                 optimizer: str = "minka", seed_words: None = None):
        if seed_words:
            raise ParameterError(_SLDA_NO_SEEDS)
        self.params = slda.check_params(slda.Params(
            num_topics=num_topics, alpha=check_number(alpha, "alpha"), beta=check_number(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, chunk_size=chunk_size,
            split_merge_steps=split_merge_steps, optimize_alpha=optimize_alpha,
            optimize_beta=optimize_beta, optimize_every=optimize_every, burn_in=burn_in,
            optimizer=optimizer))


class PTM(_Estimator):
    """Pseudo-document topic model (Zuo et al. 2016) for short texts, by collapsed Gibbs sampling.

    ``PTM(num_topics=K, num_pseudo_docs=P, alpha=0.1, beta=0.01, lam=0.1, sampler="parallel")``:
    each short document joins one of P latent pseudo-documents whose topic mixture its tokens
    share. Samplers: "parallel" (blocked: documents' pseudo-documents, then tokens' topics, each
    block drawn at once; the fast default), "sequential" (exact collapsed Gibbs, document by
    document). Fitted read-outs besides LDA's: ``pseudo_doc_topic`` [P, K], ``pseudo_labels`` [D];
    ``doc_topic`` is each short document's. Learned priors as LDA's (``optimize_alpha``,
    ``optimize_beta``, ``optimize_every``, ``burn_in``, ``optimizer``): alpha from the
    pseudo-documents' topic counts, beta from the topics' word counts (lam stays fixed); the
    fitted ``alpha`` (a float, [K] when asymmetric) and ``beta`` are the values in use.
    ``seed_words={topic: [words]}`` guides topics exactly as LDA's (``jaxtopics.seed_words``):
    each seed word gets beta + ``seed_weight`` in its topic's row of the topic-word prior, used
    by both kernels, the joint, phi, ``transform`` and the held-out scores; the fitted ``beta``
    is then that [K, V] prior.
    See ``jaxtopics.models.ptm``.

    Args:
        num_topics: K.
        num_pseudo_docs: P.
        alpha, beta: the symmetric pseudo-document-topic and topic-word Dirichlets.
        lam: the Dirichlet over pseudo-documents.
        sampler: "parallel" or "sequential".
        num_blocks: blocks of documents per parallel sweep.
        chunk_size: tokens per chunk of a working array.
        optimize_alpha: None (alpha stays as given), "symmetric" or "asymmetric": learn alpha.
        optimize_beta: learn beta.
        optimize_every, burn_in: sweeps between two updates; sweeps before the first.
        optimizer: "minka" (Minka's fixed point) or "optax" (L-BFGS); ``jaxtopics.hyper``.
        seed_words: {topic id: [words]} (or {topic id: {word: weight}}): guided topics; None:
            the symmetric prior. Not with ``optimize_beta``.
        seed_weight: the pseudo-count a listed seed word adds to its topic's prior (default 1).
        unknown_seed_words: "error" (default: a seed word the corpus lacks is an error naming
            it and its topic) or "skip" (it is left out).
        draw: the parallel kernel's token draw: "dense" (O(K)), "sparse" (SparseLDA / CuLDA's
            split, the same law: O(distinct topics of a pseudo-document + sqrt K) per token,
            O(P K) per block; parallel sampler, no seed words) or "auto" (default: sparse on
            the CPU from K = 5000 when a block holds >= 128 tokens per pseudo-document).

    Example:
        >>> import jaxtopics as jt
        >>> jt.PTM(num_topics=2, num_pseudo_docs=4)     # then .fit(corpus, num_sweeps, seed)
        PTM(num_topics=2, num_pseudo_docs=4, alpha=0.1, beta=0.01, lam=0.1, ...)
    """

    name = "ptm"
    module = ptm
    options = MODEL_OPTIONS["ptm"]

    def __init__(self, num_topics: int = 20, num_pseudo_docs: int = 100, alpha: float = 0.1,
                 beta: float = 0.01, lam: float = 0.1, sampler: str = "parallel", *,
                 num_blocks: int = 64, chunk_size: int = 8192, optimize_alpha: str | None = None,
                 optimize_beta: bool = False, optimize_every: int = 10, burn_in: int = 50,
                 optimizer: str = "minka", seed_words: Mapping[int, Any] | None = None,
                 seed_weight: float = _seeds.DEFAULT_WEIGHT, unknown_seed_words: str = "error",
                 draw: str = "auto"):
        self.params = ptm.check_params(ptm.Params(
            num_topics=num_topics, num_pseudo_docs=num_pseudo_docs, alpha=check_number(alpha, "alpha"),
            beta=check_number(beta, "beta"), lam=check_number(lam, "lam"),
            sampler=sampler, num_blocks=num_blocks, chunk_size=chunk_size,
            optimize_alpha=optimize_alpha, optimize_beta=optimize_beta,
            optimize_every=optimize_every, burn_in=burn_in, optimizer=optimizer, draw=draw))
        self._take_seed_words(seed_words, seed_weight, unknown_seed_words)


class DMM(_Estimator):
    """Dirichlet multinomial mixture for short texts, by collapsed Gibbs sampling (GSDMM).

    ``DMM(num_clusters=300, alpha=0.1, beta=0.1, sampler="parallel")``: every document belongs
    to one of at most K clusters (GSDMM leaves the unneeded ones empty). Samplers: "parallel"
    (blocks of documents drawn at once against the counts at the block's start, the default)
    and "sequential" (exact collapsed Gibbs, one document at a time). Fitted read-outs:
    ``labels`` [D], ``cluster_sizes`` [K], ``num_active_clusters``, ``cluster_weights`` [K],
    ``topic_word`` (phi [K, V]) and ``doc_topic`` (p(cluster | document) [D, K]).
    Learned priors as LDA's: alpha from the cluster sizes, beta from the clusters' word
    counts; the fitted ``alpha`` (a float, [K] when asymmetric) and ``beta`` are the values in
    use. See ``jaxtopics.models.dmm`` for the equations.

    Args:
        num_clusters: K, the most clusters.
        alpha: the symmetric Dirichlet over clusters.
        beta: the symmetric Dirichlet over each cluster's words.
        sampler: "parallel" or "sequential".
        num_blocks: blocks of documents per parallel sweep.
        chunk_size: slots per chunk of a working array.
        optimize_alpha: None (alpha stays as given), "symmetric" or "asymmetric": learn alpha.
        optimize_beta: learn beta.
        optimize_every, burn_in: sweeps between two updates; sweeps before the first.
        optimizer: "minka" (Minka's fixed point) or "optax" (L-BFGS); ``jaxtopics.hyper``.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> from jaxtopics import metrics
        >>> model = jt.DMM(num_clusters=4).fit(corpus, num_sweeps=20, seed=0)
        >>> model.num_active_clusters, round(metrics.nmi([0, 1] * 10, model.labels), 6)
        (2, 1.0)
    """

    name = "dmm"
    module = dmm
    options = MODEL_OPTIONS["dmm"]

    def __init__(self, num_clusters: int = 300, alpha: float = 0.1, beta: float = 0.1,
                 sampler: str = "parallel", *, num_blocks: int = 64, chunk_size: int = 8192,
                 optimize_alpha: str | None = None, optimize_beta: bool = False,
                 optimize_every: int = 10, burn_in: int = 50, optimizer: str = "minka"):
        self.params = dmm.check_params(dmm.Params(
            num_clusters=num_clusters, alpha=_concentration(alpha, "alpha"),
            beta=_concentration(beta, "beta"), sampler=sampler, num_blocks=num_blocks,
            chunk_size=chunk_size, optimize_alpha=optimize_alpha, optimize_beta=optimize_beta,
            optimize_every=optimize_every, burn_in=burn_in, optimizer=optimizer))


class DPMM(_Estimator):
    """Dirichlet process multinomial mixture for short texts, by collapsed Gibbs (GSDPMM).

    ``DPMM(alpha=1.0, beta=0.02, sampler="parallel")``: the number of clusters is inferred
    (alpha, the Dirichlet process concentration, is the weight of a new cluster; Yin & Wang use
    0.1 x the number of documents). Cluster slots grow on demand (``capacity`` is only the
    starting size). Read-outs cover the active clusters only, relabelled 0..C-1 by decreasing
    size: ``labels`` [D], ``cluster_sizes`` [C], ``num_active_clusters``, ``cluster_weights``,
    ``topic_word`` [C, V], ``doc_topic`` [D, C]. ``resample_concentrations=True`` draws alpha
    after every sweep (Escobar & West 1995; Gamma(prior_shape, prior_rate) prior), starting
    at ``alpha``; the fitted ``alpha`` is the value in use. See ``jaxtopics.models.dpmm``.

    Args:
        alpha: the DP concentration.
        beta: the symmetric Dirichlet over each cluster's words.
        sampler: "parallel" or "sequential".
        num_blocks: blocks of documents per parallel sweep.
        capacity: cluster slots of the initial state (grown by doubling when full).
        init: "incremental" (GSDPMM's: the first sweep seats the documents one by one), "one"
            (one cluster) or "random" (uniform over ``init_clusters`` clusters).
        init_clusters: the clusters of ``init="random"``.
        chunk_size: slots per chunk of a working array.
        resample_concentrations: draw the concentrations after every sweep (the values given
            are the starts).
        prior_shape, prior_rate: their Gamma prior.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> model = jt.DPMM(alpha=1.0).fit(corpus, num_sweeps=20, seed=0)
        >>> model.num_active_clusters, model.doc_topic.shape     # the two kinds of text
        (2, (20, 2))
    """

    name = "dpmm"
    module = dpmm
    options = MODEL_OPTIONS["dpmm"]

    def __init__(self, alpha: float = 1.0, beta: float = 0.02, sampler: str = "parallel", *,
                 num_blocks: int = 64, capacity: int = 64, init: str = "incremental",
                 init_clusters: int = 1, chunk_size: int = 8192,
                 resample_concentrations: bool = False, prior_shape: float = 1.0,
                 prior_rate: float = 1.0):
        params = dpmm.check_params(dpmm.Params(
            alpha=_concentration(alpha, "alpha"), beta=_concentration(beta, "beta"),
            sampler=sampler, num_blocks=num_blocks, capacity=capacity, init=init,
            init_clusters=init_clusters, chunk_size=chunk_size,
            resample_concentrations=resample_concentrations, prior_shape=prior_shape,
            prior_rate=prior_rate))
        self.params = params._replace(**sampled_concentrations.check(params))
        sampled_concentrations.refuse_unused_prior(self.params)

    def fit(self, corpus: Corpus, num_sweeps: int = 1000, *args: Any, **kwargs: Any) -> FittedModel:
        """``_Estimator.fit``; the "incremental" start seats the documents in the first sweep,
        so it needs at least one (its state before that has no clusters to read out).

        Args:
            corpus: the training Corpus.
            num_sweeps: sweeps to run (at least 1 with ``init="incremental"``).
            *args, **kwargs: as in ``_Estimator.fit``.

        Returns:
            The FittedModel."""
        if self.params.init == "incremental" and not isinstance(num_sweeps, bool) and num_sweeps == 0:
            raise ParameterError("DPMM's incremental start (init='incremental', the default) seats "
                                 "the documents in the first sweep: fit at least 1 sweep "
                                 "(--sweeps 1 on the command line), or in Python start from "
                                 "init='one' or 'random' to read an unswept state")
        return super().fit(corpus, num_sweeps, *args, **kwargs)


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
    ``num_active_topics``, ``topic_sizes``; ``perplexity(held_out)``.
    ``resample_concentrations=True`` draws alpha and gamma after every sweep (Teh et al. 2006,
    appendix A: documents' tables, labels' topics; Gamma(prior_shape, prior_rate) priors),
    starting at ``alpha`` and ``gamma``; the fitted ``alpha`` and ``gamma`` are the values in
    use. See ``jaxtopics.models.dpmrm``.

    Args:
        alpha: every document's DP concentration (over tables).
        beta: the symmetric topic-word Dirichlet.
        gamma: every label's DP concentration (over topics).
        eta: the symmetric Dirichlet over a document's labels.
        sampler: "parallel" or "sequential".
        initial_topics: topics per label in the initial state.
        num_blocks: blocks of documents per parallel sweep.
        topic_capacity, table_capacity: initial slots (0: automatic; grown by doubling).
        chunk_size: tokens per chunk of held-out likelihoods.
        resample_concentrations: draw the concentrations after every sweep (the values given
            are the starts).
        prior_shape, prior_rate: their Gamma prior.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10,
        ...                               labels=[["fruit"], ["car"]] * 10)
        >>> corpus.label_set(1)
        ('car',)
        >>> jt.DPMRM(alpha=1.0, gamma=1.0)             # then .fit(corpus, num_sweeps, seed)
        DPMRM(alpha=1.0, beta=0.05, gamma=1.0, eta=1.0, sampler='parallel', ...)
    """

    name = "dpmrm"
    module = dpmrm
    options = MODEL_OPTIONS["dpmrm"]
    #: the corpus must carry label sets (the CLI reads ``label1--label2<TAB>text`` lines)
    needs_labels = True

    def __init__(self, alpha: float = 1.0, beta: float = 0.05, gamma: float = 1.0, eta: float = 1.0,
                 sampler: str = "parallel", *, initial_topics: int = 4, num_blocks: int = 64,
                 topic_capacity: int = 0, table_capacity: int = 0, chunk_size: int = 8192,
                 resample_concentrations: bool = False, prior_shape: float = 1.0,
                 prior_rate: float = 1.0):
        params = dpmrm.check_params(dpmrm.Params(          # refuses bools, strings, inf, <= 0
            alpha=alpha, beta=beta, gamma=gamma, eta=eta, sampler=sampler, num_blocks=num_blocks,
            topic_capacity=topic_capacity, table_capacity=table_capacity,
            initial_topics=initial_topics, chunk_size=chunk_size,
            resample_concentrations=resample_concentrations, prior_shape=prior_shape,
            prior_rate=prior_rate))
        self.params = params._replace(alpha=float(alpha), beta=float(beta), gamma=float(gamma),
                                      eta=float(eta), num_blocks=int(num_blocks),
                                      topic_capacity=int(topic_capacity),
                                      table_capacity=int(table_capacity),
                                      initial_topics=int(initial_topics), chunk_size=int(chunk_size),
                                      **sampled_concentrations.check(params))
        sampled_concentrations.refuse_unused_prior(self.params)

    def fit(self, corpus: Corpus, *args: Any, **kwargs: Any) -> FittedModel:
        """``_Estimator.fit`` after checking the corpus.

        Args:
            corpus: the training Corpus: label sets present, every label used (on some
                process's documents, in a multi-process fit).
            *args, **kwargs: as in ``_Estimator.fit``.

        Returns:
            The FittedModel.

        Raises:
            CorpusError: a document without labels, or a label no document has."""
        if isinstance(corpus, Corpus):
            from .distributed import process_sum           # the identity in one process
            _on_every_process(lambda: dpmrm.check_label_sets(corpus))
            dpmrm.check_training_corpus(corpus, process_sum)
        return super().fit(corpus, *args, **kwargs)


class _ByKernel:
    """An estimator's ``module`` where a model keeps its kernels in several modules sharing one
    Params (``models.base.kernel_module``): the model's module on the class (the registry:
    its Params), the module of the instance's sampler on an instance."""

    def __init__(self, module: ModuleType):
        self.module = module

    def __get__(self, obj: Any, cls: Any = None) -> ModuleType:
        return self.module if obj is None else kernel_module(self.module, obj.params)


class HDP(_Estimator):
    """Hierarchical Dirichlet process, a nonparametric LDA.

    ``HDP(alpha=1.0, gamma=1.0, beta=0.05, sampler="parallel", initial_topics=1)``: alpha the
    document-level and gamma the corpus-level DP concentration, beta the topic-word Dirichlet.
    Samplers: "parallel" (the fast default: direct assignment, Teh et al. 2006 sec. 5.3, LDA's
    blocked token draw with the prior alpha beta_k of the instantiated topic weights beta),
    "sequential" (the same, exact, token by token), "crf" (blocked table and dish steps of the
    Chinese restaurant franchise) and "crf_sequential" (the exact CRF sampler). All run
    ``split_merge_steps`` exact split-merge moves of whole topics, in a sweep with probability
    1 / ``split_merge_every`` (0: automatic, 1/8 for direct assignment and every sweep for the
    CRF); ``resample_concentrations=True`` draws alpha and gamma too
    (Gamma(prior_shape, prior_rate) priors; a draw below 1e-30, outside float32's useful range,
    is kept at 1e-30).
    Fitted: ``num_active_topics``, ``topic_sizes``, ``topic_word`` / ``doc_topic`` over the active
    topics, ``to_lda()``. See ``jaxtopics.models.hdp_direct`` and ``jaxtopics.models.hdp`` for
    the kernels and their equations.

    Args:
        alpha: the document-level DP concentration.
        gamma: the corpus-level DP concentration.
        beta: the symmetric topic-word Dirichlet.
        sampler: "parallel" or "sequential".
        initial_topics: topics of the random initial state.
        resample_concentrations: draw the concentrations after every sweep (the values given
            are the starts).
        prior_shape, prior_rate: their Gamma prior.
        split_merge_steps: split-merge moves of topics per sweep (0: none).
        split_merge_every: E, the moves run in a sweep with probability 1/E (0: automatic).
        num_blocks: token blocks per parallel sweep.
        dish_groups: document groups of the "crf" kernel's dish step.
        topic_capacity, table_capacity: initial capacities (0: automatic; grown as needed;
            tables: "crf" kernels only).
        chunk_size: tokens per chunk of the token draw (direct assignment) or the dish step.

    Example:
        >>> import jaxtopics as jt
        >>> jt.HDP(alpha=1.0, gamma=1.0)              # then .fit(corpus, num_sweeps, seed)
        HDP(alpha=1.0, gamma=1.0, beta=0.05, sampler='parallel', initial_topics=1, ...)
    """

    name = "hdp"
    module = _ByKernel(hdp)
    fitted_class = FittedHDP
    options = MODEL_OPTIONS["hdp"]

    def __init__(self, alpha: float = 1.0, gamma: float = 1.0, beta: float = 0.05,
                 sampler: str = "parallel", initial_topics: int = 1, *,
                 resample_concentrations: bool = False, split_merge_steps: int = 10,
                 num_blocks: int = 64, dish_groups: int = 1, topic_capacity: int = 0,
                 table_capacity: int = 0, prior_shape: float = 1.0, prior_rate: float = 1.0,
                 chunk_size: int = 4096, split_merge_every: int = 0):
        params = hdp.check_params(hdp.Params(
            alpha=alpha, gamma=gamma, beta=beta, sampler=sampler, initial_topics=initial_topics,
            resample_concentrations=resample_concentrations,
            split_merge_steps=split_merge_steps, num_blocks=num_blocks, dish_groups=dish_groups,
            topic_capacity=topic_capacity, table_capacity=table_capacity,
            prior_shape=prior_shape, prior_rate=prior_rate, chunk_size=chunk_size,
            split_merge_every=split_merge_every))
        floats = ("alpha", "gamma", "beta", "prior_shape", "prior_rate")
        ints = ("initial_topics", "split_merge_steps", "num_blocks", "dish_groups",
                "topic_capacity", "table_capacity", "chunk_size", "split_merge_every")
        self.params = params._replace(
            **{f: float(getattr(params, f)) for f in floats},
            **{f: int(getattr(params, f)) for f in ints},
            resample_concentrations=bool(resample_concentrations))
        sampled_concentrations.refuse_unused_prior(self.params)
