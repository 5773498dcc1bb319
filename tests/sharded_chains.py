"""The statistics of the kernel-quality tests: chains of two kernels (one device and sharded;
the default parallel kernel and the exact sequential one; a negative control), compared by
their own spread (the standard error of the difference of their chains' means)."""

from __future__ import annotations

import warnings

import numpy as np

import jaxtopics as jt


def resumed_chain_means(start, corpus, sweeps: int, chains: int, devices, every: int = 2,
                        extra=None) -> tuple[np.ndarray, np.ndarray | None]:
    """`chains` chains (seeds 100, 101, ...) resumed from the model file `start` for `sweeps`
    sweeps on `devices`: per chain the mean log joint per token over its second half (trace
    every `every` sweeps) and, with `extra(model)`, that statistic's mean over the same points."""
    means, extras = [], []
    for seed in range(100, 100 + chains):
        model = jt.load(start)
        model.seed = seed
        burn, values = model.sweeps_done, []
        with warnings.catch_warnings():              # continuing on other devices: meant here
            warnings.simplefilter("ignore", jt.ShardLayoutWarning)
            if extra is None:
                model.resume(corpus, sweeps, eval_every=every, progress=False, devices=devices)
            else:
                model.resume(corpus, sweeps // 2, eval_every=every, progress=False, devices=devices)
                for _ in range(sweeps // 2 // every):
                    model.resume(corpus, every, eval_every=every, progress=False, devices=devices)
                    values.append(extra(model))
        means.append(np.mean([p.log_joint_per_token for p in model.trace
                              if p.sweep > burn + sweeps // 2]))
        extras.append(np.mean(values) if values else np.nan)
    return np.asarray(means), (np.asarray(extras) if extra is not None else None)


def standard_error(one: np.ndarray, other: np.ndarray) -> float:
    """Standard error of the difference of the two sets of chains' means."""
    return float(np.sqrt(one.var(ddof=1) / one.size + other.var(ddof=1) / other.size))


def assert_not_below(name: str, one: np.ndarray, sharded: np.ndarray) -> None:
    """The sharded chains' mean log joint lies not below the one-device chains' by more than 4
    standard errors of the difference (printed with -s)."""
    se = standard_error(one, sharded)
    print(f"{name}: one device {one.mean():.5f} (sd {one.std(ddof=1):.5f}), sharded "
          f"{sharded.mean():.5f} (sd {sharded.std(ddof=1):.5f}), se {se:.5f}")
    assert one.mean() - sharded.mean() < 4 * se, (one, sharded)


def assert_same_level(name: str, reference: np.ndarray, other: np.ndarray, z: float = 4.0) -> None:
    """Two-sided: the chains `other` (per-chain means of the log joint per token) lie within `z`
    standard errors of the difference of the `reference` chains' mean, above or below. With
    z = 4 a kernel with the reference's law fails with probability ~6e-5 (normal theory)."""
    se = standard_error(reference, other)
    gap = other.mean() - reference.mean()
    print(f"{name}: reference {reference.mean():.5f} (sd {reference.std(ddof=1):.5f}, "
          f"{reference.size} chains), other {other.mean():.5f} (sd {other.std(ddof=1):.5f}, "
          f"{other.size} chains), gap {gap:+.5f} = {gap / se:+.1f} se")
    assert abs(gap) < z * se, (name, reference, other)


def assert_rejected(name: str, reference: np.ndarray, control: np.ndarray, z: float = 4.0) -> None:
    """The negative control: chains of a known-wrong kernel (e.g. the fully synchronous sweep)
    must fail the same two-sided bar that `assert_same_level` applies, or the bar tests nothing."""
    se = standard_error(reference, control)
    gap = control.mean() - reference.mean()
    print(f"{name} (negative control): gap {gap:+.5f} = {gap / se:+.1f} se")
    assert abs(gap) >= z * se, (f"{name}: the negative control passed the bar, so the bar cannot "
                                f"reject a wrong kernel", reference, control)


def kernel_chain_means(module, params, data, start, key, chains: int, sweeps: int,
                       num_tokens: int, every: int = 2, extra=None):
    """`chains` vmapped chains of `module.sweep` under `params` (its `sampler` and `num_blocks`
    pick the kernel), all started from the one state `start`: per chain the mean log joint per
    token over its second half, read every `every` sweeps (the statistic `resumed_chain_means`
    reads from a trace, so the two compare). With `extra(state, data, params)` (a scalar
    function of the chain's state), also that statistic per token, averaged over the same
    points: then (log joint means, extra means). Chains that would need more capacity than
    `start` has (DPMM, DP-MRM: `SweepInfo.overflow`) fail the test design (grow `start` first)."""
    import jax
    import jax.numpy as jnp

    assert sweeps % (2 * every) == 0, "test design: sweeps a multiple of 2 * every"

    @jax.jit
    def run(keys):
        def chain(k):
            def block(carry, b):        # `every` sweeps, then the log joint
                def one(i, c):
                    st, over = c
                    st, info = module.sweep(jax.random.fold_in(k, b * every + i), st, data, params)
                    return st, over | jnp.asarray(getattr(info, "overflow", False))
                carry = jax.lax.fori_loop(0, every, one, carry)
                st = carry[0]
                values = [module.log_joint(st, data, params)]
                if extra is not None:
                    values.append(extra(st, data, params))
                return carry, jnp.stack(values).astype(jnp.float32)
            (_, over), lj = jax.lax.scan(block, (start, jnp.bool_(False)),
                                         jnp.arange(sweeps // every))
            return lj[lj.shape[0] // 2:], over
        return jax.vmap(chain)(keys)

    lj, over = run(jax.random.split(key, chains))
    assert not np.asarray(over).any(), "test design: a chain ran out of capacity (grow the start)"
    means = (np.asarray(lj, np.float64) / num_tokens).mean(axis=1)      # [chains, statistics]
    return means[:, 0] if extra is None else (means[:, 0], means[:, 1])


def sharded_chain_means(module, params, corpus, start, key, chains: int, sweeps: int,
                        devices: int = 4, every: int = 1) -> np.ndarray:
    """`chains` chains (vmapped; keys ``split(key, chains)``) of the sweep sharded over the first
    `devices` devices (``jaxtopics.distributed``: the same per-shard sweep and exchanges the
    facade's ``devices=`` runs), all started from the one-device state `start` (split into the
    shards by ``distributed.shard_state``): per chain the mean log joint per token over its
    second half, read every `every` sweeps (the statistic of ``kernel_chain_means``, so the two
    compare). A chain that would need more capacity than `start` has fails the test design."""
    import jax
    import jax.numpy as jnp

    from jaxtopics import distributed as dist

    assert sweeps % (2 * every) == 0, "test design: sweeps a multiple of 2 * every"
    mesh = dist.make_mesh(devices, jax.devices()[:devices])
    sdata = dist.prepare(corpus, params, devices, module)
    state, sdata = dist.place(dist.shard_state(start, sdata), sdata, mesh)

    @jax.jit
    def run(keys, state, sdata):
        def chain(k):
            def block(carry, b):
                def one(i, c):
                    st, over = c
                    st, info = dist.sweep(jax.random.fold_in(k, b * every + i), st, sdata,
                                          params, mesh)
                    return st, over | jnp.asarray(getattr(info, "overflow", False))
                carry = jax.lax.fori_loop(0, every, one, carry)
                return carry, dist.log_joint(carry[0], sdata, params).astype(jnp.float32)
            (_, over), lj = jax.lax.scan(block, (state, jnp.bool_(False)),
                                         jnp.arange(sweeps // every))
            return lj[lj.shape[0] // 2:], over
        return jax.vmap(chain)(keys)

    lj, over = run(jax.random.split(key, chains), state, sdata)
    assert not np.asarray(over).any(), "test design: a chain ran out of capacity (grow the start)"
    return np.asarray(lj, np.float64).mean(axis=1) / corpus.num_tokens
