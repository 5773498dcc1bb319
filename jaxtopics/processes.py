"""Multi-process plumbing of a run over several processes (``jax.distributed``), whatever runs in
them: joining the run (``initialize``), agreeing across processes (``on_every_process``: an error
on one process ends all of them; ``require_same_settings`` / ``require_same_local_devices``: every
process was started alike), host values summed or gathered over the processes (``process_sum``,
``_allgather_host``; ``_host_value``: the whole value of a global array on this host), each
process reading its own documents of a corpus file (``read_process_corpus``, ranges cut by
``balanced_ranges``) and the fingerprint of the whole corpus from the processes' parts
(``global_fingerprint``). One process: every function here is the plain single-process answer,
with no collective.

Nothing here knows about meshes, shards or models: ``jaxtopics.distributed`` (the ``shard_map``
sharding of a model's sweep) builds on this module, never the reverse, and re-exports its
public names (``jt.distributed.initialize``, ...).
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import zlib
from typing import Any

import jax
import numpy as np
from jax import Array
from jax.sharding import NamedSharding, PartitionSpec

from .corpus import Corpus
from .errors import JaxTopicsError, ParameterError

__all__ = ["initialize", "on_every_process", "require_same_settings",
           "require_same_local_devices", "process_sum", "balanced_ranges",
           "read_process_corpus", "global_fingerprint"]


# joining a multi-process run


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, **kwargs) -> None:
    """Join a multi-process run: ``jax.distributed.initialize`` with the same arguments, after
    selecting the gloo collectives for CPU devices (GPUs use NCCL). Call it first, before any
    computation; then every process sees the devices of all processes in ``jax.devices()``.

    The wait for the other processes (up to ``initialization_timeout``, 300 s by default) runs in
    a helper thread, so that Ctrl-C (KeyboardInterrupt) still reaches the caller meanwhile: the
    native call itself holds the main thread until it returns.

    Args:
        coordinator_address: ``host:port`` of process 0 (None: from the environment, e.g.
            SLURM's).
        num_processes: the processes of the run (None: from the environment).
        process_id: this process's index (None: from the environment).
        **kwargs: ``jax.distributed.initialize``'s other arguments (``initialization_timeout``,
            ``local_device_ids``, ...)."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    failure: list[BaseException] = []

    def join() -> None:
        # Ctrl-C goes to the waiting caller, not into the connection's system calls (the
        # runtime's threads started from here inherit the mask)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            jax.distributed.initialize(coordinator_address=coordinator_address,
                                       num_processes=num_processes, process_id=process_id, **kwargs)
        except BaseException as e:          # re-raised in the caller's thread
            failure.append(e)

    joining = threading.Thread(target=join, name="jax.distributed.initialize", daemon=True)
    joining.start()
    while joining.is_alive():
        joining.join(0.1)
    if failure:
        raise failure[0]


# agreement across processes: an error on one ends all; every process started alike


def on_every_process(fn, what: str = "lay out their documents"):
    """``fn()``, where a JaxTopicsError or OSError on any process of a multi-process run ends
    every process (the others would otherwise wait in the next collective for the one that left).

    Args:
        fn: a function of no arguments; it must not itself use collectives (a process that
            fails before them would leave the others waiting there).
        what: what the failed processes could not do, in the others' error.

    Returns:
        ``fn()``; one process: just that.

    Raises:
        ParameterError: on the processes where `fn` succeeded, when it failed on another
            (where it failed, its own error)."""
    if jax.process_count() == 1:
        return fn()
    error = None
    try:
        result = fn()
    except (JaxTopicsError, OSError) as e:          # OSError: e.g. a file missing on this host
        result, error = None, e
    failed = np.flatnonzero(_allgather_host(np.array([error is not None], np.int32))[:, 0])
    if error is not None:
        raise error
    if failed.size:
        raise ParameterError(f"process(es) {failed.tolist()} could not {what} (their own error "
                             "says why)")
    return result


def require_same_settings(settings: dict[str, Any], *, where: str = "") -> None:
    """A ParameterError on every process of a multi-process run unless all of them were given
    the same `settings` (name -> value, compared by ``repr``; the same names on every process).
    Processes that disagree on, e.g., the sweeps, K or the seed would otherwise wait for each
    other forever, abort inside a collective, or save a seed that does not give their chain.
    One small ``process_allgather`` of a CRC-32 per setting; one process: nothing to check.

    Args:
        settings: name -> value, compared by ``repr``.
        where: appended to the error's list of settings (e.g. " of the fit")."""
    if jax.process_count() == 1:
        return
    names = sorted(settings)
    crc = np.array([zlib.crc32(f"{n}={settings[n]!r}".encode("utf-8", "backslashreplace"))
                    for n in names], np.uint32)
    counts = _allgather_host(np.asarray([len(names)], np.int32))[:, 0]
    if (counts != counts[0]).any():
        raise ParameterError(f"the processes of this multi-process run compare {counts.tolist()} "
                             "settings: run the same jaxtopics version on every process")
    every = _allgather_host(crc.view(np.int32))                        # [processes, settings]
    differ = np.flatnonzero((every != every[:1]).any(axis=0))
    if differ.size:
        bad = [names[i] for i in differ]
        who = np.flatnonzero((every[:, differ] != every[:1, differ]).any(axis=1))
        raise ParameterError(f"the processes of this multi-process run were given different "
                             f"{', '.join(bad)}{where} (process(es) {who.tolist()} differ from "
                             f"process 0; this one is process {jax.process_index()}): start every "
                             "process with the same settings")


def require_same_local_devices() -> None:
    """A ParameterError on every process unless each process of the run has as many devices as
    the others (every process sees every device, so this needs no collective; the collectives
    of a run with uneven processes would fail inside)."""
    per = np.bincount([d.process_index for d in jax.devices()], minlength=jax.process_count())
    if (per != per[0]).any():
        _meet("jaxtopics: uneven devices")
        raise ParameterError(f"the processes of this multi-process run have {per.tolist()} devices: "
                             "give every process the same number (--devices)")


def _meet(name: str, timeout_s: int = 60) -> None:
    """Wait until every process has come here (the coordination service's barrier `name`, no
    device collective), at most `timeout_s`. Before a process stops on an error that each one
    finds alone: process 0 hosts the service, and its leaving would abort a process still
    starting its backend (which asks the service for the others' devices) with no message."""
    from jax._src import distributed as _jax_distributed     # the client jax.distributed made

    client = _jax_distributed.global_state.client
    if client is None:
        return
    try:
        client.wait_at_barrier(name, timeout_s * 1000)
    except Exception:           # noqa: BLE001 - a process that never comes: stop anyway
        pass


# host values over the processes; host-local values of global arrays


def _allgather_host(x: np.ndarray) -> np.ndarray:
    """[processes, ...]: `x` of every process (same shape on all), on the host; one process: x[None].
    Processes with different numbers of devices are refused first (the gather would fail inside).
    A 64-bit array travels as uint32 pairs: jax would send it as int64 where its x64 mode is on
    and as int32 where it is off, and processes that differ in that setting must still agree."""
    if jax.process_count() == 1:
        return np.asarray(x)[None]
    x = np.asarray(x)
    if x.dtype.itemsize == 8:
        return _allgather_64(x).view(x.dtype)
    require_same_local_devices()
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(x))


def process_sum(value):
    """A value summed over the processes of a multi-process run (exact for 64-bit totals, such
    as the tokens of a large corpus).

    Args:
        value: an int, or an integer array of one shape on every process (arrays of different
            sizes are a ParameterError on every process).

    Returns:
        The sum: an int, or an int64 array; one process: `value`.

    Example:
        >>> from jaxtopics.processes import process_sum
        >>> process_sum(3)                                   # one process: the value itself
        3
    """
    if np.ndim(value) == 0:
        if jax.process_count() == 1:
            return int(value)
        return int(_allgather_64(np.asarray([value], np.int64)).view(np.int64).sum())
    a = np.asarray(value, np.int64)
    if jax.process_count() == 1:
        return a
    sizes = _allgather_host(np.asarray([a.size], np.int32))[:, 0]
    if (sizes != sizes[0]).any():
        raise ParameterError(f"the processes hold {sizes.tolist()} values where each must hold "
                             "the same number (e.g. the same label_names on every process)")
    return _allgather_64(a.reshape(-1)).view(np.int64).sum(0).reshape(a.shape)


def _allgather_64(x: np.ndarray) -> np.ndarray:
    """``_allgather_host`` of a 64-bit array, exact without jax's x64 mode (sent as uint32
    pairs): [processes, ...] as uint64 bits, to ``view`` as the original dtype."""
    x = np.ascontiguousarray(x)
    pairs = _allgather_host(x.view(np.uint32))
    return np.ascontiguousarray(pairs.astype(np.uint32)).view(np.uint64)


def _identity(x):
    return x


def _host_value(x: Array) -> np.ndarray:
    """The whole value of a (possibly multi-process) global array, on this host."""
    if jax.process_count() == 1 or x.is_fully_addressable:
        return np.asarray(x)
    if not x.sharding.is_fully_replicated:     # all-gather on the devices, then read one copy
        x = jax.jit(_identity, out_shardings=NamedSharding(x.sharding.mesh, PartitionSpec()))(x)
    return np.asarray(x.addressable_data(0))


# each process reads its own documents; the whole corpus's fingerprint from their parts


def balanced_ranges(doc_tokens: np.ndarray, parts: int) -> list[int]:
    """Cut documents 0..D-1 into contiguous non-empty ranges of about equal token counts.

    Args:
        doc_tokens: [D] tokens of each document.
        parts: P, the ranges; D >= P.

    Returns:
        The P+1 boundaries (document indices, from 0 to D).

    Example:
        >>> from jaxtopics.processes import balanced_ranges
        >>> balanced_ranges([5, 1, 1, 5, 2, 2], 3)
        [0, 2, 4, 6]
    """
    doc_tokens = np.asarray(doc_tokens, np.int64)
    ends, total, num_docs = np.cumsum(doc_tokens), int(doc_tokens.sum()), doc_tokens.shape[0]
    cuts, prev = [], 0
    for i in range(1, parts):                   # cut after the document holding token i N / P
        c = int(np.searchsorted(ends, total * i / parts, side="left")) + 1
        prev = min(max(c, prev + 1), num_docs - (parts - i))
        cuts.append(prev)
    return [0, *cuts, num_docs]


def read_process_corpus(path, fmt: str = "ldac", vocab=None, *, labelled: bool = False,
                        label_key: str | None = None, **text_kwargs) -> Corpus:
    """This process's documents of a corpus file: a contiguous range of documents (lines),
    ranges balanced by tokens over ``jax.process_count()`` processes, read without building the
    other processes' token arrays. `fmt`: "ldac" (with `vocab`, a file or word list; without
    it words are named by id over the global id range) or "text" / "jsonl" (tokenised with
    ``Corpus.from_texts`` options; the vocabulary is merged over all processes, ordered as a
    single-process ``from_texts`` orders it; ranges are balanced by characters). Labels as one
    process reads them, with the same ids in every process: `labelled` (text: label sets from
    lines ``label1--label2<TAB>text``, as ``Corpus.from_text_file(labelled=True)``) or
    `label_key` (jsonl: one label per document, as ``Corpus.from_jsonl``). One process: the
    whole file.

    Args:
        path: the corpus file.
        fmt: "ldac", "text" or "jsonl".
        vocab: for "ldac", a vocabulary file or word list (None: words named by id).
        labelled: for "text", read label sets (``label1--label2<TAB>text``).
        label_key: for "jsonl", the key of each document's label.
        **text_kwargs: ``Corpus.from_texts``'s options (text, jsonl).

    Returns:
        A Corpus of this process's documents."""
    from . import io as _io

    processes, me = jax.process_count(), jax.process_index()
    if fmt == "ldac":
        if labelled or label_key is not None:
            raise ParameterError("LDA-C files carry no labels (labelled / label_key need "
                                 "fmt 'text' / 'jsonl')")

        def read_ldac():
            doc_tokens = _io.ldac_doc_tokens(path)
            _check_enough_docs(doc_tokens.shape[0], processes, path)
            bounds = balanced_ranges(doc_tokens, processes)
            word_ids, offsets = _io.read_ldac(path, documents=(bounds[me], bounds[me + 1]))
            if vocab is None:
                return word_ids, offsets
            words = tuple(vocab) if isinstance(vocab, (list, tuple)) else _io.read_vocab(vocab)
            return Corpus.from_arrays(word_ids=word_ids, doc_offsets=offsets, vocab=words)

        read = on_every_process(read_ldac, "read their documents")
        if isinstance(read, Corpus):
            return read
        word_ids, offsets = read
        top = int(word_ids.max()) + 1 if word_ids.size else 0
        size = int(_allgather_host(np.asarray([top])).max())
        return Corpus.from_arrays(word_ids=word_ids, doc_offsets=offsets,
                                  vocab=tuple(str(i) for i in range(size)))
    if fmt not in ("text", "jsonl"):
        raise ParameterError(f"fmt must be 'ldac', 'text' or 'jsonl', got {fmt!r}")
    if (labelled and fmt != "text") or (label_key is not None and fmt != "jsonl"):
        raise ParameterError("labelled reads label sets of fmt 'text'; label_key labels of "
                             f"fmt 'jsonl' (got fmt {fmt!r})")
    for name in ("labels", "label_names"):
        if name in text_kwargs:
            raise ParameterError(f"{name}= cannot be split over processes: give the labels in "
                                 "the file (labelled / label_key)")
    local = on_every_process(lambda: _read_local_texts(path, fmt, labelled, label_key, text_kwargs),
                             "read their documents")
    return local if processes == 1 else _merge_vocab(local)


def _read_local_texts(path, fmt: str, labelled: bool, label_key: str | None,
                      text_kwargs: dict) -> Corpus:
    """This process's documents of a text / jsonl file, before the vocabulary merge."""
    from . import io as _io
    from .corpus_checks import _encode_labels, _label_sets_csr

    processes, me = jax.process_count(), jax.process_index()
    text_kwargs = dict(text_kwargs)
    if fmt == "text" and labelled:
        labels, texts = _io.read_labelled_text_lines(path)
        # every process reads every line, so the label names (ids) are the whole file's
        text_kwargs["label_names"] = _label_sets_csr(labels)[2]
    elif fmt == "text":
        texts, labels = _io.read_text_lines(path), None
    else:
        texts, labels = _io.read_jsonl(path, text_key=text_kwargs.pop("text_key", "text"),
                                       label_key=label_key)
        if labels is not None:
            labels = np.asarray(_encode_labels(labels), np.int64)
    for name in ("min_df", "max_df"):
        if name in text_kwargs and processes > 1:
            raise ParameterError(f"{name} needs document frequencies over all processes; "
                                 "filter the vocabulary before a multi-process fit")
    _check_enough_docs(len(texts), processes, path)
    bounds = balanced_ranges(np.asarray([len(t) + 1 for t in texts]), processes)
    mine = slice(bounds[me], bounds[me + 1])
    return Corpus.from_texts(texts[mine], labels=None if labels is None else labels[mine],
                             **text_kwargs)


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
    # everything else (sentences, labels, label sets, text options) stays as it is
    return dataclasses.replace(local, word_ids=word_ids, vocab=tuple(vocab))


def global_fingerprint(local: Corpus, sentences: bool = False, version: int = 2) -> str:
    """The fingerprint of the whole corpus of a multi-process run, from every process's own
    documents; one process: ``corpus.fingerprint(sentences, version)``. Version 2 (what model
    files store) equals the one-process fingerprint of the whole corpus, whatever the number of
    processes: each process hashes its documents at their global offsets and the sums are added
    (``Corpus.fingerprint_parts``). Version 1 (files written before): a hash of the processes'
    own digests, valid for the same process layout only.

    Args:
        local: this process's documents.
        sentences: hash the sentence boundaries too.
        version: 1 or 2.

    Returns:
        The fingerprint (as ``Corpus.fingerprint``)."""
    if jax.process_count() == 1:
        return local.fingerprint(sentences, version)
    if version == 2:
        counts = _allgather_64(local.fingerprint_counts(sentences)).view(np.int64)   # [P, 4]
        offsets = counts[:jax.process_index()].sum(0)
        parts = _allgather_64(local.fingerprint_parts(sentences, offsets)).view(np.uint64)
        total = [sum(int(x) for x in column) % 2**64 for column in parts.T]
        return local.fingerprint_from_parts(sentences, counts.sum(0), total)
    import hashlib
    digests = _allgather_host(np.frombuffer(bytes.fromhex(local.fingerprint(sentences)), np.uint8))
    return hashlib.sha256(b"jaxtopics-multiprocess-v1\0" + digests.tobytes()).hexdigest()
