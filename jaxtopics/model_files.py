"""Model files: ``load`` and everything it checks. Nothing in a file is trusted: the metadata
(model name, parameters re-validated by the model's ``check_params``, seed, sweep and token
counts, text options, label names), the vocabulary, the state's arrays (shapes against the
model's ``state_shapes``, values against its ``check_state``) and the trace are each checked,
and a bad entry is a FormatError naming the file and the entry. Older formats are migrated as
they are read: parameters and state fields a model added later (``PARAMS_ADDED_LATER``,
``STATE_ADDED_LATER``) get the values those chains ran with, a format-1 vocabulary and missing
``shards``/``processes``/``num_docs`` are read as they were written, and a file from before
checksums has its read-outs computed once. ``_rebuilt`` (used by ``resume``) refuses count
tables that disagree with the saved latents. Writing is ``FittedModel.save`` on top of
``jaxtopics.io``; the path checks it and the checkpoints share are here.
"""

from __future__ import annotations

import errno
import inspect
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

from .errors import FormatError, ParameterError
from .fit import TracePoint, in_32_bits
from .io import CHECKSUM_KEY, decode_strings, load_model_file
from .models.base import kernel_module
from .text import TextOptions
from .validate import INT32_MAX, check_int, check_seed

if TYPE_CHECKING:  # pragma: no cover
    from .fitted import FittedModel

__all__ = ["load"]


@in_32_bits
def load(path: str | os.PathLike) -> FittedModel:
    """Restore a model written by ``FittedModel.save`` (``resume`` needs the same corpus).

    Args:
        path: the model file.

    Returns:
        The FittedModel (a FittedHDP for an HDP), as it was saved.

    Raises:
        FormatError: nothing in the file is trusted: a missing or malformed entry, parameters
            that ``check_params`` refuses, or arrays whose shapes disagree with each other (K,
            V, N, D) raise it, naming the file and the entry.

    Example:
        >>> import jaxtopics as jt
        >>> corpus = jt.Corpus.from_texts(["apple banana apple cherry", "car engine wheel car"] * 10)
        >>> jt.LDA(num_topics=2).fit(corpus, num_sweeps=50, seed=0).save("lda.jtm")
        >>> model = jt.load("lda.jtm")
        >>> model.model, model.sweeps_done, model.resume(corpus, num_sweeps=10).sweeps_done
        ('lda', 50, 60)
    """
    # the registry at call time: estimators.py imports (through fitted.py) this module
    from .estimators import MODELS
    arrays, meta = load_model_file(path)
    name = meta.get("model")
    if not isinstance(name, str) or name not in MODELS:
        raise FormatError(f"unknown model {name!r} (known: {sorted(MODELS)})", path=str(path))
    module = MODELS[name].module
    params = _params_from_meta(module, meta.get("params"), path, _state_fields(arrays))
    module = kernel_module(module, params)      # the module of its kernel (HDP: two)
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
        raise FormatError(f"a {name} model file needs metadata 'label_names' (files written "
                          "before the label names were kept, of format 1, cannot be read: fit "
                          "the model again)", path=str(path))
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


def _state_fields(arrays: dict) -> set[str]:
    """The State fields a model file holds (its ``state.<field>`` arrays)."""
    return {k[len("state."):] for k in arrays if k.startswith("state.")}


def _params_from_meta(module: ModuleType, obj: Any, path: Any, state_fields: set[str] = frozenset()
                      ) -> Any:
    """The model's Params from the file, re-validated by the module's check_params; a module's
    ``migrate_params(params, state_fields)`` renames what older files name otherwise (HDP:
    the CRF kernels, "parallel" and "sequential" before the direct-assignment kernels)."""
    if not isinstance(obj, dict):
        raise FormatError(f"metadata 'params' must be an object, got {obj!r}", path=str(path))
    migrate = getattr(module, "migrate_params", None)
    if migrate is not None:
        obj = migrate(obj, state_fields)
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


#: model-file arrays of the trace: "trace" [T, 4] (sweep, log joint per token, changed
#: fraction, seconds) and, for a chain whose priors move, "trace.priors.<name>" [T, size]
#: (NaN at points recorded without them)
TRACE_PRIORS = "trace.priors."


def trace_arrays(trace: list[TracePoint]) -> dict[str, np.ndarray]:
    """The model-file arrays of `trace` (``TRACE_PRIORS``)."""
    arrays = {"trace": np.asarray([p[:4] for p in trace], dtype=np.float64).reshape(-1, 4)}
    sizes: dict[str, int] = {}
    for p in trace:
        for name, value in (p.priors or {}).items():
            sizes.setdefault(name, np.size(value))
    for name, size in sizes.items():
        table = np.full((len(trace), size), np.nan)
        for i, p in enumerate(trace):
            if p.priors and name in p.priors and np.size(p.priors[name]) == size:
                table[i] = np.ravel(p.priors[name])
        arrays[TRACE_PRIORS + name] = table
    return arrays


def _trace_from_arrays(arrays: dict, sweeps_done: int, path: Any) -> list[TracePoint]:
    """The trace from its arrays (``TRACE_PRIORS``)."""
    if "trace" not in arrays:
        raise FormatError("model file lacks array 'trace'", path=str(path))
    tr = arrays["trace"]
    if tr.dtype.kind != "f" or tr.ndim != 2 or tr.shape[1] != 4:
        raise FormatError(f"array 'trace' is {tr.dtype}{list(tr.shape)}, expected float64[T, 4]",
                          path=str(path))
    sweeps = tr[:, 0]
    if tr.shape[0] and (not np.all(np.isfinite(sweeps)) or np.any(sweeps != np.round(sweeps))
                        or np.any(np.diff(sweeps) <= 0) or sweeps[0] < 0 or sweeps[-1] > sweeps_done):
        raise FormatError(f"array 'trace': sweep numbers must be integers rising within "
                          f"0..{sweeps_done} (sweeps_done)", path=str(path))
    priors: list[dict] = [{} for _ in range(tr.shape[0])]
    for key in sorted(k for k in arrays if k.startswith(TRACE_PRIORS)):
        name, table = key[len(TRACE_PRIORS):], arrays[key]
        if table.dtype.kind != "f" or table.ndim != 2 or table.shape[0] != tr.shape[0]:
            raise FormatError(f"array {key!r} is {table.dtype}{list(table.shape)}, expected "
                              f"float64[{tr.shape[0]}, size]", path=str(path))
        for row, values in zip(priors, table):
            if np.all(np.isnan(values)):
                continue
            if not np.all(np.isfinite(values) & (values > 0)):
                raise FormatError(f"array {key!r} holds a value that is not a finite positive "
                                  "number", path=str(path))
            row[name] = float(values[0]) if table.shape[1] == 1 else tuple(map(float, values))
    return [TracePoint(int(r[0]), float(r[1]), float(r[2]), float(r[3]), p or None)
            for r, p in zip(tr, priors)]
