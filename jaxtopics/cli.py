"""The ``jaxtopics`` command: ``fit``, ``demo``, ``show``; ``infer`` and ``evaluate`` new documents.

``fit`` a model on a file, ``demo`` on the embedded corpus, ``show`` a saved one; ``infer`` the
topic proportions of new documents, ``evaluate`` the held-out perplexity of a saved model;
``compare-k`` fits several K on a file and compares them (``jt.compare_num_topics``).

    jaxtopics demo
    jaxtopics fit --model lda --num-topics 20 --sweeps 500 --seed 0 \\
        --input reuters.ldac --vocab reuters.tokens --out runs/reuters
    jaxtopics show runs/reuters/model.jtm
    jaxtopics infer runs/reuters --input new.ldac --vocab reuters.tokens --out theta.csv
    jaxtopics evaluate runs/reuters --held-out test.ldac --vocab reuters.tokens
    jaxtopics compare-k --ks 5,10,20 --seeds 0,1,2 --input reuters.ldac --vocab reuters.tokens
"""

from __future__ import annotations

import _thread
import argparse
import builtins
import contextlib
import csv
import io
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .cli_new_documents import (_add_compare_k_command, _add_new_docs_commands,
                                _check_compare_k_args, _check_new_docs_args, _compare_k,
                                _evaluate_held_out, _infer)
from .compile_cache import ENV as COMPILE_CACHE_ENV
from .errors import JaxTopicsError, ParameterError
from .options import MODEL_OPTIONS, SHARED_OPTIONS

if TYPE_CHECKING:
    from .corpus import Corpus

# Only the standard library and jaxtopics' stdlib-only modules load before main() runs: numpy
# and JAX load inside it with Ctrl-C held (_interrupt_held), so an interrupt at any moment from
# the start is the command's one line and status 130 (`import jaxtopics` itself stays light).

__all__ = ["main"]



def _registry() -> dict:
    """Model name -> estimator class (every facade class registers itself). The first call
    imports JAX, with Ctrl-C held until the import ends (``_interrupt_held``)."""
    with _interrupt_held():
        from .estimators import MODELS
    return MODELS


def _read_corpus(args: argparse.Namespace) -> Corpus:
    path = Path(args.input)
    fmt = _input_format(args)
    sentences = args.sentences or _registry()[args.model].needs_sentences
    if sentences and fmt == "ldac":
        raise JaxTopicsError("--sentences needs a text input (--format text or jsonl): LDA-C "
                             "counts have no sentence boundaries")
    if args.vocab and fmt != "ldac":
        raise JaxTopicsError(f"--vocab only applies to --format ldac (got --format {fmt})")
    if args.text_key is not None and fmt != "jsonl":
        raise JaxTopicsError(f"--text-key only applies to --format jsonl (got --format {fmt})")
    text_key = "text" if args.text_key is None else args.text_key
    labelled = _labelled(args, fmt)
    if args.coordinator:                  # a multi-process fit: this process's documents only
        from . import distributed
        if fmt == "ldac":
            return distributed.read_process_corpus(path, fmt, vocab=args.vocab)
        extra = {"text_key": text_key} if fmt == "jsonl" else {"labelled": labelled}
        return distributed.read_process_corpus(path, fmt, sentences=sentences, **extra)
    from .corpus import Corpus
    if fmt == "ldac":
        return Corpus.from_ldac(path, vocab=args.vocab)
    if fmt == "jsonl":
        return Corpus.from_jsonl(path, text_key=text_key, sentences=sentences)
    if labelled:
        return Corpus.from_text_file(path, labelled=True, sentences=sentences)
    return Corpus.from_text_file(path, sentences=sentences)


def _input_format(args: argparse.Namespace) -> str:
    """--format, with auto resolved from the input's extension."""
    if args.format != "auto":
        return args.format
    return {".ldac": "ldac", ".dat": "ldac", ".jsonl": "jsonl", ".json": "jsonl",
            ".ndjson": "jsonl"}.get(Path(args.input).suffix.lower(), "text")


def _same_settings(args: argparse.Namespace) -> dict:
    """The options every process of a multi-process run must share, as what they resolve to
    (an omitted option and its default written out are the same setting)."""
    settings = {"--" + k.replace("_", "-"): v for k, v in vars(args).items()
                if k not in _PER_PROCESS_ARGS}
    settings["--seed"] = 0 if args.seed is None else args.seed
    # with --coherence the processes sum the counts of these words: the same on every process
    settings["--top-words"] = args.top_words if args.coherence else "(any)"
    if args.command == "fit":
        settings["--format"] = _input_format(args)
        settings["--text-key"] = "text" if args.text_key is None else args.text_key
    if not getattr(args, "resume", False):     # a resumed chain brings its own parameters
        params = _estimator(args).params
        for opt in _all_options():
            if opt.arg in params._fields:
                settings[opt.flag] = getattr(params, opt.arg)
    return settings


def _labelled(args: argparse.Namespace, fmt: str) -> bool:
    """Text input carries label sets (``label1--label2<TAB>text``): --labelled, or a model that
    needs them (``needs_labels``). Only text input has them."""
    needs = getattr(_registry()[args.model], "needs_labels", False)
    if args.labelled and not needs:
        raise JaxTopicsError(f"--labelled does not apply to --model {args.model} (it reads no "
                             f"label sets)")
    labelled = args.labelled or needs
    if labelled and fmt != "text":
        raise JaxTopicsError(f"--labelled (label sets, read for --model {args.model}) needs text "
                             f"input with lines 'label1--label2<TAB>text' (--format text), got "
                             f"--format {fmt}")
    return labelled


def _estimator(args: argparse.Namespace):
    """The estimator of ``--model`` built from the options it declares; an option that belongs
    to another model is an error (never silently ignored)."""
    return _registry()[args.model](**_estimator_options(args))


def _estimator_options(args: argparse.Namespace) -> dict:
    """The constructor keywords of ``--model`` given on the command line (an option the command
    does not offer counts as not given); one that belongs to another model is an error."""
    cls = _registry()[args.model]
    own = {o.arg for o in cls.options} | {"alpha", "beta", "sampler"}
    kwargs = {}
    for opt in _all_options():
        value = getattr(args, opt.arg, None)
        if value is None:
            continue
        if opt.arg not in own:
            raise JaxTopicsError(f"{opt.flag} does not apply to --model {args.model}")
        if opt.arg == "seed_words":             # a file: {topic: [words]}
            from .seed_words import read_file
            value = read_file(value)
        kwargs[opt.arg] = value
    return kwargs


#: the fit arguments the command line sets under another name
_FIT_FLAGS = {"num_sweeps": "--sweeps", "eval_every": "--eval-every", "seed": "--seed",
              "checkpoint_every": "--checkpoint-every", "devices": "--devices"}


def _named_by_flags(message: str) -> str:
    """An error of the Python API as the command line says it: the parameter it starts with
    ("num_topics must be ...") and each ``name=value`` or ``name = value`` in it ("got
    sampler='sequential'") are named by their flags (--num-topics, --sampler=...); nothing
    else in it is touched (a word of the sentence, a value the user typed)."""
    flags = {**{o.arg: o.flag for o in _all_options()}, **_FIT_FLAGS}
    names = "|".join(sorted(flags, key=len, reverse=True))
    message = re.sub(rf"^({names})(?=[\s=])", lambda m: flags[m.group(1)], message)
    return re.sub(rf"(?<![\w'\"-])({names})(?==| = )", lambda m: flags[m.group(1)], message)


def _all_options() -> list:
    """The shared options and every model's own, each flag once."""
    seen, unique = set(), []
    for opt in SHARED_OPTIONS + sum(MODEL_OPTIONS.values(), ()):
        if opt.flag not in seen:
            seen.add(opt.flag)
            unique.append(opt)
    return unique


OUT_FILES = ("model.jtm", "topics.txt", "trace.csv", "doc_topics.csv", "trace.png", "topics.png")


def _prepare_out(out: Path) -> None:
    """Create the output directory and prove it writable before any fitting, so a bad --out
    costs nothing (the fit's model would otherwise be lost at the end, or at a checkpoint)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ParameterError(f"--out {out}: exists and is not a directory") from None
    except OSError as e:
        raise ParameterError(f"--out {out}: cannot create the directory ({e.strerror})") from None
    for name in OUT_FILES:
        if (out / name).is_dir():
            raise ParameterError(f"--out {out}: {out / name} is a directory, where the fit writes "
                                 f"a file")
    try:
        fd, probe = tempfile.mkstemp(dir=out, prefix=".jaxtopics-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ParameterError(f"--out {out}: cannot write there ({e.strerror})") from None


def _check_args(args: argparse.Namespace) -> None:
    """Everything that can be checked before jax starts, an input is read or --out is made."""
    from .validate import check_positive_int
    if args.command in ("infer", "evaluate"):
        _check_new_docs_args(args)
        return
    if args.command == "compare-k":
        _check_compare_k_args(args)
        return
    if args.top_words < 1:
        raise ParameterError(f"--top-words must be >= 1, got {args.top_words}")
    if args.command == "show":
        if (args.html is None) != (args.input is None):
            raise ParameterError("--html and --input go together: the page shows the model on "
                                 "its training corpus (--input, as given to fit)")
        if args.html is not None and not str(args.html).strip():
            raise ParameterError("--html must name a file, got an empty string")
        return
    if args.coherence and args.top_words < 2:
        raise ParameterError(f"--coherence scores pairs of top words: --top-words must be >= 2, "
                             f"got {args.top_words}")
    if args.model is None:
        args.model = _saved_model(args) or "lda"
    devices = getattr(args, "devices", None)
    if devices is not None and devices != "auto":
        check_positive_int(devices, "--devices")
    if args.sweeps < 0:
        raise ParameterError(f"--sweeps must be >= 0, got {args.sweeps}")
    if args.eval_every < 1:
        raise ParameterError(f"--eval-every must be >= 1, got {args.eval_every}")
    if args.checkpoint_every is not None:
        if args.checkpoint_every < 1:
            raise ParameterError(f"--checkpoint-every must be >= 1, got {args.checkpoint_every}")
        if not args.out:
            raise ParameterError("--checkpoint-every needs --out (where the checkpoint goes)")
    if args.out is not None and not str(args.out).strip():
        raise ParameterError("--out must name a directory, got an empty string")
    cls = _registry()[args.model]
    if args.sentences and not cls.needs_sentences:
        raise ParameterError(f"--sentences does not apply to --model {args.model} (it uses no "
                             f"sentence boundaries)")
    if args.command == "demo" and args.max_docs is not None:
        check_positive_int(args.max_docs, "--max-docs")
    if args.command == "demo" and cls.needs_sentences:
        raise ParameterError(f"the demo corpus (docstrings) has no sentence boundaries, which "
                             f"--model {args.model} needs: use `jaxtopics fit` on a "
                             f"text file (e.g. ../shared/data/lee/lee_background.cor)")
    if args.command == "demo" and getattr(cls, "needs_labels", False):
        raise ParameterError(f"the demo corpus (docstrings) has no label sets, which --model "
                             f"{args.model} needs: use `jaxtopics fit --model {args.model}` on a "
                             f"text file of 'label1--label2<TAB>text' lines")
    if getattr(args, "resume", False):
        given = [o.flag for o in _all_options() if getattr(args, o.arg) is not None]
        if args.seed is not None:
            given.append("--seed")
        if given:
            raise ParameterError(f"--resume continues the chain in model.jtm with its own "
                                 f"parameters and seed; drop {', '.join(given)}")
    coordinator = getattr(args, "coordinator", None)
    multi = (getattr(args, "num_processes", None), getattr(args, "process_id", None))
    if coordinator is None and any(v is not None for v in multi):
        raise ParameterError("--num-processes / --process-id need --coordinator HOST:PORT")
    if coordinator is not None:
        host, _, port = coordinator.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ParameterError(f"--coordinator must be HOST:PORT, got {coordinator!r}")
        if multi[0] is None or multi[1] is None:
            raise ParameterError("--coordinator needs --num-processes and --process-id")
        check_positive_int(multi[0], "--num-processes")
        if not 0 <= multi[1] < multi[0]:
            raise ParameterError(f"--process-id must be in [0, {multi[0]}), got {multi[1]}")


def _saved_meta(args: argparse.Namespace) -> dict:
    """The metadata of ``--out``/model.jtm when --resume continues it, read without its arrays
    ({} otherwise; a file that cannot be read is reported where the chain is loaded)."""
    path = Path(args.out) / "model.jtm" if getattr(args, "resume", False) and args.out else None
    if path is None or not path.is_file():
        return {}
    from .io import load_model_file
    try:
        return load_model_file(path, arrays=False)[1]
    except (OSError, JaxTopicsError):
        return {}


def _saved_model(args: argparse.Namespace) -> str | None:
    """The model name saved in ``--out``/model.jtm when --resume continues it, else None."""
    name = _saved_meta(args).get("model")
    return name if name in _registry() else None


#: "reader_gone": set once the reader of stdout has left; the run still finishes, with status 141
_report_state: dict[str, bool] = {}


def _print_while_read(*args, **kwargs) -> None:
    """``print`` and flush; once the reader of stdout has gone (``jaxtopics fit ... | head``),
    the rest of the output goes to /dev/null, so the fit still finishes and writes --out."""
    try:
        builtins.print(*args, **kwargs)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _report_state["reader_gone"] = True
    except OSError as e:           # a full disk under `> report.txt`: name what could not be written
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror or str(e), "standard output") from None


def _fit_and_report(corpus: Corpus, args: argparse.Namespace, out: Path | None) -> int:
    import jax
    import numpy as np

    from .io import atomic_write_bytes

    lead = jax.process_index() == 0            # a multi-process run prints and writes on process 0
    print = _print_while_read if lead else (lambda *a, **k: None)   # noqa: A001
    resuming = getattr(args, "resume", False)
    devices = args.devices if args.devices is not None or resuming else "auto"
    if jax.process_count() > 1:               # shards = every process's devices
        devices = jax.process_count() * len(jax.local_devices())
    print(f"corpus: {corpus.num_docs} documents, {corpus.num_tokens} tokens, "
          f"{corpus.num_words} distinct words" + (f" (process 0 of {jax.process_count()})"
                                                   if jax.process_count() > 1 else ""))

    def local_setup():
        """What each process does on its own (no collectives), before the fit."""
        if resuming:
            from .estimators import load
            if out is None or not (out / "model.jtm").is_file():
                raise JaxTopicsError(f"--resume: there is no "
                                     f"{out / 'model.jtm' if out else 'model file'} to continue")
            found = load(out / "model.jtm")
            if found.model != args.model:
                raise JaxTopicsError(f"--resume: {out / 'model.jtm'} holds a {found.model!r} "
                                     f"model, not --model {args.model}")
        else:
            found = _estimator(args)
        if out is not None:
            _prepare_out(out)
        return found

    from .distributed import on_every_process
    est = on_every_process(local_setup, "load the model or make --out")   # none left waiting
    model = est
    from .estimators import MODELS, params_repr, resolve_devices
    shown = getattr(est, "shards", None) if devices is None else devices   # resume: saved layout
    shards = resolve_devices(MODELS[args.model].module, est.params, corpus, shown)
    where = (f"{shards} {jax.default_backend()} device{'s' if shards > 1 else ''}" if shards
             else jax.default_backend())
    if jax.process_count() > 1:
        where += f" over {jax.process_count()} processes"
    shown_as = repr(est)
    if resuming:             # the estimator's settings, as a new fit shows them, and the chain's point
        shown_as = (f"{MODELS[args.model].__name__}({params_repr(est.params)}), resumed after "
                    f"{est.sweeps_done} sweeps of seed {est.seed}")
    print(f"model: {shown_as}  (jax {jax.__version__}, {where})")
    ckpt = out / "model.jtm" if out is not None and args.checkpoint_every else None
    t0 = time.perf_counter()
    run = dict(num_sweeps=args.sweeps, eval_every=args.eval_every,
               progress=False if args.no_progress else None,
               checkpoint_every=args.checkpoint_every, checkpoint_path=ckpt, devices=devices)
    if out is not None and lead and not args.no_plots:
        from .cli_outputs import import_matplotlib_early
        import_matplotlib_early()            # while the sweeps run: ~0.3 s less after them
    before = 0
    if resuming:
        before = len(model.trace)
        model = model.resume(corpus, **run)
    else:
        model = est.fit(corpus, seed=0 if args.seed is None else args.seed, **run)
    elapsed = time.perf_counter() - t0
    print("\nlog-likelihood trace (log p(w, z) per token):")
    for p in model.trace:
        learned = "".join(f"   {name} " + (f"{v:.4g}" if not isinstance(v, tuple) else
                                                f"sum {sum(v):.4g}")
                          for name, v in (p.priors or {}).items())
        print(f"  sweep {p.sweep:6d}  {p.log_joint_per_token:9.4f}   "
              f"changed {p.changed_fraction:6.1%}   {p.seconds:7.1f}s{learned}")
    # throughput excludes the first chunk, which includes compilation
    if len(model.trace) - before >= 2:       # this run's evals only
        first, last = model.trace[before], model.trace[-1]
        rate = (last.sweep - first.sweep) * corpus.num_tokens / max(last.seconds - first.seconds, 1e-9)
        print(f"\nthroughput: {rate / 1e6:.2f} M tokens/s (after the first eval, which includes compilation)")
    print(f"total: {args.sweeps} sweeps in {elapsed:.1f}s\n")
    print(model.summary(n=args.top_words))
    if out is not None:
        model.save(out / "model.jtm")        # collective; process 0 writes; before coherence,
                                             # so a refused reference word loses no fit
    coherence = None
    if args.coherence:                       # collective: the processes' counts are summed
        try:
            coherence = model.coherence(corpus, args.coherence, top_n=args.top_words)
        except JaxTopicsError as e:          # the same on every process (after their sum)
            print(f"\njaxtopics: coherence not computed: {e}", file=sys.stderr)
    if coherence is not None:
        print("\n" + _coherence_line(coherence, args, "the training corpus"))
    if out is not None:
        if not lead:
            return 0
        from .fitted import _empty_topics
        top_ids = [[] if empty else ids     # a topic / cluster that holds nothing: no words
                   for empty, ids in zip(_empty_topics(model), model.top_word_ids(args.top_words))]
        if coherence is None:                # no stale scores of an earlier run beside the model
            (out / "coherence.csv").unlink(missing_ok=True)
        else:
            table = io.StringIO(newline="")
            w = csv.writer(table)
            w.writerow(["topic", args.coherence, "top_words"])
            w.writerows([t, "" if np.isnan(c) else repr(float(c)),
                         " ".join(model.vocab[i] for i in ids)]
                        for t, (c, ids) in enumerate(zip(coherence, top_ids)))
            atomic_write_bytes(out / "coherence.csv", table.getvalue().encode("utf-8"))
        topics = "".join(f"{t}\t" + " ".join(model.vocab[i] for i in ids) + "\n"
                         for t, ids in enumerate(top_ids))
        atomic_write_bytes(out / "topics.txt", topics.encode("utf-8"))
        table = io.StringIO(newline="")
        w = csv.writer(table)
        w.writerows(_trace_table(model.trace))
        atomic_write_bytes(out / "trace.csv", table.getvalue().encode("utf-8"))
        from .cli_outputs import remove_stale_pictures, write_doc_topics, write_pictures
        write_doc_topics(model, corpus, out / "doc_topics.csv")
        pictures: list[str] = []
        if args.no_plots:
            remove_stale_pictures(out)
        else:
            try:
                pictures = write_pictures(model, out, args.top_words)
            except ImportError as e:         # no matplotlib: the pictures are left out, one note
                remove_stale_pictures(out)
                print(f"jaxtopics: note: trace.png and topics.png not drawn ({e}; or --no-plots)",
                      file=sys.stderr)
        print(f"\nwrote {out / 'model.jtm'}, topics.txt, trace.csv, doc_topics.csv"
              + (", coherence.csv" if coherence is not None else "")
              + "".join(f", {name}" for name in pictures))
    return 0


def _trace_table(trace: list) -> list[list]:
    """trace.csv's rows: sweep, log_joint_per_token, changed_fraction, seconds, then one column
    per prior the chain learns or samples (``alpha``, or ``alpha_0`` .. ``alpha_K-1`` for an
    asymmetric one; empty where a point has none)."""
    sizes: dict[str, int] = {}
    for p in trace:
        for name, value in (p.priors or {}).items():
            sizes.setdefault(name, len(value) if isinstance(value, tuple) else 0)
    header = ["sweep", "log_joint_per_token", "changed_fraction", "seconds"]
    for name, size in sizes.items():
        header += [name] if size == 0 else [f"{name}_{i}" for i in range(size)]
    rows = [header]
    for p in trace:
        row = list(p[:4])
        for name, size in sizes.items():
            value = (p.priors or {}).get(name)
            if value is None:
                row += [""] * max(size, 1)
            else:
                row += list(value) if isinstance(value, tuple) else [value]
        rows.append(row)
    return rows


def _coherence_line(coherence, args: argparse.Namespace, corpus: str) -> str:
    """The one line that reports the coherence of the topics (``--coherence``) on `corpus`."""
    import numpy as np

    from .coherence import MEASURES
    scored = coherence[~np.isnan(coherence)]
    window = MEASURES[args.coherence]
    return (f"coherence {args.coherence} of the top {args.top_words} words "
            f"({'documents' if window is None else f'sliding windows of {window} tokens'} of "
            f"{corpus}): " + (f"mean {scored.mean():.4f} over {scored.size} topics "
                              f"(min {scored.min():.4f}, max {scored.max():.4f})"
                              if scored.size else "no topic holds any token"))


def _write_html(model, args: argparse.Namespace) -> None:
    """`show --html FILE`: the pyLDAvis page of `model` on its training corpus (--input, read as
    `fit` reads it and checked by fingerprint), written atomically."""
    from .interop import optional_import
    from .io import atomic_path
    pyldavis = optional_import("pyLDAvis", "jaxtopics show --html")
    args.model, args.sentences, args.labelled, args.coordinator = model.model, False, False, None
    kwargs = model.to_pyldavis(_read_corpus(args))
    page = pyldavis.prepare(**kwargs, n_jobs=1)
    with atomic_path(args.html) as tmp:
        pyldavis.save_html(page, str(tmp))
    print(f"jaxtopics: wrote {args.html}", file=sys.stderr)


# -- infer, evaluate: new documents under a saved model -----------------------------------------

def _load_model(path: str):
    """The model saved at `path`: a model file, or a directory holding ``model.jtm`` (the --out
    of a fit)."""
    from .estimators import load
    if not str(path).strip():
        raise ParameterError("the model path is empty: name a model file (model.jtm) or the --out "
                             "directory of a fit")
    file = Path(path)
    if file.is_dir():
        file = file / "model.jtm"
        if not file.is_file():
            raise JaxTopicsError(f"{path}: a directory without a model.jtm (name a model file, "
                                 f"or the --out directory of a fit)")
    return load(file)


def _add_corpus_input(p: argparse.ArgumentParser) -> None:
    """The corpus file of `fit` and `compare-k` (read by ``_read_corpus``)."""
    p.add_argument("--input", "-i", required=True, help="corpus file")
    p.add_argument("--format", choices=("auto", "ldac", "text", "jsonl"), default="auto",
                   help="ldac: LDA-C counts (+ --vocab); text: one document per line; "
                        "jsonl: one JSON object per line (--text-key)")
    p.add_argument("--vocab", help="vocabulary file for LDA-C (one word per line)")
    p.add_argument("--text-key", default=None, help="jsonl: the key of the text (default: text)")


def _add_model_args(p: argparse.ArgumentParser, *, sweeps: int, fit: bool) -> None:
    """The options of a fit; `fit`: the ``fit`` command's (a file input: --resume and several
    processes), else the demo's (the embedded corpus, one process)."""
    p.add_argument("--model", choices=sorted(MODEL_OPTIONS), default=None,
                   help="default: lda; with --resume, the model saved in --out" if fit
                   else "default: lda")
    for opt in _all_options():
        p.add_argument(opt.flag, dest=opt.arg, default=None, help=opt.help,
                       **opt.parser_arguments())
    p.add_argument("--sentences", action="store_true",
                   help="keep sentence boundaries of text input (slda, which implies it)")
    p.add_argument("--labelled", action="store_true",
                   help="text input lines are 'label1--label2<TAB>text' (label sets; implied by "
                        "models that need them, e.g. dpmrm)")
    p.add_argument("--sweeps", type=int, default=sweeps)
    p.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--top-words", type=int, default=10)
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="save OUT/model.jtm every this many sweeps (resumable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true",
                   help="do not draw OUT/trace.png and OUT/topics.png (they need matplotlib: "
                        "pip install \"jaxtopics[viz]\")")
    from .coherence import MEASURES
    p.add_argument("--coherence", choices=list(MEASURES), default=None,
                   help="after the fit, score each topic's --top-words words on the training "
                        "corpus with this coherence measure (printed; OUT/coherence.csv)")
    if fit:
        _add_process_args(p)
    p.add_argument("--devices", type=_devices_arg, default=None,
                   help="shard the documents over this many devices (the parallel sampler of "
                        "every model); on a CPU the process is split into "
                        "this many XLA CPU devices. auto (default): every GPU, or one XLA "
                        "device per CPU core, when the model's kernel can be sharded; else one"
                        + (". --resume continues on the saved run's devices unless told otherwise"
                           if fit else ""))


def _add_process_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="multi-process fit: address of process 0 (jax.distributed.initialize); "
                        "each process reads its own documents, process 0 writes the outputs")
    p.add_argument("--num-processes", type=int, default=None, help="multi-process fit: processes")
    p.add_argument("--process-id", type=int, default=None, help="multi-process fit: this process")


def _devices_arg(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer or 'auto', got {text!r}") from None


def _cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                       # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _cpu_devices(args: argparse.Namespace) -> int:
    """XLA CPU devices to split this process into (1: leave the CPU whole). ``--devices auto``
    splits it one per core when the model's kernel can be sharded (chosen before jax starts)."""
    devices = getattr(args, "devices", None)
    if devices is None and getattr(args, "resume", False):     # the saved chain's own layout
        try:
            shards = int(_saved_meta(args).get("shards", 1))
            return max(1, shards // (getattr(args, "num_processes", None) or 1))   # per process
        except (TypeError, ValueError):
            return 1                             # the resume itself reports a bad file
    if devices not in (None, "auto"):
        return devices
    from .distributed import shard_refusal
    from .models.base import kernel_module, sharding
    module = _registry()[args.model].module
    if not getattr(args, "resume", False):
        module = kernel_module(module, _estimator(args).params)
    if sharding(module) is None:
        return 1
    if not getattr(args, "resume", False):       # a resumed chain brings its own params
        if shard_refusal(module, _estimator(args).params):
            return 1
    return _cpu_cores()


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line, as every other error of the command line
    (argparse prints the whole usage first); its commands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"jaxtopics: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jaxtopics", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", help="fit a model on a corpus file")
    _add_corpus_input(fit)
    fit.add_argument("--out", "-o", required=True, help="output directory")
    fit.add_argument("--resume", action="store_true",
                     help="continue the chain saved in OUT/model.jtm for --sweeps more sweeps "
                          "(same corpus; the same process x device layout as the saved run)")
    _add_model_args(fit, sweeps=500, fit=True)
    demo = sub.add_parser("demo", help="fit LDA on the embedded Python-docs corpus (no download)")
    demo.add_argument("--out", "-o", default=None, help="optional output directory")
    demo.add_argument("--max-docs", type=int, default=None, help="use only this many documents")
    _add_model_args(demo, sweeps=300, fit=False)
    show = sub.add_parser("show", help="print the summary of a saved model")
    show.add_argument("path", help="a model file (model.jtm) or the --out directory of a fit")
    show.add_argument("--top-words", type=int, default=10)
    show.add_argument("--html", default=None, metavar="FILE",
                      help="also write a pyLDAvis page of the model (needs --input, the training "
                           "corpus, and pyLDAvis: pip install \"jaxtopics[interop]\")")
    show.add_argument("--input", "-i", default=None, help="--html: the training corpus file")
    show.add_argument("--format", choices=("auto", "ldac", "text", "jsonl"), default="auto",
                      help="--html: the corpus format, as fit's")
    show.add_argument("--vocab", help="--html: vocabulary file for LDA-C")
    show.add_argument("--text-key", default=None, help="--html: jsonl key of the text")
    _add_new_docs_commands(sub)
    _add_compare_k_command(sub)
    for name, command in sub.choices.items():
        if name != "show":
            command.add_argument(
                "--compile-cache", default=None, metavar="DIR|off",
                help="keep compiled programs in DIR so that the next run skips compiling "
                     f"(default ${COMPILE_CACHE_ENV} or ~/.cache/jaxtopics/xla; 'off': none)")
    parser.commands = sub.choices          # command name -> its parser (for its own errors)
    return parser


#: options that may differ between the processes of a multi-process run: paths (each host may
#: have its own copy of the input and its own --out), what only process 0 prints, and the
#: process's own id; every other option must be the same on all (checked after they meet)
_PER_PROCESS_ARGS = frozenset({"input", "vocab", "out", "top_words", "no_progress", "no_plots",
                               "process_id",
                               "devices", "compile_cache"})   # --devices: the devices per process are compared


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning on the command line: one line naming its kind, no source location."""
    return f"jaxtopics: warning: {category.__name__}: {message}\n"


@contextlib.contextmanager
def _interrupt_held():
    """Ctrl-C inside the block takes effect when it ends. For loading native libraries (JAX):
    a KeyboardInterrupt raised inside an extension module's initialisation aborts the process
    (std::terminate) instead of unwinding to our handler."""
    handler = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread()
            or handler in (signal.SIG_IGN, None)):
        yield
        return
    pressed = []
    signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
    if pressed:
        raise KeyboardInterrupt


def _interrupt_soon() -> None:
    time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)


@contextlib.contextmanager
def _interrupt_never_lost():
    """A Ctrl-C whose KeyboardInterrupt lands in a garbage-collector callback (JAX runs one after
    every collection) is discarded by Python ("Exception ignored in ..."), and the command ran
    on. Inside the block such a discarded interrupt is sent again a moment later, from a thread
    started without waiting for it (a signal that arrived while this hook ran would be handled,
    and discarded, inside it), so it ends the command as any other Ctrl-C does."""
    hook = sys.unraisablehook

    def redeliver(unraisable) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            hook(unraisable)
            return
        try:
            _thread.start_new_thread(_interrupt_soon, ())
        except KeyboardInterrupt:            # an earlier re-sending reached this hook: once more
            _thread.start_new_thread(_interrupt_soon, ())
    sys.unraisablehook = redeliver
    try:
        yield
    finally:
        sys.unraisablehook = hook


def main(argv: list[str] | None = None) -> int:
    with _interrupt_never_lost():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        with _interrupt_held():          # numpy and the modules built on it (not JAX yet)
            from . import coherence, corpus, validate  # noqa: F401
        parser = build_parser()          # without JAX (jaxtopics.options)
        args, unknown = parser.parse_known_args(argv)
    except KeyboardInterrupt:
        print("\njaxtopics: interrupted", file=sys.stderr)
        return 130
    if unknown:      # named by the command's own usage (`jaxtopics demo --resume`), not the top's
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    formatted = warnings.formatwarning
    warnings.formatwarning = _format_warning
    try:
        status = _run(args)
    except Exception:
        if not (getattr(args, "coordinator", None) and argv is None):
            raise
        # an error _run does not name, in a process of a multi-process run: its traceback, then
        # leave at once (below), not in jax.distributed's shutdown barrier, where it would wait
        # for the other processes until the heartbeat timeout (100 s)
        traceback.print_exc()
        status = 1
    finally:
        warnings.formatwarning = formatted
    if ((status not in (0, 141) and getattr(args, "coordinator", None))    # 141: a finished run
            or (status == 130 and argv is None)):
        # A process of a multi-process run that stops early leaves at once: a normal exit
        # would wait in jax.distributed's shutdown barrier for processes that may themselves
        # be waiting for it in a collective (JAX's heartbeat then ends those). So does a command
        # ended by Ctrl-C (its checkpoint is whole): the interpreter's teardown after an
        # interrupt in the middle of an XLA compile could segfault (5 of 16 interrupts 2.0-2.35 s
        # into a fit). Only as the command (argv None): main(argv) called from Python returns.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
        os._exit(status)
    if argv is None and not getattr(args, "coordinator", None):
        _leave(status)
    return status


def _leave(status: int) -> None:
    """End the command now that its work is done and written: pending JAX effects awaited,
    logging and the streams flushed, then ``os._exit``, without the interpreter's teardown
    (freeing every module and JAX's backends: ~0.25 s after a fit, a twentieth of a cached
    one). Not in a multi-process run, whose processes leave together through
    jax.distributed's shutdown barrier."""
    import logging
    if "jax" in sys.modules:
        try:
            sys.modules["jax"].effects_barrier()
        except Exception:                 # pragma: no cover - nothing left to wait for
            pass
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:       # the report still buffered when its reader left (`| true`)
            if stream is sys.stdout and status == 0:
                status = 141          # 128 + SIGPIPE, as `show` and a shell say
        except (OSError, ValueError):
            pass
    os._exit(status)


def _native_stdout_to_stderr() -> None:
    """Keep stdout for the report: the collectives' native library (gloo) prints a line to the
    process's stdout for every group of processes it connects; from here on those lines go to
    stderr, and Python's ``print`` to the original stdout."""
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
    except (OSError, ValueError):      # streams without a file (an embedding host's): leave them
        return
    sys.stdout.flush()
    report = os.dup(out)
    os.dup2(err, out)
    sys.stdout = open(report, "w", encoding=sys.stdout.encoding, errors="backslashreplace",
                      buffering=1 if os.isatty(report) else -1)


def _run(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):     # a word with a lone surrogate must not crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    _report_state.clear()
    try:
        _check_args(args)
        with _interrupt_held():          # JAX's native libraries (every command needs them)
            import jax
        if args.command in ("fit", "demo") and _cpu_devices(args) > 1:
            # before the first computation starts the backend; concerns the CPU platform only
            jax.config.update("jax_num_cpu_devices", _cpu_devices(args))
        if args.command != "show":
            from .compile_cache import use_compilation_cache
            use_compilation_cache(args.compile_cache)
        if getattr(args, "coordinator", None):
            from . import distributed
            _native_stdout_to_stderr()
            print(f"jaxtopics: process {args.process_id} of {args.num_processes}: joining the "
                  f"others at {args.coordinator} ...", file=sys.stderr, flush=True)
            try:
                distributed.initialize(args.coordinator, args.num_processes, args.process_id)
            except (RuntimeError, ValueError) as e:
                raise JaxTopicsError(f"--coordinator {args.coordinator}: jax.distributed could "
                                     f"not start ({str(e).splitlines()[0] if str(e) else e!r})") from None
            # before the first collective: processes started with different options would
            # wait for each other forever or abort inside one
            # --resume first: a resumed chain's parameters come from its file, a new one's from
            # the options, so with --resume on some processes only every parameter would differ
            distributed.require_same_settings({"--resume": getattr(args, "resume", False)},
                                              where=" on the command line")
            settings = distributed.on_every_process(lambda: _same_settings(args),
                                                    "resolve their options")
            distributed.require_same_settings(settings, where=" on the command line")
        if args.command in ("fit", "demo"):
            if args.command == "fit":
                status = _fit_and_report(_read_corpus(args), args, Path(args.out))
            else:
                from .datasets import demo_corpus, stdlib_corpus
                corpus = (demo_corpus() if args.max_docs is None
                          else stdlib_corpus(max_docs=args.max_docs))
                _print_while_read("demo: docstrings of the Python standard library + pydoc help topics")
                status = _fit_and_report(corpus, args, Path(args.out) if args.out else None)
            # the report was cut short (its reader left): 128 + SIGPIPE, as `show` and a shell say
            return 141 if status == 0 and _report_state.get("reader_gone") else status
        if args.command == "show":
            model = _load_model(args.path)
            if args.html is not None:
                _write_html(model, args)
            _print_while_read(model.summary(n=args.top_words))
            return 141 if _report_state.get("reader_gone") else 0
        if args.command == "compare-k":
            status = _compare_k(args)
            return 141 if status == 0 and _report_state.get("reader_gone") else status
        if args.command in ("infer", "evaluate"):
            model = _load_model(args.model_path)
            status = (_infer(model, args) if args.command == "infer"
                      else _evaluate_held_out(model, args))
            return 141 if status == 0 and _report_state.get("reader_gone") else status
    except JaxTopicsError as e:
        print(f"jaxtopics: error: {_named_by_flags(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\njaxtopics: interrupted{_checkpoint_hint(args)}", file=sys.stderr)
        return 130                              # 128 + SIGINT, as a shell reports it
    except ImportError as e:   # an optional package (show --html: pyLDAvis): how to install it
        if "jaxtopics[" not in str(e):
            raise
        print(f"jaxtopics: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # `jaxtopics show ... | head`: the reader left; exit quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit flush
        return 141                              # 128 + SIGPIPE, as a shell reports it
    except OSError as e:  # a file that cannot be read or written: one line naming it
        where = f"{e.filename}: " if e.filename is not None else ""
        print(f"jaxtopics: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except Exception as e:    # after OSError: this one re-raises what it does not handle
        # Settings that cannot fit are refused before they are allocated (jaxtopics.memory);
        # this is the last resort where that estimate was short of what a run needed.
        errors = sys.modules.get("jax.errors")      # loaded by whatever ran out of memory
        runtime = errors is not None and isinstance(e, errors.JaxRuntimeError)
        if runtime and getattr(args, "coordinator", None) and not _out_of_memory(e):
            # a collective failed: another process of the run stopped (killed, out of memory,
            # its host gone); main() then exits at once, not in jax.distributed's shutdown
            # barrier waiting for that process until the heartbeat timeout
            print(f"jaxtopics: error: process {args.process_id}: the sweeps failed "
                  f"({_first_line(e)}): another process of the run may have stopped"
                  f"{_checkpoint_hint(args)}",
                  file=sys.stderr)
            return 2
        if isinstance(e, MemoryError):
            where = "the host ran out of memory"
        elif runtime and _out_of_memory(e):
            where = "the device ran out of memory"
        else:
            raise
        print(f"jaxtopics: error: {where} ({_first_line(e)}); the "
              "count tables grow with the number of topics (clusters, pseudo-documents) times the "
              "words and the documents: lower it or use a smaller vocabulary (files already in "
              "--out are complete: each is written whole or not at all)", file=sys.stderr)
        return 2
    return 1


def _checkpoint_hint(args: argparse.Namespace) -> str:
    """'; the last checkpoint is OUT/model.jtm (continue with --resume)' where a run that stopped
    early left one, else ''."""
    ckpt = Path(args.out) / "model.jtm" if getattr(args, "checkpoint_every", None) else None
    return (f"; the last checkpoint is {ckpt} (continue with --resume)"
            if ckpt is not None and ckpt.is_file() else "")


def _out_of_memory(e: BaseException) -> bool:
    return "RESOURCE_EXHAUSTED" in str(e) or "Out of memory" in str(e)


def _first_line(e: BaseException) -> str:
    return (str(e) or type(e).__name__).splitlines()[0]


if __name__ == "__main__":
    # `python -m jaxtopics.cli`: the modules that import jaxtopics.cli (cli_new_documents) get
    # this module, not a second copy whose state (_report_state) the command would not read.
    # Only when sys.modules holds this very module (runpy.run_module without alter_sys runs it
    # in a temporary module that sys.modules does not hold)
    running = sys.modules.get(__name__)
    if running is not None and running.__dict__ is globals():
        sys.modules.setdefault("jaxtopics.cli", running)
    sys.exit(main())
