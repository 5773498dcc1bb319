"""scikit-learn estimators over jaxtopics' samplers: ``LDA`` (a transformer with
``LatentDirichletAllocation``'s names), ``DMM`` (a clusterer) and ``TopicModel`` (any other
model that takes a document-term matrix: PTM, DPMM, HDP). They take what a ``CountVectorizer``
gives (a [documents, words] matrix of counts, scipy sparse or dense; ``Corpus.from_sparse``
reads it) and work in a ``Pipeline`` and in ``GridSearchCV`` (``score`` is the held-out
log-likelihood). Needs scikit-learn (extra ``interop``: ``pip install "jaxtopics[interop]"``).

Not covered: Sentence-LDA (a document-term matrix has no sentence boundaries; fit it on
``jt.Corpus.from_texts(texts, sentences=True)``) and DP-MRM (it needs a label set per
document; fit it on a Corpus with ``labels=``). ``TopicModel`` refuses both by name.

How they differ from scikit-learn's variational ``LatentDirichletAllocation``:

* ``max_iter`` counts Gibbs sweeps (default 200), not EM passes.
* ``components_`` is phi, p(word | topic): rows sum to 1 (scikit-learn's are unnormalised
  pseudo-counts; ``components_ / components_.sum(1)[:, None]`` gives phi for both).
* ``transform`` folds new documents in (``FittedModel.transform``, ``transform_sweeps``
  sweeps with the topics held fixed); rows sum to 1. ``fit_transform(X)`` is
  ``fit(X).transform(X)``, as scikit-learn's; the chain's own theta of the training
  documents is ``model_.doc_topic``.
* ``score(X)`` is the held-out log-likelihood sum_d log p(w_d) in nats
  (``jaxtopics.evaluation``, the model's default method), ``perplexity(X)`` its perplexity.
* The counts must be integers (2.0 is fine): a tf-idf matrix is refused with a message
  (``counts="round"`` rounds instead).
* ``random_state=None`` draws a fresh seed at every ``fit`` (scikit-learn's convention); an int
  is the chain's seed (``jt.LDA(...).fit(corpus, seed=random_state)``: same int, same chain).
* The fitted jaxtopics model is ``model_`` (``summary()``, ``top_words()``, ``save()``,
  ``to_pyldavis()``, ...). Its vocabulary is X's column names where X is a DataFrame with
  string columns (``feature_names_in_``), else ``"w0"``, ``"w1"``, ... by column: in a
  ``Pipeline`` read the words off the vectorizer, ``vectorizer.get_feature_names_out()``.

scikit-learn's estimator checks (``sklearn.utils.estimator_checks``) pass, but for those
:func:`expected_failed_checks` lists with their reasons (DMM's ``check_clustering``, fed negative
data); with ``random_state=None`` scikit-learn skips the checks that compare fits (the
``non_deterministic`` tag: every fit draws a new chain). ``tests/test_sklearn_checks.py`` runs
them with ``random_state=0`` and ``counts="round"`` (the checks feed random non-integral floats,
which the default ``counts="strict"`` refuses).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .interop import optional_import

_sk = optional_import("sklearn", "jaxtopics.sklearn")
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin,  # noqa: E402
                          ClusterMixin, TransformerMixin)
from scipy.sparse import issparse  # noqa: E402
from sklearn.utils import check_random_state  # noqa: E402
from sklearn.utils.validation import check_is_fitted, validate_data  # noqa: E402

from . import estimators as _jt  # noqa: E402
from .corpus import Corpus  # noqa: E402
from .errors import ParameterError  # noqa: E402

__all__ = ["LDA", "DMM", "TopicModel", "EXPECTED_FAILED_CHECKS", "expected_failed_checks"]

#: scikit-learn estimator checks that do not apply to these samplers, by estimator class, with
#: the reason (``expected_failed_checks``)
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "LDA": {},
    "TopicModel": {},
    "DMM": {
        "check_clustering": (
            "it clusters standardised Gaussian blobs, negative values (it ignores the "
            "positive_only tag); DMM clusters counts and refuses them"),
    },
}


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The scikit-learn estimator checks `estimator` is expected to fail, with the reason; for
    ``check_estimator(est, expected_failed_checks=...)`` and ``parametrize_with_checks``.

    Besides these, with ``random_state=None`` scikit-learn itself skips the checks that compare
    two fits or a fit and a transform (the estimator's ``non_deterministic`` tag: every fit
    draws a new chain); with an int they run and pass.

    Args:
        estimator: an estimator of this module.

    Returns:
        {check name: reason}."""
    return dict(EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}))


def _seed(random_state: Any) -> int:
    """The chain's seed: an int as given, else one drawn from the RandomState (None: fresh)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class _Base(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """What the wrappers share: reading X, fitting, transform, score, perplexity."""

    def _jaxtopics_estimator(self) -> Any:                     # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = []
        tags.non_deterministic = self.random_state is None
        return tags

    def _corpus(self, X: Any, reset: bool) -> tuple[Corpus | None, int]:
        """(X as a Corpus over the training vocabulary, rows); None when X holds no token."""
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), dtype="numeric",
                          reset=reset)
        if self.counts not in ("strict", "round"):
            raise ParameterError(f"counts must be 'strict' or 'round', got {self.counts!r}")
        if self.counts == "round":
            if issparse(X):
                X = X.copy()
                X.data = np.rint(X.data)
            else:
                X = np.rint(X)
        from sklearn.utils.validation import check_non_negative
        check_non_negative(X, f"{type(self).__name__} (input X)")
        rows = X.shape[0]
        if reset:
            names = getattr(self, "feature_names_in_", None)
            self._vocab = (tuple(str(n) for n in names) if names is not None
                           else tuple(f"w{i}" for i in range(X.shape[1])))
        total = X.sum()
        if total == 0 and not reset:
            return None, rows
        return Corpus.from_sparse(X, vocab=self._vocab), rows

    def fit(self, X: Any, y: Any = None) -> Any:
        """Run the sampler's chain on X.

        Args:
            X: [n_samples, n_features] counts (scipy sparse or dense), e.g. a CountVectorizer's
                output.
            y: ignored.

        Returns:
            self, fitted: ``components_``, ``model_``, ``n_features_in_`` (and
            ``feature_names_in_`` when X is a DataFrame with string column names)."""
        corpus, _ = self._corpus(X, reset=True)
        self.seed_ = _seed(self.random_state)
        self.model_ = self._jaxtopics_estimator().fit(
            corpus, self.max_iter, self.seed_, eval_every=self.evaluate_every,
            progress=bool(self.verbose), devices=self.devices, callback=self.callback)
        self.components_ = np.asarray(self.model_.topic_word, np.float64)
        self.n_iter_ = self.model_.sweeps_done
        return self

    @property
    def _n_features_out(self) -> int:
        return self.components_.shape[0]

    def transform(self, X: Any) -> np.ndarray:
        """Topic (cluster) proportions of documents, by fold-in with the topics held fixed.

        Args:
            X: [n_samples, n_features] counts over the training features.

        Returns:
            float64 [n_samples, n_components]: rows sum to 1 (a row without a token gets the
            uniform row)."""
        check_is_fitted(self, "model_")
        corpus, rows = self._corpus(X, reset=False)
        k = self.components_.shape[0]
        if corpus is None:
            return np.full((rows, k), 1.0 / k)
        theta = np.asarray(self.model_.transform(corpus, num_sweeps=self.transform_sweeps,
                                                 seed=self.seed_), np.float64)
        theta = theta / theta.sum(1, keepdims=True)
        theta[np.asarray(corpus.doc_lengths) == 0] = 1.0 / k   # no token: uniform, whatever
        return theta                                             # the other rows hold

    def score(self, X: Any, y: Any = None) -> float:
        """Held-out log-likelihood of X, sum_d log p(w_d) in nats (higher is better; what
        ``GridSearchCV`` maximises).

        Args:
            X: [n_samples, n_features] counts over the training features.
            y: ignored.

        Returns:
            The log-likelihood, a float (``jaxtopics.evaluation``, the model's default
            method, seeded by ``seed_``)."""
        check_is_fitted(self, "model_")
        corpus, _ = self._corpus(X, reset=False)
        if corpus is None:
            return 0.0
        return float(np.sum(self.model_.log_likelihood(corpus, seed=self.seed_)))

    def perplexity(self, X: Any) -> float:
        """Held-out perplexity of X, exp(-sum_d log p(w_d) / tokens) (lower is better).

        Args:
            X: [n_samples, n_features] counts over the training features.

        Returns:
            The perplexity, a float.

        Raises:
            CorpusError: X holds no token."""
        check_is_fitted(self, "model_")
        corpus, _ = self._corpus(X, reset=False)
        if corpus is None:
            from .errors import CorpusError
            raise CorpusError("perplexity: X holds no token")
        return float(self.model_.perplexity(corpus, seed=self.seed_))


class LDA(_Base):
    """Latent Dirichlet allocation by Gibbs sampling, with scikit-learn's
    ``LatentDirichletAllocation`` names: a transformer from counts to topic proportions.

    ``Pipeline([("counts", CountVectorizer()), ("lda", LDA(n_components=20, random_state=0))])``;
    ``fit_transform``, ``transform``, ``components_`` (phi [n_components, n_features], rows sum
    to 1), ``score`` (held-out log-likelihood), ``perplexity``, ``get_feature_names_out``. See
    the module docstring for what differs from scikit-learn's and which estimator checks do not
    apply.

    Args:
        n_components: K, the number of topics.
        doc_topic_prior: alpha; None: 1 / n_components (scikit-learn's default).
        topic_word_prior: beta; None: 1 / n_components (scikit-learn's default).
        max_iter: Gibbs sweeps of the chain.
        evaluate_every: sweeps between trace points (``model_.trace``, `callback`).
        transform_sweeps: fold-in sweeps of ``transform``.
        random_state: None (a fresh chain every fit), an int (the chain's seed) or a
            RandomState.
        sampler: jaxtopics LDA's sampler: "parallel", "sequential" or "uncollapsed".
        num_blocks: blocks of the parallel sweep.
        devices: shard the documents over this many devices ("auto": all); None: one.
        counts: "strict" (refuse non-integral counts) or "round" (round them).
        verbose: a progress bar when > 0.
        callback: ``fit(..., callback=)``: ``fn(point, model)`` at every trace point; False
            stops the chain.

    Example:
        >>> import numpy as np
        >>> from jaxtopics.sklearn import LDA
        >>> X = np.array([[3, 2, 0, 0], [0, 0, 2, 3]] * 10)
        >>> lda = LDA(n_components=2, max_iter=30, random_state=0).fit(X)
        >>> lda.components_.shape, lda.transform(X[:2]).sum(1).round(6).tolist()
        ((2, 4), [1.0, 1.0])
    """

    def __init__(self, n_components: int = 10, *, doc_topic_prior: float | None = None,
                 topic_word_prior: float | None = None, max_iter: int = 200,
                 evaluate_every: int = 10, transform_sweeps: int = 50, random_state: Any = None,
                 sampler: str = "parallel", num_blocks: int = 64,
                 devices: int | str | None = None, counts: str = "strict", verbose: int = 0,
                 callback: Callable | None = None):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.evaluate_every = evaluate_every
        self.transform_sweeps = transform_sweeps
        self.random_state = random_state
        self.sampler = sampler
        self.num_blocks = num_blocks
        self.devices = devices
        self.counts = counts
        self.verbose = verbose
        self.callback = callback

    def _jaxtopics_estimator(self) -> Any:
        k = self.n_components
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
            raise ParameterError(f"n_components must be a positive int, got {k!r}")
        alpha = 1.0 / k if self.doc_topic_prior is None else self.doc_topic_prior
        beta = 1.0 / k if self.topic_word_prior is None else self.topic_word_prior
        return _jt.LDA(num_topics=int(k), alpha=alpha, beta=beta, sampler=self.sampler,
                       num_blocks=self.num_blocks)


class DMM(ClusterMixin, _Base):
    """The Dirichlet multinomial mixture (GSDMM) as a scikit-learn clusterer of short texts:
    one cluster per document.

    ``fit_predict(X)`` / ``labels_`` give each document's cluster, ``predict(X)`` the most
    probable cluster of new documents, ``transform(X)`` p(cluster | document) (rows sum to 1),
    ``components_`` phi [n_clusters, n_features]. GSDMM leaves unneeded clusters empty, so
    ``n_clusters`` is the most clusters (``model_.num_active_clusters`` the ones used).

    Args:
        n_clusters: K, the most clusters.
        alpha: the Dirichlet over clusters.
        beta: the Dirichlet over each cluster's words.
        max_iter: Gibbs sweeps.
        evaluate_every: sweeps between trace points.
        transform_sweeps: fold-in sweeps of ``transform``.
        random_state: None (a fresh chain every fit), an int (the seed) or a RandomState.
        sampler: "parallel" or "sequential".
        num_blocks: blocks of documents of the parallel sweep.
        devices: shard the documents over this many devices; None: one.
        counts: "strict" or "round", as ``LDA``'s.
        verbose: a progress bar when > 0.
        callback: as ``LDA``'s.

    Example:
        >>> import numpy as np
        >>> from jaxtopics.sklearn import DMM
        >>> X = np.array([[3, 2, 0, 0], [0, 0, 2, 3]] * 10)
        >>> labels = DMM(n_clusters=4, max_iter=20, random_state=0).fit_predict(X)
        >>> len(set(labels[::2])), len(set(labels[1::2])), bool(labels[0] != labels[1])
        (1, 1, True)
    """

    def __init__(self, n_clusters: int = 20, *, alpha: float = 0.1, beta: float = 0.1,
                 max_iter: int = 30, evaluate_every: int = 10, transform_sweeps: int = 50,
                 random_state: Any = None, sampler: str = "parallel", num_blocks: int = 64,
                 devices: int | str | None = None, counts: str = "strict", verbose: int = 0,
                 callback: Callable | None = None):
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.beta = beta
        self.max_iter = max_iter
        self.evaluate_every = evaluate_every
        self.transform_sweeps = transform_sweeps
        self.random_state = random_state
        self.sampler = sampler
        self.num_blocks = num_blocks
        self.devices = devices
        self.counts = counts
        self.verbose = verbose
        self.callback = callback

    def _jaxtopics_estimator(self) -> Any:
        return _jt.DMM(num_clusters=self.n_clusters, alpha=self.alpha, beta=self.beta,
                       sampler=self.sampler, num_blocks=self.num_blocks)

    def fit(self, X: Any, y: Any = None) -> DMM:
        """Cluster the documents of X.

        Args:
            X: [n_samples, n_features] counts (a row without a token is an empty document,
                seated in a cluster as the others are).
            y: ignored.

        Returns:
            self, fitted: ``labels_`` [n_samples], ``components_``, ``model_``."""
        super().fit(X, y)
        self.labels_ = np.asarray(self.model_.labels, np.int64)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The most probable cluster of each document (``transform(X).argmax(1)``).

        Args:
            X: [n_samples, n_features] counts over the training features.

        Returns:
            int64 [n_samples]."""
        return self.transform(X).argmax(1)


class TopicModel(_Base):
    """Any jaxtopics model that takes a document-term matrix, as a scikit-learn transformer:
    ``TopicModel(jt.HDP(alpha=1.0), max_iter=300)``, ``TopicModel(jt.PTM(num_topics=50))``,
    ``TopicModel(jt.DPMM())``, ``TopicModel(jt.LDA(20, optimize_alpha="symmetric"))``.

    ``transform`` gives the model's topic (cluster) proportions of new documents,
    ``components_`` its phi; for the nonparametric models their widths are the topics found
    (``model_.num_topics``), known after ``fit``. Sentence-LDA (no sentence boundaries in a
    matrix) and DP-MRM (no label sets) are refused.

    Args:
        estimator: a jaxtopics estimator (``jt.LDA(...)``, ``jt.PTM(...)``, ``jt.DMM(...)``,
            ``jt.DPMM(...)``, ``jt.HDP(...)``); None: ``jt.LDA()``.
        max_iter: Gibbs sweeps.
        evaluate_every: sweeps between trace points.
        transform_sweeps: fold-in sweeps of ``transform``.
        random_state: None (a fresh chain every fit), an int (the seed) or a RandomState.
        devices: shard the documents over this many devices; None: one.
        counts: "strict" or "round", as ``LDA``'s.
        verbose: a progress bar when > 0.
        callback: as ``LDA``'s.

    Example:
        >>> import numpy as np
        >>> import jaxtopics as jt
        >>> from jaxtopics.sklearn import TopicModel
        >>> X = np.array([[3, 2, 0, 0], [0, 0, 2, 3]] * 10)
        >>> model = TopicModel(jt.DPMM(alpha=1.0), max_iter=20, random_state=0).fit(X)
        >>> model.transform(X[:2]).argmax(1).tolist() == model.model_.labels[:2].tolist()
        True
    """

    def __init__(self, estimator: Any = None, *, max_iter: int = 200, evaluate_every: int = 10,
                 transform_sweeps: int = 50, random_state: Any = None,
                 devices: int | str | None = None, counts: str = "strict", verbose: int = 0,
                 callback: Callable | None = None):
        self.estimator = estimator
        self.max_iter = max_iter
        self.evaluate_every = evaluate_every
        self.transform_sweeps = transform_sweeps
        self.random_state = random_state
        self.devices = devices
        self.counts = counts
        self.verbose = verbose
        self.callback = callback

    def _jaxtopics_estimator(self) -> Any:
        est = _jt.LDA() if self.estimator is None else self.estimator
        if not isinstance(est, _jt._Estimator):
            raise ParameterError(f"estimator must be a jaxtopics estimator (jt.LDA(...), "
                                 f"jt.HDP(...), ...), got {type(est).__name__}")
        if est.needs_sentences:
            raise ParameterError(f"{type(est).__name__} needs sentence boundaries, which a "
                                 f"document-term matrix does not have: fit it on "
                                 f"jt.Corpus.from_texts(texts, sentences=True)")
        if getattr(est, "needs_labels", False):
            raise ParameterError(f"{type(est).__name__} needs a label set per document, which a "
                                 f"document-term matrix does not have: fit it on a Corpus with "
                                 f"labels=")
        return est
