"""The ``jaxtopics`` commands about new documents and model comparison: ``infer``, ``evaluate``,
``compare-k`` (their checks, runs and parsers). ``jaxtopics.cli`` imports this module at load
time, so the helpers it shares with the other commands (``_registry``, ``_read_corpus``, ...)
are imported from ``.cli`` inside the functions, at call time; like ``jaxtopics.cli``, this
module loads only the standard library when imported.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import CorpusError, JaxTopicsError, ParameterError
from .options import MODEL_OPTIONS, SHARED_OPTIONS

if TYPE_CHECKING:
    from .corpus import Corpus


def _docs_flag(args: argparse.Namespace) -> str:
    return "--input" if args.command == "infer" else "--held-out"


@contextlib.contextmanager
def _about(flag: str, path, kinds: tuple = (OSError, JaxTopicsError)):
    """Errors of `kinds` raised inside, re-raised naming the flag and its path (``--out
    x.csv: No such file or directory``), unless they name the flag already."""
    from .errors import FormatError
    where = f"{flag} {path}"
    try:
        yield
    except kinds as e:
        if str(e).startswith(flag):
            raise
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror or str(e), where) from None
        if isinstance(e, FormatError):
            raise FormatError(e.message, path=where if e.path is None or e.path == str(path)
                              else f"{where}: {e.path}", line=e.line) from None
        text = str(e)
        try:
            renamed = type(e)(f"{flag} {text}" if text.startswith(str(path)) else f"{where}: {text}")
        except TypeError:            # pragma: no cover - an error type with other arguments
            raise e from None
        raise renamed from None


def _check_new_docs_args(args: argparse.Namespace) -> None:
    """What `infer` and `evaluate` can check before JAX starts or a file is read."""
    if args.command == "infer":
        if not str(args.out).strip():
            raise ParameterError("--out must name a CSV file, got an empty string")
        if Path(args.out).is_dir():
            raise ParameterError(f"--out {args.out}: is a directory; name the CSV file to write "
                                 f"(e.g. {Path(args.out) / 'theta.csv'})")
        if args.sweeps < 1:
            raise ParameterError(f"--sweeps must be >= 1, got {args.sweeps}")
        return
    for flag, value in (("--sweeps", args.sweeps), ("--particles", args.particles)):
        if value is not None and value < 1:
            raise ParameterError(f"{flag} must be >= 1, got {value}")
    if args.top_words < 1:
        raise ParameterError(f"--top-words must be >= 1, got {args.top_words}")
    if args.coherence and args.top_words < 2:
        raise ParameterError(f"--coherence scores pairs of top words: --top-words must be >= 2, "
                             f"got {args.top_words}")


def _new_documents(args: argparse.Namespace, model):
    """The documents of --input (infer) or --held-out (evaluate), as ``fit`` reads its input:
    text and JSON lines are raw texts (a list of str), which ``transform`` and
    ``log_likelihood`` tokenise as the model's training texts were; LDA-C counts are a Corpus,
    whose words are matched to the model's by string. A model that needs label sets (dpmrm)
    reads ``label1--label2<TAB>text`` lines into a Corpus carrying them."""
    from . import io as jio
    from .cli import _input_format, _registry
    from .corpus import Corpus, _require_documents
    path, fmt, flag = Path(args.input), _input_format(args), _docs_flag(args)
    cls = _registry()[model.model]
    needs_labels = getattr(cls, "needs_labels", False)
    if args.vocab and fmt != "ldac":
        raise JaxTopicsError(f"--vocab only applies to --format ldac (got --format {fmt})")
    if args.text_key is not None and fmt != "jsonl":
        raise JaxTopicsError(f"--text-key only applies to --format jsonl (got --format {fmt})")
    if needs_labels and fmt != "text":
        raise JaxTopicsError(f"the {model.model} model reads a label set with every document: "
                             f"{flag} needs text lines 'label1--label2<TAB>text' (--format text), "
                             f"got --format {fmt}")
    if fmt == "ldac":
        if cls.needs_sentences:
            raise JaxTopicsError(f"the {model.model} model needs sentence boundaries, which LDA-C "
                                 f"counts do not have: give {flag} as text (--format text or jsonl)")
        return Corpus.from_ldac(path, vocab=args.vocab)
    if needs_labels:
        label_sets, texts = jio.read_labelled_text_lines(path)
    elif fmt == "jsonl":
        texts = jio.read_jsonl(path, text_key="text" if args.text_key is None else args.text_key)[0]
    else:
        texts = jio.read_text_lines(path)
    _require_documents(path, texts)
    if model.text_options is None:
        raise JaxTopicsError(f"{args.model_path}: the model was fitted on LDA-C counts, not on "
                             f"texts, so it does not know how to tokenise text: give {flag} as "
                             f"LDA-C counts (--format ldac --vocab FILE)")
    if needs_labels:
        return _token_corpus(model, texts, labels=label_sets, sentences=cls.needs_sentences)
    return texts


def _token_corpus(model, texts: list[str], labels=None, sentences: bool = False) -> Corpus:
    """`texts` tokenised as the model's training texts were, as a Corpus of its own vocabulary
    (matched to the model's by word wherever it is used)."""
    from .corpus import Corpus, split_sentences
    options = model.text_options
    docs = ([options.tokenize(split_sentences(t)) for t in texts] if sentences
            else options.tokenize(texts))
    return Corpus.from_token_lists(docs, sentences=sentences, labels=labels)


def _no_known_word(args: argparse.Namespace, info, what: str) -> JaxTopicsError:
    """The error of new documents none of whose tokens the model knows."""
    from .cli import _input_format
    where = f"{_docs_flag(args)} {args.input}"
    total = info.dropped_tokens + info.num_tokens
    if total == 0:
        return JaxTopicsError(f"{where}: its {info.num_docs} document(s) hold no token (after the "
                              f"tokenisation of the model's training texts): {what}")
    hint = (" (LDA-C counts without --vocab name their words by their ids: give the vocabulary "
            "file)" if _input_format(args) == "ldac" and not args.vocab else "")
    return JaxTopicsError(f"{where}: none of its {total} tokens is a word the model knows (e.g. "
                          f"{', '.join(map(repr, info.unknown_words[:3]))}){hint}: {what}")


@contextlib.contextmanager
def _warnings_kept(caught: list):
    """Warnings inside the block are kept in `caught` (shown with ``_show_warnings`` once the
    result is known to be good: an error is the command's only line)."""
    with warnings.catch_warnings(record=True) as got:
        yield
    caught.extend(got)


def _show_warnings(caught: list) -> None:
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _infer(model, args: argparse.Namespace) -> int:
    import numpy as np

    from .cli import _print_while_read
    from .model_files import _check_writable_file
    from .io import atomic_write_bytes
    with _about("--input", args.input):
        docs = _new_documents(args, model)
    with _about("--out", args.out):
        _check_writable_file(args.out)              # before the fold-in: a bad --out costs nothing
    caught: list = []
    with _warnings_kept(caught), _about("--input", args.input, (CorpusError,)):
        theta = np.asarray(model.transform(docs, num_sweeps=args.sweeps, seed=args.seed), np.float32)
    info = model.last_transform
    if info.num_tokens == 0:
        raise _no_known_word(args, info, "nothing to fold in")
    _show_warnings(caught)
    table = io.StringIO(newline="")
    w = csv.writer(table)
    w.writerow(["doc"] + [f"topic_{k}" for k in range(theta.shape[1])])
    w.writerows([d, *map(str, row)] for d, row in enumerate(theta))
    atomic_write_bytes(Path(args.out), table.getvalue().encode("utf-8"))
    dropped = (f"; {info.dropped_tokens} tokens of {len(info.unknown_words)} words the model does "
               f"not know dropped" if info.dropped_tokens else "")
    empty = (f"; {len(info.empty_docs)} document(s) with no known word get the prior mean"
             if info.empty_docs else "")
    _print_while_read(f"wrote {args.out}: {theta.shape[0]} documents x {theta.shape[1]} topic "
                      f"proportions ({model.model}, folded in with {args.sweeps} sweeps, seed "
                      f"{args.seed}; {info.num_tokens} tokens{dropped}{empty})")
    return 0


def _evaluate_held_out(model, args: argparse.Namespace) -> int:
    import numpy as np

    from . import evaluation
    from .cli import _coherence_line, _print_while_read
    from .fit import in_32_bits
    method = _held_out_method(args, model.model)
    options = {}
    if args.particles is not None:
        if method != "left_to_right":
            raise ParameterError(f"--particles applies to --method left_to_right, not {method}")
        options["num_particles"] = args.particles
    if args.sweeps is not None:
        if method not in ("completion", "corrected_theta"):
            raise ParameterError(f"--sweeps (of a fold-in) applies to --method completion or "
                                 f"corrected_theta, not {method}")
        options["num_sweeps"] = args.sweeps
    with _about("--held-out", args.input):
        docs = _new_documents(args, model)
    caught: list = []
    with _warnings_kept(caught), _about("--held-out", args.input, (CorpusError,)):
        # perplexity's own computation: (log p(w_d) [D], scored)
        ll, scored = in_32_bits(evaluation._evaluate)(model, docs, method, args.seed, options,
                                                      "perplexity")
    info = model.last_transform
    if info.num_tokens == 0:
        raise _no_known_word(args, info, "nothing to score")
    if scored == 0:
        raise JaxTopicsError(f"{_docs_flag(args)} {args.input}: no document has a second half to "
                             f"score (--method completion splits each document's known tokens at "
                             f"half, and every one has fewer than 2)")
    _show_warnings(caught)
    total = float(np.sum(ll))
    perplexity = float(np.exp(-total / scored))      # FittedModel.perplexity's formula, bitwise
    shown = {"left_to_right": "Wallach et al. 2009, algorithm 3",
             "completion": "document completion: theta folded in from a seeded random "
                           "half of each document's tokens, the other half scored",
             "exact": "exact: the sum over the clusters",
             "corrected_theta": "DP-MRM's corrected theta"}.get(method, method)
    given = ", ".join(f"{flag} {options[key]}" for flag, key in
                      (("--particles", "num_particles"), ("--sweeps", "num_sweeps"))
                      if key in options)
    print = _print_while_read                                                  # noqa: A001
    dropped = (f"; {info.dropped_tokens} tokens of {len(info.unknown_words)} words the model does "
               f"not know dropped" if info.dropped_tokens else "")
    print(f"held-out: {args.input}: {info.num_docs} documents, {info.num_tokens} tokens of words "
          f"the model knows{dropped}")
    print(f"model: {args.model_path}: {model.model}, {model.num_topics} topics, "
          f"{len(model.vocab)} words")
    print(f"method: {method} ({shown}{', ' + given if given else ''}), seed {args.seed}"
          + ("" if args.method is not None else " (the model's default method)"))
    print("held-out log-likelihood log p(w_d | model), in nats:")
    print(f"  per document: {total / info.num_docs:.4f}  (mean over the {info.num_docs} documents"
          + (f"; {len(info.empty_docs)} with no known word count 0" if info.empty_docs else "")
          + ")")
    print(f"  per token:    {total / scored:.6f}  (sum over the documents / {scored} scored "
          f"tokens{', those of the second halves' if method == 'completion' else ''})")
    print(f"perplexity: {perplexity:.6f}  (exp(-log-likelihood per token))")
    if args.coherence:
        reference = _token_corpus(model, docs) if isinstance(docs, list) else docs
        try:
            coherence = model.coherence(reference, args.coherence, top_n=args.top_words)
        except JaxTopicsError as e:
            print(f"jaxtopics: coherence not computed: {e}", file=sys.stderr)
        else:
            print(_coherence_line(coherence, args, "the held-out corpus"))
    return 0


def _held_out_method(args: argparse.Namespace, name: str) -> str:
    """--method (``-`` read as ``_``), or the default of model `name` when not given, refused
    where it is no held-out method or not one of the model's."""
    from . import evaluation
    from .cli import _registry
    module = _registry()[name].module
    methods, default = evaluation.methods_of(module), evaluation.default_method(module)
    method = default if args.method is None else args.method.replace("-", "_")
    if method not in evaluation.METHODS:
        raise ParameterError(f"--method {args.method}: not a held-out method (known: "
                             f"{', '.join(evaluation.METHODS)})")
    if method not in methods:
        raise ParameterError(f"--method {method}: the {name} model does not have it (its "
                             f"methods: {', '.join(methods)}; default {default})")
    return method


def _add_new_docs_input(p: argparse.ArgumentParser, flag: str, *aliases: str, what: str) -> None:
    p.add_argument("model_path", metavar="MODEL",
                   help="a model file (model.jtm) or the --out directory of a fit")
    p.add_argument(flag, *aliases, dest="input", required=True, metavar="FILE",
                   help=f"the {what}, read as `fit` reads its --input: text and JSON lines are "
                        f"tokenised as the model's training texts were (dpmrm: "
                        f"'label1--label2<TAB>text' lines); LDA-C counts are matched to the "
                        f"model's words by word (give --vocab); words the model does not know are "
                        f"dropped (a warning counts them)")
    p.add_argument("--format", choices=("auto", "ldac", "text", "jsonl"), default="auto",
                   help="ldac: LDA-C counts (+ --vocab); text: one document per line; jsonl: one "
                        "JSON object per line (--text-key); auto (default): by the extension, as "
                        "fit")
    p.add_argument("--vocab", help="vocabulary file for LDA-C (one word per line)")
    p.add_argument("--text-key", default=None, help="jsonl: the key of the text (default: text)")


def _add_new_docs_commands(sub) -> None:
    """The parsers of `infer` and `evaluate`."""
    from .coherence import MEASURES
    infer = sub.add_parser(
        "infer", help="topic proportions of new documents (fold-in), written as CSV",
        description="Fold new documents into a saved model (its topics held fixed, "
                    "FittedModel.transform) and write their topic proportions to --out as CSV: "
                    "a header row 'doc,topic_0,...,topic_{K-1}', then one row per document of "
                    "the input, in order: its index (from 0) and its K proportions, which sum to "
                    "1 (for dmm and dpmm, the clusters' probabilities). A document with no word "
                    "the model knows gets the prior mean; an input none of whose documents has "
                    "one is refused (most likely the wrong file or vocabulary).")
    _add_new_docs_input(infer, "--input", "-i", what="new documents")
    infer.add_argument("--out", "-o", required=True, help="the CSV file to write (whole or not at "
                                                           "all: a temporary file, then renamed)")
    infer.add_argument("--sweeps", type=int, default=50,
                       help="fold-in Gibbs sweeps (default 50)")
    infer.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    evaluate = sub.add_parser(
        "evaluate", help="held-out perplexity and log-likelihood of a saved model",
        description="Score held-out documents under a saved model: print log p(w_d | model) in "
                    "nats, its mean per document and per token, and the perplexity "
                    "exp(-log-likelihood per token), the number FittedModel.perplexity gives with "
                    "the same --method and --seed. Tokens of words the model does not know are "
                    "dropped (and not counted).")
    _add_new_docs_input(evaluate, "--held-out", what="held-out documents")
    evaluate.add_argument("--method", default=None,
                          help="left_to_right (Wallach et al. 2009; the default of lda, slda, "
                               "ptm, hdp), completion (theta folded in from a seeded random half of "
                               "each document's tokens, the other half scored), exact (dmm, dpmm: their default), "
                               "corrected_theta (dpmrm: its default)")
    evaluate.add_argument("--particles", type=int, default=None,
                          help="left_to_right: particles per document (default 10)")
    evaluate.add_argument("--sweeps", type=int, default=None,
                          help="completion, corrected_theta: fold-in sweeps (default 50)")
    evaluate.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    evaluate.add_argument("--coherence", choices=list(MEASURES), default=None,
                          help="also score each topic's --top-words words on the held-out "
                               "documents with this coherence measure (the mean is printed)")
    evaluate.add_argument("--top-words", type=int, default=10,
                          help="top words per topic for --coherence (default 10)")


# -- compare-k: choosing the number of topics ------------------------------------------------

#: the constructor keywords that set a model's K; compare-k sets it from --ks
_SIZE_ARGS = ("num_topics", "num_clusters")
#: model options compare-k does not offer: K itself, and how sharded runs (it fits on one
#: device) exchange their counts
_COMPARE_K_SKIPPED = frozenset(_SIZE_ARGS + ("exchange", "sync_every"))


def _fixed_k_models() -> list[str]:
    """The models whose K is a setting (num_topics or num_clusters), not inferred."""
    return sorted(name for name, opts in MODEL_OPTIONS.items()
                  if any(o.arg in _SIZE_ARGS for o in opts))


def _check_compare_k_args(args: argparse.Namespace) -> None:
    """What compare-k can check before JAX starts or a file is read."""
    fixed = _fixed_k_models()
    if args.model not in fixed:
        raise ParameterError(f"--model {args.model} infers its K (number of topics or clusters) "
                             f"from the data: compare-k compares models of a given K "
                             f"({', '.join(fixed)})")
    if args.sweeps < 1:
        raise ParameterError(f"--sweeps must be >= 1, got {args.sweeps}")
    if args.held_out_fraction is not None and not 0 < args.held_out_fraction < 1:
        raise ParameterError(f"--held-out-fraction must be in (0, 1), got "
                             f"{args.held_out_fraction}")
    if args.held_out is not None and not args.held_out.strip():
        raise ParameterError("--held-out must name a corpus file, got an empty string")
    if args.coherence != "none" and args.top_words < 2:
        raise ParameterError(f"--coherence scores pairs of top words: --top-words must be >= 2, "
                             f"got {args.top_words}")
    if args.csv is not None:
        if not args.csv.strip():
            raise ParameterError("--csv must name a CSV file, got an empty string")
        if Path(args.csv).is_dir():
            raise ParameterError(f"--csv {args.csv}: is a directory; name the CSV file to write "
                                 f"(e.g. {Path(args.csv) / 'compare_k.csv'})")


def _compare_k(args: argparse.Namespace) -> int:
    """Fit --model for every K of --ks and seed of --seeds on --input less the held-out
    documents (``jt.compare_num_topics``), print the report's table and write it to --csv."""
    import math

    from .cli import _estimator_options, _print_while_read, _read_corpus, _registry
    from .model_files import _check_writable_file
    from .io import atomic_write_bytes
    from .selection import compare_num_topics
    cls = _registry()[args.model]
    size_arg = next(o.arg for o in cls.options if o.arg in _SIZE_ARGS)
    options = _estimator_options(args)
    for k in args.ks:                    # bad options cost no fit (nor reading the input)
        cls(**{size_arg: k}, **options)
    method = _held_out_method(args, args.model)
    if args.csv is not None:
        with _about("--csv", args.csv):
            _check_writable_file(args.csv)
    corpus = _read_corpus(args)
    held_out = 0.1 if args.held_out_fraction is None else args.held_out_fraction
    if args.held_out is not None:        # read as --input is: the same --format, --vocab, ...
        with _about("--held-out", args.held_out):
            held_out = _read_corpus(argparse.Namespace(**{**vars(args), "input": args.held_out}))
        import numpy as np
        if not set(held_out.vocab[i] for i in np.unique(held_out.word_ids)) & set(corpus.vocab):
            raise JaxTopicsError(f"--held-out {args.held_out}: none of its tokens is a word of "
                                 f"--input {args.input}, so no fit could score it")
    print = _print_while_read                                                  # noqa: A001
    print(f"corpus: {args.input}: {corpus.num_docs} documents, {corpus.num_tokens} tokens, "
          f"{corpus.num_words} distinct words")
    print(f"fitting {cls.__name__} for K in {', '.join(map(str, args.ks))} with seeds "
          f"{', '.join(map(str, args.seeds))}, {args.sweeps} sweeps each\n")
    coherence = None if args.coherence == "none" else args.coherence
    report = compare_num_topics(cls, corpus, args.ks, held_out=held_out, seeds=args.seeds,
                                num_sweeps=args.sweeps, method=method, coherence=coherence,
                                top_n=args.top_words, vmap_seeds=args.vmap_seeds, **options)
    print(str(report))
    if args.csv is not None:
        def number(x: float) -> str:
            return "" if math.isnan(x) else repr(float(x))
        table = io.StringIO(newline="")
        w = csv.writer(table)
        w.writerow(["k", "perplexity", "perplexity_sd", "coherence", "coherence_sd"])
        w.writerows([r.num_topics, *map(number, (r.perplexity, r.perplexity_std, r.coherence,
                                                 r.coherence_std))] for r in report.rows)
        atomic_write_bytes(Path(args.csv), table.getvalue().encode("utf-8"))
        print(f"\nwrote {args.csv}")
    return 0


def _int_list(low: int | None, what: str):
    """An argparse type: comma-separated distinct integers >= `low` (None: any; e.g. 5,10,20)."""
    def parse(text: str) -> list[int]:
        try:
            values = [int(part) for part in text.split(",")]
        except ValueError:
            values = []
        if not values or (low is not None and min(values) < low):
            raise argparse.ArgumentTypeError(f"must be comma-separated {what} (e.g. 5,10,20), "
                                             f"got {text!r}")
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise argparse.ArgumentTypeError(f"lists {', '.join(map(str, twice))} more than once "
                                             f"(got {text!r})")
        return values
    return parse


def _add_compare_k_command(sub) -> None:
    """The parser of `compare-k`."""
    from .cli import _add_corpus_input, _all_options
    from .coherence import MEASURES
    fixed = _fixed_k_models()
    p = sub.add_parser(
        "compare-k", help="choose the number of topics: fit several K, compare them on held-out "
                          "documents",
        description="Fit --model for every K of --ks and every seed of --seeds on --input less "
                    "the held-out documents (--held-out FILE, else a seeded --held-out-fraction "
                    "of the input), and print one row per K: the held-out perplexity and the "
                    "mean topic coherence on the training documents, mean +- sd over the seeds "
                    "(jt.compare_num_topics). --csv also writes the table.")
    _add_corpus_input(p)
    p.add_argument("--model", choices=sorted(MODEL_OPTIONS), default="lda",
                   help=f"a model of a given K: {', '.join(fixed)} (default: lda); the others "
                        f"infer their K")
    p.add_argument("--ks", type=_int_list(1, "positive integers"), required=True,
                   help="the numbers of topics (dmm: clusters) to compare, e.g. 5,10,20")
    p.add_argument("--seeds", type=_int_list(None, "integers"), default=[0, 1, 2],
                   help="the seeds of each K's fits (default 0,1,2; any integers, as --seed)")
    p.add_argument("--sweeps", type=int, default=200, help="sweeps of each fit (default 200)")
    p.add_argument("--vmap-seeds", action=argparse.BooleanOptionalAction, default=None,
                   help="run a K's seeds together, vmapped (default: on a GPU or TPU, not on a "
                        "CPU, where it is slower)")
    held = p.add_mutually_exclusive_group()
    held.add_argument("--held-out", default=None, metavar="FILE",
                      help="held-out documents, read as --input is (the same --format, --vocab, "
                           "--text-key)")
    held.add_argument("--held-out-fraction", type=float, default=None,
                      help="without --held-out: the share of the input's documents held out "
                           "(default 0.1)")
    p.add_argument("--method", default=None,
                   help="the held-out method, as `jaxtopics evaluate --method` (default: the "
                        "model's own)")
    p.add_argument("--coherence", choices=[*MEASURES, "none"], default="c_npmi",
                   help="the coherence measure of each topic's --top-words words on the "
                        "training documents (default c_npmi; none: skip)")
    p.add_argument("--top-words", type=int, default=10,
                   help="top words per topic for --coherence (default 10)")
    offered = {o.arg for name in fixed for o in MODEL_OPTIONS[name]} | {
        o.arg for o in SHARED_OPTIONS}
    for opt in _all_options():
        if opt.arg in offered and opt.arg not in _COMPARE_K_SKIPPED:
            p.add_argument(opt.flag, dest=opt.arg, default=None, help=opt.help,
                           **opt.parser_arguments())
    p.add_argument("--csv", default=None, metavar="PATH",
                   help="also write the table: a header row 'k,perplexity,perplexity_sd,"
                        "coherence,coherence_sd', then one row per K (whole or not at all)")
    # what _read_corpus asks of a fit's arguments: one process, no sentences or labels asked for
    # (slda's sentences are implied by the model)
    p.set_defaults(sentences=False, labelled=False, coordinator=None)
