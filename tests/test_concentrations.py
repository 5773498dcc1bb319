"""Dirichlet-process concentrations drawn along the chain (issue 31).

(a) The auxiliary-variable updates of ``jaxtopics.ops.concentration`` have the right law: with
    the partition held fixed, iterating an update from a badly wrong start lands on the exact
    conditional, p(c | partition) ∝ Gamma(c; a, b) c^k prod_j Gamma(c) / Gamma(c + n_j)
    (one group: Escobar & West 1995; several: Teh et al. 2006, appendix A), computed by
    numerical integration; many independent chains (vmap), tolerances from their Monte Carlo
    error. Sharded (groups split over two devices): the same law, equal on every shard.
(b) The models: DPMM started at a badly wrong alpha moves to a sensible one; DP-MRM's alpha and
    gamma stay finite, resume bitwise (through a model file too) and agree on every shard.
(c) Resampling off is the chain of the code before this feature, bitwise (model files written
    by that code, which also load: the new State fields are filled in from the Params).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import gammaln

from jaxtopics.ops import concentration_groups, concentration_one_group

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHAINS = 10_000
#: significance of each distribution check (a handful per test)
LEVEL = 1e-3
#: updates per chain: the updates forget a start far in a tail within ~10 (measured with 100,000
#: chains: after 10 or more the KS distance is at its sampling noise, ~0.003, in every case
#: below; after 6, 0.017 in the first group case)
STEPS = 15


# ------------------------------------------------------------------------------------------
# (a) the law of the updates


def _exact_cdf(log_density, lo: float = -90.0, hi: float = 12.0, points: int = 400_001):
    """(log c grid, CDF, mean) of the density exp(log_density(c)) on c = e^u, u in [lo, hi]
    (dc = c du); trapezoid rule on a fine grid (its error is far below the tests' bars)."""
    u = np.linspace(lo, hi, points)
    c = np.exp(u)
    log_f = log_density(c) + u
    f = np.exp(log_f - log_f.max())
    du = u[1] - u[0]
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * du)])
    total = cdf[-1]
    assert f[0] < 1e-12 * f.max() and f[-1] < 1e-12 * f.max(), "grid too narrow for the density"
    mean = np.sum((c[1:] * f[1:] + c[:-1] * f[:-1]) / 2 * du) / total
    mean2 = np.sum((c[1:] ** 2 * f[1:] + c[:-1] ** 2 * f[:-1]) / 2 * du) / total
    return u, cdf / total, mean, mean2 - mean ** 2


def _log_density(shape: float, rate: float, sizes, clusters: int):
    """log of Gamma(c; shape, rate) c^k prod_j Gamma(c) / Gamma(c + n_j), up to a constant."""
    sizes = [n for n in sizes if n > 0]

    def f(c):
        out = (shape - 1 + clusters) * np.log(c) - rate * c
        for n in sizes:
            out = out + gammaln(c) - gammaln(c + n)
        return out
    return f


def _check_law(draws: np.ndarray, law) -> str:
    """Kolmogorov-Smirnov distance of `draws` to the exact CDF, and the mean within its
    Monte Carlo error; returns a description (asserts inside)."""
    u, cdf, mean, var = law
    x = np.sort(np.log(draws.astype(np.float64)))
    n = x.shape[0]
    at = np.interp(x, u, cdf)
    ks = max(np.max(np.arange(1, n + 1) / n - at), np.max(at - np.arange(n) / n))
    ks_bar = np.sqrt(-np.log(LEVEL / 2) / (2 * n))
    se = np.sqrt(var / n)
    msg = (f"KS {ks:.4f} (bar {ks_bar:.4f}); mean {draws.mean():.5g} vs exact {mean:.5g} "
           f"(SE {se:.2g})")
    assert ks < ks_bar, msg
    assert abs(draws.mean() - mean) < 4.0 * se, msg
    return msg


def _iterate(update, starts, *args, steps: int = STEPS, chains: int = CHAINS,
             seed: int = 0) -> np.ndarray:
    """[cases, chains] values after `steps` updates c -> update(key, c, *case_args) of `chains`
    independent chains per case, case i starting at c = starts[i] with the i-th entry of every
    `args` array: all cases in one compiled program."""
    def chain(key, start, *case):
        return jax.lax.fori_loop(
            0, steps, lambda t, c: update(jax.random.fold_in(key, t), c, *case), start)

    keys = jax.random.split(jax.random.key(seed), (len(starts), chains))
    per_case = jax.vmap(chain, in_axes=(0, None) + (None,) * len(args))
    run = jax.jit(jax.vmap(per_case))
    return np.asarray(run(keys, jnp.asarray(starts, jnp.float32), *map(jnp.asarray, args)))


#: (prior shape, prior rate, clusters k, items n, a start far in a tail); the last case has
#: no items: the update must draw from the prior
ONE_GROUP = [(1.0, 1.0, 4, 30, 50.0), (0.5, 0.1, 12, 400, 1e-3), (0.5, 0.5, 1, 3, 20.0),
             (2.0, 3.0, 0, 0, 5.0)]
#: (prior shape, prior rate, group sizes n_j (0: an empty group, no part), tables m, start)
GROUPS = [(1.0, 1.0, [3, 7, 1, 12, 0, 25, 0, 0], 14, 40.0),
          (2.0, 0.5, [50, 80, 20, 200, 5, 60, 1, 1], 40, 1e-3)]


def _columns(cases):
    return [np.asarray(x) for x in zip(*cases)]


def test_one_group_update_reaches_the_exact_conditional():
    """Escobar & West's update, iterated with the partition (k clusters of n items) fixed,
    from a start far in a tail (``STEPS``): its stationary law is p(c | k, n)."""
    shape, rate, k, n, start = _columns(ONE_GROUP)
    draws = _iterate(concentration_one_group, start.astype(np.float32), k, n,
                     shape.astype(np.float32), rate.astype(np.float32))
    assert np.all(np.isfinite(draws)) and np.all(draws > 0)
    for case, x in zip(ONE_GROUP, draws):
        _check_law(x, _exact_cdf(_log_density(case[0], case[1], [case[3]], case[2])))


def test_group_update_reaches_the_exact_conditional():
    """Teh et al.'s update (groups of n_j items, m tables in all), iterated likewise: its
    stationary law is p(c | m, n_1..n_J)."""
    shape, rate, sizes, m, start = _columns(GROUPS)
    draws = _iterate(lambda key, c, n, m, a, b: concentration_groups(key, c, n, m, a, b),
                     start.astype(np.float32), sizes.astype(np.int32), m,
                     shape.astype(np.float32), rate.astype(np.float32))
    for (a, b, n, mm, _), x in zip(GROUPS, draws):
        _check_law(x, _exact_cdf(_log_density(a, b, n, mm)))


def test_negative_control_a_wrong_mixture_weight_is_rejected():
    """Power: Escobar & West's update with the mixture odds (a + k) / (n (b - log eta)) in
    place of (a + k - 1) / (...) (a slip that moves a little mass between the two Gamma
    components) is rejected where the mixture matters (k = 1, n = 3, a = 0.5)."""
    from jaxtopics.ops import log_gamma

    shape, rate, k, n, start = ONE_GROUP[2]

    def wrong(key, c):
        k_eta, k_pick, k_draw = jax.random.split(key, 3)
        g = log_gamma(k_eta, jnp.stack([c + 1.0, jnp.float32(n)]))
        rate_post = rate - (g[0] - jnp.logaddexp(g[0], g[1]))
        odds = (shape + k) / (n * rate_post)
        post = jnp.where(jax.random.uniform(k_pick) * (1 + odds) < odds, shape + k, shape + k - 1)
        return jnp.exp(log_gamma(k_draw, post) - jnp.log(rate_post))

    with pytest.raises(AssertionError, match="KS"):
        _check_law(_iterate(wrong, [start])[0], _exact_cdf(_log_density(shape, rate, [n], k)))


def test_group_update_sharded_has_the_same_law_on_every_shard():
    """The groups split over two devices (per-shard auxiliaries, their sums over the shards,
    the draw from a shared key): every shard holds the same value, of the exact law."""
    from jax.sharding import Mesh, PartitionSpec as P

    if len(jax.devices()) < 2:
        pytest.skip("needs two devices")
    shape, rate, m = 1.0, 1.0, 14
    sizes = np.array([[3, 7, 1, 0], [12, 25, 0, 0]], np.int32)     # shard 0, shard 1 (padding 0)
    law = _exact_cdf(_log_density(shape, rate, sizes.ravel(), m))
    mesh = Mesh(np.array(jax.devices()[:2]), ("s",))

    def run(keys, n):            # keys [1, chains] and n [1, 4]: this shard's
        def chain(key):
            def step(t, c):
                k = jax.random.fold_in(jax.random.fold_in(key, t), jax.lax.axis_index("s"))
                return concentration_groups(k, c, n[0], m, shape, rate, axis_name="s")
            return jax.lax.fori_loop(0, STEPS, step, jnp.float32(40.0))
        return jax.vmap(chain)(keys[0])[None]

    keys = jnp.broadcast_to(jax.random.split(jax.random.key(4), CHAINS)[None], (2, CHAINS))
    out = jax.jit(jax.shard_map(run, mesh=mesh, in_specs=(P("s"), P("s")), out_specs=P("s"),
                                check_vma=False))(keys, jnp.asarray(sizes))
    out = np.asarray(out)
    np.testing.assert_array_equal(out[0], out[1])
    _check_law(out[0], law)


# ------------------------------------------------------------------------------------------
# (b) the models


def _dpmrm_corpus():
    """16 labelled documents (labels L0-L2, a quarter of them with two), words by a fixed rule:
    the corpus of ``fixtures/dpmrm_format_before_sampled_concentrations.jtm``."""
    import jaxtopics as jt

    docs, sets = [], []
    for j in range(16):
        sets.append([f"L{j % 3}"] + ([f"L{(j + 1) % 3}"] if j % 4 == 0 else []))
        docs.append([f"w{((j % 3) * 6 + (j * 7 + i * 3) % 6 + (i % 5 == 0) * 20) % 24}"
                     for i in range(5 + j % 7)])
    return jt.Corpus.from_token_lists(docs, labels=sets, label_names=["L0", "L1", "L2"])


def _dpmm_corpus():
    """The corpus of ``fixtures/dpmm_format_before_sampled_alpha.jtm``."""
    from jaxtopics.datasets import synthetic_dmm

    return synthetic_dmm(num_docs=24, num_words=30, num_clusters=3, mean_doc_length=6, beta=0.3,
                         seed=5).corpus


def _same_state(a, b, skip=()) -> None:
    for name in a._fields:
        if name not in skip:
            np.testing.assert_array_equal(np.asarray(getattr(a, name)),
                                          np.asarray(getattr(b, name)), err_msg=name)


def _chain(model) -> list[tuple]:
    return [tuple(p)[:3] for p in model.trace]


def test_dpmm_leaves_a_badly_wrong_alpha():
    """From alpha = 300 (D = 200 documents of 8 planted clusters), fixed alpha keeps surplus
    clusters; sampled, alpha falls to O(1) within a few sweeps, each draw of the last sweeps lies
    in the central 99.9 % of p(alpha | C, D) for the clusters C found (the conditional it is
    drawn from), and the clustering is no worse. The sampled chain, resumed sweep by sweep,
    is the straight one bitwise."""
    import jaxtopics as jt
    from jaxtopics import metrics
    from jaxtopics.datasets import synthetic_dmm

    corpus = synthetic_dmm(num_docs=200, num_words=300, num_clusters=8, mean_doc_length=6,
                           seed=2).corpus
    run = dict(seed=0, progress=False)
    fixed = jt.DPMM(alpha=300.0, num_blocks=16).fit(corpus, 20, **run)
    sampled = jt.DPMM(alpha=300.0, num_blocks=16, resample_concentrations=True).fit(corpus, 15, **run)
    draws = []
    for _ in range(5):
        sampled.resume(corpus, 1, progress=False)
        draws.append(sampled.alpha)
    assert fixed.alpha == 300.0 and isinstance(sampled.alpha, float)
    c, d = sampled.num_active_clusters, corpus.num_docs
    u, cdf, _, _ = _exact_cdf(_log_density(1.0, 1.0, [d], c))
    lo, hi = np.exp(np.interp([5e-4, 1 - 5e-4], cdf, u))
    assert all(lo < a < hi for a in draws), (draws, (lo, hi), c)
    planted = corpus.labels
    assert abs(c - 8) <= abs(fixed.num_active_clusters - 8), (c, fixed.num_active_clusters)
    assert metrics.nmi(planted, sampled.labels) >= metrics.nmi(planted, fixed.labels) - 0.01
    straight = jt.DPMM(alpha=300.0, num_blocks=16, resample_concentrations=True).fit(corpus, 20, **run)
    _same_state(straight.state, sampled.state)


def test_dpmrm_sampled_concentrations_resume_bitwise_through_a_file(tmp_path):
    """alpha and gamma move from far-off starts, stay finite and positive, and 3 sweeps + save
    + load + 3 sweeps is the 6-sweep chain bitwise (the concentrations included)."""
    import jaxtopics as jt

    corpus = _dpmrm_corpus()
    make = lambda: jt.DPMRM(alpha=40.0, gamma=0.02, num_blocks=4, initial_topics=2,   # noqa: E731
                            resample_concentrations=True, prior_shape=2.0, prior_rate=0.5)
    straight = make().fit(corpus, 6, seed=3, progress=False)
    part = make().fit(corpus, 3, seed=3, progress=False)
    part.save(tmp_path / "m.jtm")
    loaded = jt.load(tmp_path / "m.jtm")
    assert (loaded.alpha, loaded.gamma) == (part.alpha, part.gamma)
    assert loaded.params.prior_shape == 2.0 and loaded.params.resample_concentrations is True
    resumed = loaded.resume(corpus, 3, progress=False)
    _same_state(straight.state, resumed.state)
    assert _chain(straight)[-1] == _chain(resumed)[-1]
    alpha, gamma = straight.alpha, straight.gamma
    assert np.isfinite([alpha, gamma]).all() and alpha > 0 and gamma > 0
    assert alpha < 40.0 and gamma != np.float32(0.02)
    from jaxtopics.models import dpmrm
    assert set(dpmrm.traced_priors(straight.state, straight.params)) == {"alpha", "gamma"}
    assert dpmrm.traced_priors(straight.state, straight.params._replace(
        resample_concentrations=False)) == {}


@pytest.mark.parametrize("name", ["dpmm", "dpmrm"])
def test_sharded_concentrations_are_equal_on_every_shard(name):
    """Two shards: after every sweep each shard holds the same alpha (and gamma), drawn from
    the statistics summed over the shards with a key the shards share."""
    from jaxtopics import distributed as dist
    from jaxtopics.models import dpmm, dpmrm

    if len(jax.devices()) < 2:
        pytest.skip("needs two devices")
    if name == "dpmm":
        module, corpus, names = dpmm, _dpmm_corpus(), ("alpha",)
        params = dpmm.check_params(dpmm.Params(alpha=30.0, num_blocks=4, capacity=32,
                                               resample_concentrations=True))
    else:
        module, corpus, names = dpmrm, _dpmrm_corpus(), ("alpha", "gamma")
        params = dpmrm.check_params(dpmrm.Params(alpha=30.0, gamma=0.05, num_blocks=4,
                                                 initial_topics=2, topic_capacity=64,
                                                 table_capacity=32, resample_concentrations=True))
    mesh = dist.make_mesh(2)
    sdata = dist.prepare(corpus, params, 2)
    state, sdata = dist.place(dist.init(jax.random.key(0), sdata, params), sdata, mesh)

    def fn(key, st, data, params, axis_name):
        st, info = module.sweep(key, st, data, params, axis_name=axis_name)
        seen = jnp.stack([jax.lax.all_gather(getattr(st, n), axis_name) for n in names])
        return st, (seen, info.overflow)

    step = jax.jit(lambda k, s, sd: dist._per_shard(fn, k, s, sd, params, mesh))
    values = []
    for t in range(3):
        state, (seen, overflow) = step(jax.random.fold_in(jax.random.key(1), t), state, sdata)
        seen = np.asarray(seen)                                        # [names, shards]
        assert not bool(overflow)
        np.testing.assert_array_equal(seen[:, 0], seen[:, 1])
        values.append(seen[:, 0])
    assert np.all(np.isfinite(values)) and values[0][0] != np.float32(30.0)
    assert len({tuple(v) for v in values}) == 3                        # they move every sweep


# ------------------------------------------------------------------------------------------
# (c) resampling off is the chain of the code before it; older model files load


OLD_FILES = {
    # model -> (file written by the code before sampled concentrations, the estimator and fit
    # that wrote it, the corpus)
    "dpmm": ("dpmm_format_before_sampled_alpha.jtm",
             lambda jt: jt.DPMM(alpha=0.5, beta=0.1, num_blocks=4), _dpmm_corpus),
    "dpmrm": ("dpmrm_format_before_sampled_concentrations.jtm",
              lambda jt: jt.DPMRM(alpha=1.5, gamma=0.7, num_blocks=4, initial_topics=2),
              _dpmrm_corpus),
}

#: models whose kernel changed the arrangement of its draws after the fixture was written (same
#: law, another chain per seed): DP-MRM's document views hold their labels' topics only
#: (``dpmrm_views``), so a multi-label document's categorical runs over another column order
KERNEL_CHANGED_SINCE = {"dpmrm"}


@pytest.mark.parametrize("name", list(OLD_FILES))
def test_an_older_model_file_loads_and_resampling_off_is_the_old_chain(name):
    """tests/fixtures/<model>_format_before_*.jtm were written by the code before this feature
    (``<estimator>.fit(corpus, 6, seed=2)``, the estimators and corpora of ``OLD_FILES``, at
    the commit before it): they load, their concentrations filled in from their params; today's
    chain with resampling off is theirs bitwise (the same state after 6 sweeps, the same trace),
    and resuming one continues today's chain."""
    import jaxtopics as jt

    file, make, corpus = OLD_FILES[name]
    corpus = corpus()
    old = jt.load(FIXTURES / file)
    assert old.params.resample_concentrations is False
    assert (old.params.prior_shape, old.params.prior_rate) == (1.0, 1.0)
    names = ("alpha",) if name == "dpmm" else ("alpha", "gamma")
    for n in names:
        assert getattr(old, n) == getattr(old.params, n)                   # the value in use
        assert np.asarray(getattr(old.state, n)) == np.float32(getattr(old.params, n))
    fresh = make(jt).fit(corpus, 6, seed=2, progress=False)
    assert fresh.params == old.params
    if name in KERNEL_CHANGED_SINCE:
        # the draws of today's kernel are arranged differently: its chain is another one (same
        # law); the old chain still resumes, with consistent tables
        assert old.resume(corpus, 2, progress=False).sweeps_done == 8
        rebuilt = jt.models.dpmrm.rebuild(old.state, old._data, old.params)
        _same_state(rebuilt, old.state)
        return
    _same_state(fresh.state, old.state)
    assert _chain(fresh) == _chain(old)
    old.resume(corpus, 2, progress=False)
    _same_state(make(jt).fit(corpus, 8, seed=2, progress=False).state, old.state)


def test_a_loaded_state_with_a_bad_concentration_is_refused(tmp_path):
    """check_state: alpha must equal the parameter when not sampled, and be finite and > 0."""
    import jaxtopics as jt

    m = jt.DPMM(alpha=0.5, num_blocks=4).fit(_dpmm_corpus(), 2, seed=0, progress=False)
    m._state = m.state._replace(alpha=jnp.float32(0.7))
    m.save(tmp_path / "edited.jtm")
    with pytest.raises(jt.FormatError, match="alpha differs from the parameter alpha=0.5"):
        jt.load(tmp_path / "edited.jtm")
    m = jt.DPMRM(num_blocks=4, initial_topics=2, resample_concentrations=True).fit(
        _dpmrm_corpus(), 2, seed=0, progress=False)
    m._state = m.state._replace(gamma=jnp.float32(np.nan))
    m.save(tmp_path / "nan.jtm")
    with pytest.raises(jt.FormatError, match="gamma must be a finite number > 0"):
        jt.load(tmp_path / "nan.jtm")


@pytest.mark.parametrize("model", ["DPMM", "DPMRM", "HDP"])
@pytest.mark.parametrize("kwargs,field", [
    (dict(resample_concentrations="yes"), "resample_concentrations"),
    (dict(resample_concentrations=1), "resample_concentrations"),
    (dict(prior_shape=0.0), "prior_shape"), (dict(prior_shape=True), "prior_shape"),
    (dict(prior_rate=float("inf")), "prior_rate"), (dict(prior_rate="1"), "prior_rate"),
    (dict(prior_rate=1e31), "prior_rate"),
])
def test_bad_settings_are_refused_by_name(model, kwargs, field):
    import jaxtopics as jt
    from jaxtopics.errors import ParameterError

    with pytest.raises(ParameterError, match=field):
        getattr(jt, model)(**kwargs)


def test_the_command_line_samples_the_concentrations(tmp_path, capsys):
    """One switch for hdp, dpmm and dpmrm (--resample-concentrations, --prior-shape,
    --prior-rate) reaches each estimator; a model without sampled concentrations refuses it;
    a fit (hdp, which lacked the flag) saves a chain that sampled them."""
    import jaxtopics as jt
    from jaxtopics import cli

    flags = ["--alpha", "30", "--resample-concentrations", "--prior-shape", "2", "--prior-rate",
             "0.5"]
    for model in ("dpmm", "dpmrm", "hdp"):
        args = cli.build_parser().parse_args(["fit", "--model", model, "-i", "x", "-o", "y", *flags])
        params = cli._estimator(args).params
        assert (params.resample_concentrations, params.prior_shape, params.prior_rate,
                params.alpha) == (True, 2.0, 0.5, 30.0), model
    docs = tmp_path / "docs.txt"
    docs.write_text("apple banana fruit\ncar engine road\napple fruit juice\nroad car\n" * 3)
    status = cli.main(["fit", "--model", "hdp", "--input", str(docs), "--out", str(tmp_path / "h"),
                       "--sweeps", "2", *flags, "--no-progress", "--devices", "1"])
    assert status == 0, capsys.readouterr().err
    m = jt.load(tmp_path / "h" / "model.jtm")
    assert m.params.resample_concentrations is True and float(m.state.alpha) != 30.0
    status = cli.main(["fit", "--model", "dmm", "--input", str(docs), "--out", str(tmp_path / "x"),
                       "--resample-concentrations", "--no-progress", "--devices", "1"])
    assert status == 2
    assert "--resample-concentrations does not apply to --model dmm" in capsys.readouterr().err


def test_the_summary_says_sampled_for_a_sampled_concentration():
    import jaxtopics as jt
    import jaxtopics.datasets
    corpus = jaxtopics.datasets.synthetic_dmm(num_docs=40, num_words=30, num_clusters=3, seed=0).corpus
    m = jt.DPMM(alpha=50.0, resample_concentrations=True).fit(corpus, 4, seed=0)
    assert "alpha=" in m.summary() and "(sampled; started at 50.0)" in m.summary()


@pytest.mark.parametrize("name", ["DPMM", "DPMRM", "HDP"])
def test_a_prior_without_resampling_is_refused(name):
    """A Gamma prior given to a chain that samples nothing would be a silent fixed run."""
    import jaxtopics as jt
    from jaxtopics.errors import ParameterError
    cls = getattr(jt, name)
    with pytest.raises(ParameterError, match="prior_shape=3.0 applies to sampled concentrations"):
        cls(prior_shape=3.0)
    with pytest.raises(ParameterError, match="prior_rate=2.0 applies to sampled concentrations"):
        cls(prior_rate=2.0)
    assert cls(prior_shape=3.0, resample_concentrations=True).params.prior_shape == 3.0
