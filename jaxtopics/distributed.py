"""Document-sharded LDA sweeps over the devices of a mesh (``shard_map``), one or many hosts.

The corpus is cut into contiguous document ranges of about equal token counts, one per device of
the mesh axis ``"shards"``. Every device holds its documents' tokens and document-topic rows and
a copy of the word-topic table n_kw and the totals n_k. A sweep is the blocked ``parallel`` sweep
of ``models.lda``: the devices visit their blocks in step, each drawing its block's tokens
exactly from eq. (1) against the counts at the block's start, and after each block the devices
exchange that block's word-topic moves (one ``all_gather`` of (word, old topic, new topic) per
device) and apply all of them to their copies. So a sweep on P devices is the single-device
blocked sweep whose block b is the union of the devices' blocks b: the same staleness (1/blocks
of the corpus), the same quality, with the draws split P ways. One device gives exactly
``lda.sweep``. A plain AD-LDA sweep (re-summing the copies once per sweep) was measured 1 %
worse in log joint on Reuters with 4 shards at 500 sweeps, hence the per-block exchange.

The same code runs on the CPU devices of one process (``jax_num_cpu_devices``) and on the GPUs of
one host. Several processes (``jax.distributed``) are not supported yet: ``place`` and
``gather`` move whole arrays between this process and the devices. Shards are padded to common
shapes: padding tokens sit in slots that no block visits and no count includes; padding
documents are empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .corpus import Corpus
from .errors import ParameterError
from .models import lda
from .ops import count_table

try:                                    # jax >= 0.6 exports shard_map at the top level
    from jax import shard_map as _shard_map
except ImportError:                     # pragma: no cover - older jax
    from jax.experimental.shard_map import shard_map as _shard_map

__all__ = ["AXIS", "ShardedData", "ShardedLDA", "initialize", "read_process_corpus",
           "global_fingerprint", "balanced_ranges", "split_documents", "make_mesh", "prepare", "init",
           "shard_state", "recount", "place", "sweep", "log_joint", "gather"]

AXIS = "shards"


class ShardedData(NamedTuple):
    """`data`: an ``lda.Data`` whose arrays carry a leading shard axis (padded to equal shapes);
    `num_tokens`, `num_docs`: [shards] int32, the real tokens and documents of each shard."""

    data: lda.Data
    num_tokens: Array
    num_docs: Array


def split_documents(corpus: Corpus, num_shards: int) -> list[np.ndarray]:
    """Contiguous document ranges, one per shard, with about equal token counts (every shard
    gets at least one document). Returns the document indices of each shard."""
    if not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
        raise ParameterError(f"num_shards must be a positive integer, got {num_shards!r}")
    if num_shards > corpus.num_docs:
        raise ParameterError(f"num_shards={num_shards} is more than the {corpus.num_docs} documents")
    bounds = balanced_ranges(corpus.doc_lengths, num_shards)
    shards = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    empty = [s for s, ix in enumerate(shards) if corpus.doc_lengths[ix].sum() == 0]
    if empty:
        raise ParameterError(f"num_shards={num_shards} leaves shard(s) {empty} without tokens")
    return shards


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, **kwargs) -> None:
    """Join a multi-process run: ``jax.distributed.initialize`` with the same arguments, after
    selecting the gloo collectives for CPU devices (GPUs use NCCL). Call it first, before any
    computation; then every process sees the devices of all processes in ``jax.devices()``."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id, **kwargs)


def read_process_corpus(path, fmt: str = "ldac", vocab=None, **text_kwargs) -> Corpus:
    """This process's documents of a corpus file: a contiguous range of documents (lines),
    ranges balanced by tokens over ``jax.process_count()`` processes, read without building the
    other processes' token arrays. `fmt`: "ldac" (with `vocab`, a file or word list; without
    it words are named by id over the global id range) or "text" / "jsonl" (tokenised with
    ``Corpus.from_texts`` options; the vocabulary is merged over all processes, ordered as a
    single-process ``from_texts`` orders it; ranges are balanced by characters). One process:
    the whole file."""
    from . import io as _io

    processes, me = jax.process_count(), jax.process_index()
    if fmt == "ldac":
        doc_tokens = _io.ldac_doc_tokens(path)
        _check_enough_docs(doc_tokens.shape[0], processes, path)
        bounds = balanced_ranges(doc_tokens, processes)
        word_ids, offsets = _io.read_ldac(path, documents=(bounds[me], bounds[me + 1]))
        if vocab is None:
            top = int(word_ids.max()) + 1 if word_ids.size else 0
            size = int(_allgather_host(np.asarray([top])).max())
            vocab = tuple(str(i) for i in range(size))
        elif not isinstance(vocab, (list, tuple)):
            vocab = _io.read_vocab(vocab)
        return Corpus.from_arrays(word_ids=word_ids, doc_offsets=offsets, vocab=tuple(vocab))
    if fmt not in ("text", "jsonl"):
        raise ParameterError(f"fmt must be 'ldac', 'text' or 'jsonl', got {fmt!r}")
    if fmt == "text":
        texts, labels = _io.read_text_lines(path), None
    else:
        texts, labels = _io.read_jsonl(path, text_key=text_kwargs.pop("text_key", "text"))
    for name in ("min_df", "max_df"):
        if name in text_kwargs and processes > 1:
            raise ParameterError(f"{name} needs document frequencies over all processes; "
                                 "filter the vocabulary before a multi-process fit")
    _check_enough_docs(len(texts), processes, path)
    bounds = balanced_ranges(np.asarray([len(t) + 1 for t in texts]), processes)
    mine = Corpus.from_texts(texts[bounds[me]:bounds[me + 1]], **text_kwargs)
    return mine if processes == 1 else _merge_vocab(mine)


def _check_enough_docs(num_docs: int, processes: int, path) -> None:
    if num_docs < processes:
        raise ParameterError(f"{path}: {num_docs} documents cannot be split over {processes} processes")


def _merge_vocab(local: Corpus) -> Corpus:
    """Re-map a process's corpus onto the vocabulary of all processes' words, ordered by
    descending total frequency, then alphabetically (as ``Corpus.from_texts`` orders it)."""
    blob = np.frombuffer("\n".join(local.vocab).encode("utf-8"), np.uint8)
    counts = local.word_counts()
    sizes = _allgather_host(np.asarray([blob.size, counts.size]))
    width, words = int(sizes[:, 0].max()), int(sizes[:, 1].max())
    blobs = _allgather_host(np.pad(blob, (0, width - blob.size)))
    all_counts = _allgather_host(np.pad(counts.astype(np.int64), (0, words - counts.size)))
    total: dict[str, int] = {}
    for p in range(blobs.shape[0]):
        if sizes[p, 1] == 0:
            continue
        names = bytes(blobs[p, :sizes[p, 0]]).decode("utf-8").split("\n")
        for w, c in zip(names, all_counts[p, :sizes[p, 1]]):
            total[w] = total.get(w, 0) + int(c)
    vocab = sorted(total, key=lambda w: (-total[w], w))
    index = {w: i for i, w in enumerate(vocab)}
    remap = np.asarray([index[w] for w in local.vocab], np.int64)
    word_ids = remap[local.word_ids] if local.num_tokens else local.word_ids
    return Corpus.from_arrays(word_ids=word_ids, doc_offsets=local.doc_offsets, vocab=tuple(vocab),
                              sentence_offsets=local.sentence_offsets, labels=local.labels)


def global_fingerprint(local: Corpus, sentences: bool = False) -> str:
    """One fingerprint of the whole corpus of a multi-process run (every process's own part,
    in process order); one process: ``corpus.fingerprint(sentences)``."""
    if jax.process_count() == 1:
        return local.fingerprint(sentences)
    import hashlib
    digests = _allgather_host(np.frombuffer(bytes.fromhex(local.fingerprint(sentences)), np.uint8))
    return hashlib.sha256(b"jaxtopics-multiprocess-v1\0" + digests.tobytes()).hexdigest()


def balanced_ranges(doc_tokens: np.ndarray, parts: int) -> list[int]:
    """Cut documents 0..D-1 into `parts` contiguous non-empty ranges of about equal token counts;
    returns the P+1 boundaries. Needs D >= parts."""
    doc_tokens = np.asarray(doc_tokens, np.int64)
    ends, total, num_docs = np.cumsum(doc_tokens), int(doc_tokens.sum()), doc_tokens.shape[0]
    cuts, prev = [], 0
    for i in range(1, parts):                   # cut after the document holding token i N / P
        c = int(np.searchsorted(ends, total * i / parts, side="left")) + 1
        prev = min(max(c, prev + 1), num_docs - (parts - i))
        cuts.append(prev)
    return [0, *cuts, num_docs]


def make_mesh(num_shards: int, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-d mesh over the first `num_shards` devices (default: ``jax.devices()``)."""
    if devices is None:
        devices = sorted(jax.devices(), key=lambda dv: (dv.process_index, dv.id))
    devices = list(devices)
    if num_shards > len(devices):
        raise ParameterError(
            f"num_shards={num_shards} but only {len(devices)} devices are visible; on a CPU start "
            f"the process with jax.config.update('jax_num_cpu_devices', {num_shards})")
    return Mesh(np.array(devices[:num_shards]), (AXIS,))


def _pad_shard(d: lda.Data, n_max: int, d_max: int, b_max: int, c_max: int) -> lda.Data:
    """One shard's Data padded to n_max tokens, d_max documents and [b_max, c_max] blocks; the
    dummy slot moves from n to n_max."""
    n = d.word.shape[0] - 1

    def tokens(a, fill=0):                      # [n+1] -> [n_max+1]; slots >= n are padding
        out = np.full(n_max + 1, fill, np.int32)
        out[:n] = np.asarray(a)[:n]
        return out

    def docs(a):
        out = np.zeros(d_max, np.int32)
        out[:a.shape[0]] = np.asarray(a)
        return out

    blocks = np.asarray(d.blocks)
    blocks = np.where(blocks >= n, n_max, blocks)
    b, c = blocks.shape
    blocks = np.pad(blocks, ((0, b_max - b), (0, c_max - c)), constant_values=n_max)
    valid = np.pad(np.asarray(d.valid), ((0, b_max - b), (0, c_max - c)), constant_values=False)
    def pad_blocks(a):                          # [b, c] -> [b_max, c_max], padding 0
        return np.pad(np.asarray(a), ((0, b_max - b), (0, c_max - c))).astype(np.int32)

    members = np.full(n_max, n_max, np.int32)
    members[:n] = np.asarray(d.word_members)
    return lda.Data(word=tokens(d.word), doc=tokens(d.doc), doc_start=docs(d.doc_start),
                    doc_len=docs(d.doc_len), word_members=members, word_start=np.asarray(d.word_start),
                    word_len=np.asarray(d.word_len), word_rank=tokens(d.word_rank),
                    blocks=blocks.astype(np.int32), valid=valid,
                    block_doc=pad_blocks(d.block_doc), block_word=pad_blocks(d.block_word))


def prepare(corpus: Corpus, params: lda.Params, num_shards: int) -> ShardedData:
    """Split the corpus into `num_shards` document ranges and lay each out as ``lda.prepare``
    does, padded to common shapes and stacked along a leading shard axis.

    In a multi-process run (``initialize``), `corpus` is this process's own documents
    (``read_process_corpus``) and `num_shards` the global number of shards; this process lays
    out its ``num_shards / process_count`` shards (host arrays), padded to the shapes common to
    all processes. ``place`` then assembles the global arrays."""
    lda.check_params(params)
    refusal = lda.shard_refusal(params)
    if refusal:
        raise ParameterError(refusal)
    processes = jax.process_count()
    if num_shards % processes:
        raise ParameterError(f"{num_shards} shards cannot be split evenly over {processes} processes")
    parts = [lda.prepare(corpus.subset(ix), params)
             for ix in split_documents(corpus, num_shards // processes)]
    sizes = np.array([[p.word.shape[0] - 1 for p in parts], [p.doc_start.shape[0] for p in parts],
                      [p.blocks.shape[0] for p in parts], [p.blocks.shape[1] for p in parts]])
    all_sizes = _allgather_host(sizes).transpose(1, 0, 2).reshape(4, -1)   # [4, shards]
    n_max, d_max, b_max, c_max = (int(x) for x in all_sizes.max(1))
    padded = [_pad_shard(p, n_max, d_max, b_max, c_max) for p in parts]
    stack = jnp.asarray if processes == 1 else np.asarray
    data = jax.tree.map(lambda *a: stack(np.stack(a)), *padded)
    return ShardedData(data=data, num_tokens=jnp.asarray(all_sizes[0], jnp.int32),
                       num_docs=jnp.asarray(all_sizes[1], jnp.int32))


def _allgather_host(x: np.ndarray) -> np.ndarray:
    """[processes, ...]: `x` of every process (same shape on all), on the host; one process: x[None]."""
    if jax.process_count() == 1:
        return np.asarray(x)[None]
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def _real_tokens(sdata: ShardedData) -> Array:
    """[shards, n_max + 1] bool: True on the real tokens of each shard."""
    n_slots = sdata.data.word.shape[1]
    return jnp.arange(n_slots)[None, :] < sdata.num_tokens[:, None]


def _state_from_assignments(z: Array, sdata: ShardedData, params: lda.Params) -> lda.State:
    """Count tables of per-shard topics z [shards, n_max + 1]; padding slots are set to 0 and
    counted nowhere."""
    k, v = params.num_topics, sdata.data.word_start.shape[1]
    real = _real_tokens(sdata)
    z = jnp.where(real, z, 0).astype(jnp.int32)
    d_max = sdata.data.doc_start.shape[1]
    doc_topic = jax.vmap(lambda doc, zz, w: count_table((d_max, k), doc, zz, weights=w))(
        sdata.data.doc, z, real)
    words, topics, weights = sdata.data.word.reshape(-1), z.reshape(-1), real.reshape(-1)
    return lda.State(z=z, doc_topic=doc_topic,
                     word_topic=count_table((v, k), words, topics, weights=weights),
                     topic=count_table((k,), topics, weights=weights))


def shard_state(state: lda.State, sdata: ShardedData, *, local: bool = False) -> lda.State:
    """Split an ``lda.State`` in corpus order into the shards of `sdata` (the inverse of
    ``gather``): per-shard z [shards, n_max + 1] and doc_topic [shards, d_max, K], padded with 0.

    Multi-process: only this process's shards are returned (host arrays for ``place``); `state`
    is the whole corpus's (a loaded model), or with ``local=True`` this process's documents only.
    """
    n_all, d_all = np.asarray(sdata.num_tokens), np.asarray(sdata.num_docs)
    shards = _local_shards(len(n_all))
    t0, d0 = np.concatenate([[0], np.cumsum(n_all)]), np.concatenate([[0], np.cumsum(d_all)])
    base_t, base_d = (t0[shards[0]], d0[shards[0]]) if local else (0, 0)
    n_slots, d_max = sdata.data.word.shape[1], sdata.data.doc_start.shape[1]
    z_all, dt_all = np.asarray(state.z), np.asarray(state.doc_topic)
    z = np.zeros((len(shards), n_slots), np.int32)
    dt = np.zeros((len(shards), d_max, dt_all.shape[1]), np.int32)
    for i, s in enumerate(shards):
        z[i, :n_all[s]] = z_all[t0[s] - base_t:t0[s + 1] - base_t]
        dt[i, :d_all[s]] = dt_all[d0[s] - base_d:d0[s + 1] - base_d]
    if jax.process_count() > 1:
        return lda.State(z, dt, np.asarray(state.word_topic), np.asarray(state.topic))
    return lda.State(jnp.asarray(z), jnp.asarray(dt), state.word_topic, state.topic)


def _local_shards(num_shards: int) -> range:
    """Indices of this process's shards (contiguous: the mesh orders devices by process)."""
    per = num_shards // jax.process_count()
    return range(jax.process_index() * per, (jax.process_index() + 1) * per)


def recount(state: lda.State, sdata: ShardedData, params: lda.Params) -> lda.State:
    """Rebuild every count table of a placed sharded state from its topics z (on the devices;
    in a multi-process run the global tables are summed over all processes' tokens)."""
    return jax.jit(_state_from_assignments, static_argnums=2)(state.z, sdata, params)


def init(key: Array, sdata: ShardedData, params: lda.Params) -> lda.State:
    """Uniform random topics. The State's z [shards, n_max+1] and doc_topic [shards, d_max, K]
    carry the shard axis; word_topic [V, K] and topic [K] are the global (replicated) tables."""
    if params.init != "random":
        raise ParameterError(f"sharded sweeps support init='random' only, got {params.init!r}")
    z = jax.random.randint(key, sdata.data.word.shape, 0, params.num_topics)
    return _state_from_assignments(z, sdata, params)


def sweep(key: Array, state: lda.State, sdata: ShardedData, params: lda.Params,
          mesh: Mesh) -> tuple[lda.State, lda.SweepInfo]:
    """One sharded sweep: every shard runs ``lda.sweep(fold_in(key, shard), ...,
    axis_name="shards")`` on its documents (module docstring); with one shard, exactly
    ``lda.sweep(key, ...)``."""
    sharded, replicated = PartitionSpec(AXIS), PartitionSpec()
    state_spec = lda.State(z=sharded, doc_topic=sharded, word_topic=replicated, topic=replicated)

    one_shard = mesh.shape[AXIS] == 1

    def local(key, state, data):
        shard_key = key if one_shard else jax.random.fold_in(key, jax.lax.axis_index(AXIS))
        mine = lda.State(state.z[0], state.doc_topic[0], state.word_topic, state.topic)
        mine, info = lda.sweep(shard_key, mine,
                               jax.tree.map(lambda a: a[0], data), params, axis_name=AXIS)
        changed = jax.lax.psum(info.changed, AXIS)
        return lda.State(mine.z[None], mine.doc_topic[None], mine.word_topic, mine.topic), changed

    run = _shard_map(local, mesh=mesh, in_specs=(replicated, state_spec, sharded),
                     out_specs=(state_spec, replicated), check_vma=False)
    state, changed = run(key, state, sdata.data)
    return state, lda.SweepInfo(changed)


def log_joint(state: lda.State, sdata: ShardedData, params: lda.Params) -> Array:
    """Collapsed log p(w, z) of the whole corpus (padding documents are empty and add 0)."""
    k = params.num_topics
    flat = lda.State(state.z, state.doc_topic.reshape(-1, k), state.word_topic, state.topic)
    return lda.log_joint(flat, None, params)


def gather(state: lda.State, sdata: ShardedData) -> lda.State:
    """The global ``lda.State`` in corpus order (host-side concatenation of the shards; in a
    multi-process run every process receives all shards)."""
    host = _host_value
    n, d = host(sdata.num_tokens), host(sdata.num_docs)
    z, dt = host(state.z), host(state.doc_topic)
    word_topic, topic = jnp.asarray(host(state.word_topic)), jnp.asarray(host(state.topic))
    z_all = np.concatenate([z[s, :n[s]] for s in range(len(n))] + [np.zeros(1, np.int32)])
    doc_topic = np.concatenate([dt[s, :d[s]] for s in range(len(d))])
    return lda.State(jnp.asarray(z_all), jnp.asarray(doc_topic), word_topic, topic)


def _identity(x):
    return x


def _host_value(x: Array) -> np.ndarray:
    """The whole value of a (possibly multi-process) global array, on this host."""
    if jax.process_count() == 1 or x.is_fully_addressable:
        return np.asarray(x)
    if not x.sharding.is_fully_replicated:     # all-gather on the devices, then read one copy
        x = jax.jit(_identity, out_shardings=NamedSharding(x.sharding.mesh, PartitionSpec()))(x)
    return np.asarray(x.addressable_data(0))


def place(state: lda.State, sdata: ShardedData, mesh: Mesh) -> tuple[lda.State, ShardedData]:
    """Put the shard axis of `state` and `sdata` on the mesh devices, the global tables on all.

    Multi-process: `state` and `sdata` hold this process's shards (host arrays); the global
    arrays are assembled from every process's part (``make_array_from_process_local_data``)."""
    sharded, replicated = NamedSharding(mesh, PartitionSpec(AXIS)), NamedSharding(mesh, PartitionSpec())
    if jax.process_count() > 1:
        shards = sdata.num_tokens.shape[0]

        def put(x, where):
            x = np.asarray(x)
            shape = x.shape if where is replicated else (shards,) + x.shape[1:]
            return jax.make_array_from_process_local_data(where, x, shape)
        state = lda.State(put(state.z, sharded), put(state.doc_topic, sharded),
                          put(state.word_topic, replicated), put(state.topic, replicated))
        sdata = ShardedData(jax.tree.map(lambda a: put(a, sharded), sdata.data),
                            put(sdata.num_tokens, replicated), put(sdata.num_docs, replicated))
        return state, sdata
    state = lda.State(jax.device_put(state.z, sharded), jax.device_put(state.doc_topic, sharded),
                      jax.device_put(state.word_topic, replicated), jax.device_put(state.topic, replicated))
    sdata = ShardedData(jax.device_put(sdata.data, sharded), jax.device_put(sdata.num_tokens, replicated),
                        jax.device_put(sdata.num_docs, replicated))
    return state, sdata


@dataclass(frozen=True)
class ShardedLDA:
    """``models.lda``'s ``sweep`` / ``log_joint`` bound to a mesh, in the signature the driver
    (``fit.run_sweeps``) calls: a drop-in model for sharded states and ``ShardedData``."""

    mesh: Mesh

    def sweep(self, key: Array, state: lda.State, sdata: ShardedData,
              params: lda.Params) -> tuple[lda.State, lda.SweepInfo]:
        return sweep(key, state, sdata, params, self.mesh)

    def log_joint(self, state: lda.State, sdata: ShardedData, params: lda.Params) -> Array:
        return log_joint(state, sdata, params)
