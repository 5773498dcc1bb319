"""The ``jaxtopics`` command: ``fit`` a model on a file, ``demo`` on the embedded corpus, ``show``.

    jaxtopics demo
    jaxtopics fit --model lda --num-topics 20 --sweeps 500 --seed 0 \\
        --input reuters.ldac --vocab reuters.tokens --out runs/reuters
    jaxtopics show runs/reuters/model.jtm
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from .corpus import Corpus
from .errors import JaxTopicsError, ParameterError
from .validate import check_positive_int

__all__ = ["main"]

ESTIMATORS = ("lda",)


def _read_corpus(args: argparse.Namespace) -> Corpus:
    path = Path(args.input)
    fmt = args.format
    if fmt == "auto":
        fmt = {".ldac": "ldac", ".dat": "ldac", ".jsonl": "jsonl"}.get(path.suffix.lower(), "text")
    if fmt == "ldac":
        return Corpus.from_ldac(path, vocab=args.vocab)
    if args.vocab:
        raise JaxTopicsError(f"--vocab only applies to --format ldac (got --format {fmt})")
    if fmt == "jsonl":
        return Corpus.from_jsonl(path, text_key=args.text_key)
    return Corpus.from_text_file(path)


def _estimator(args: argparse.Namespace):
    from . import estimators
    return estimators.LDA(num_topics=args.num_topics, alpha=args.alpha, beta=args.beta,
                          sampler=args.sampler)


OUT_FILES = ("model.jtm", "topics.txt", "trace.csv")


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
    """Options only used after the fit (or before jax starts) are checked first."""
    if args.top_words < 1:
        raise ParameterError(f"--top-words must be >= 1, got {args.top_words}")
    devices = getattr(args, "devices", None)
    if devices is not None:
        check_positive_int(devices, "--devices")


def _fit_and_report(corpus: Corpus, args: argparse.Namespace, out: Path | None) -> int:
    import jax

    from .io import atomic_write_bytes

    print(f"corpus: {corpus.num_docs} documents, {corpus.num_tokens} tokens, "
          f"{corpus.num_words} distinct words")
    est = _estimator(args)
    if out is not None:
        _prepare_out(out)
    where = f"{args.devices} {jax.default_backend()} devices" if args.devices else jax.default_backend()
    print(f"model: {est!r}  (jax {jax.__version__}, {where})")
    ckpt = out / "model.jtm" if out is not None and args.checkpoint_every else None
    t0 = time.perf_counter()
    model = est.fit(corpus, num_sweeps=args.sweeps, seed=args.seed, eval_every=args.eval_every,
                    progress=False if args.no_progress else None,
                    checkpoint_every=args.checkpoint_every, checkpoint_path=ckpt,
                    devices=args.devices)
    elapsed = time.perf_counter() - t0
    print("\nlog-likelihood trace (log p(w, z) per token):")
    for p in model.trace:
        print(f"  sweep {p.sweep:6d}  {p.log_joint_per_token:9.4f}   "
              f"changed {p.changed_fraction:6.1%}   {p.seconds:7.1f}s")
    # throughput excludes the first chunk, which includes compilation
    if len(model.trace) >= 2:
        first, last = model.trace[0], model.trace[-1]
        rate = (last.sweep - first.sweep) * corpus.num_tokens / max(last.seconds - first.seconds, 1e-9)
        print(f"\nthroughput: {rate / 1e6:.2f} M tokens/s (after the first eval, which includes compilation)")
    print(f"total: {args.sweeps} sweeps in {elapsed:.1f}s\n")
    print(model.summary(n=args.top_words))
    if out is not None:
        model.save(out / "model.jtm")
        topics = "".join(f"{k}\t" + " ".join(w for w, _ in words) + "\n"
                         for k, words in enumerate(model.top_words(args.top_words)))
        atomic_write_bytes(out / "topics.txt", topics.encode("utf-8"))
        table = io.StringIO(newline="")
        w = csv.writer(table)
        w.writerow(["sweep", "log_joint_per_token", "changed_fraction", "seconds"])
        w.writerows(model.trace)
        atomic_write_bytes(out / "trace.csv", table.getvalue().encode("utf-8"))
        print(f"\nwrote {out / 'model.jtm'}, topics.txt, trace.csv")
    return 0


def _add_model_args(p: argparse.ArgumentParser, *, topics: int, sweeps: int) -> None:
    p.add_argument("--model", choices=ESTIMATORS, default="lda")
    p.add_argument("--num-topics", "-k", type=int, default=topics)
    p.add_argument("--sweeps", type=int, default=sweeps)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--beta", type=float, default=0.01)
    p.add_argument("--sampler", default="parallel", choices=("parallel", "sequential", "uncollapsed"))
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--top-words", type=int, default=10)
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="save OUT/model.jtm every this many sweeps (resumable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--devices", type=int, default=None,
                   help="shard the documents over this many devices (LDA, parallel sampler); on a "
                        "CPU the process is split into this many XLA CPU devices")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxtopics", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", help="fit a model on a corpus file")
    fit.add_argument("--input", "-i", required=True, help="corpus file")
    fit.add_argument("--format", choices=("auto", "ldac", "text", "jsonl"), default="auto",
                     help="ldac: LDA-C counts (+ --vocab); text: one document per line; "
                          "jsonl: one JSON object per line (--text-key)")
    fit.add_argument("--vocab", help="vocabulary file for LDA-C (one word per line)")
    fit.add_argument("--text-key", default="text")
    fit.add_argument("--out", "-o", required=True, help="output directory")
    _add_model_args(fit, topics=20, sweeps=500)
    demo = sub.add_parser("demo", help="fit LDA on the embedded Python-docs corpus (no download)")
    demo.add_argument("--out", "-o", default=None, help="optional output directory")
    demo.add_argument("--max-docs", type=int, default=None, help="use only this many documents")
    _add_model_args(demo, topics=20, sweeps=300)
    show = sub.add_parser("show", help="print the summary of a saved model")
    show.add_argument("path")
    show.add_argument("--top-words", type=int, default=10)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_args(args)
        if getattr(args, "devices", None):
            import jax
            # before the first computation starts the backend; concerns the CPU platform only
            if args.devices > 1:
                jax.config.update("jax_num_cpu_devices", args.devices)
        if args.command == "fit":
            return _fit_and_report(_read_corpus(args), args, Path(args.out))
        if args.command == "demo":
            from .datasets import demo_corpus, stdlib_corpus
            corpus = demo_corpus() if args.max_docs is None else stdlib_corpus(max_docs=args.max_docs)
            print("demo: docstrings of the Python standard library + pydoc help topics")
            return _fit_and_report(corpus, args, Path(args.out) if args.out else None)
        if args.command == "show":
            from .estimators import load
            print(load(args.path).summary(n=args.top_words))
            return 0
    except JaxTopicsError as e:
        print(f"jaxtopics: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file that cannot be read or written: one line naming it
        where = f"{e.filename}: " if e.filename is not None else ""
        print(f"jaxtopics: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
