"""The command-line options of every model (``jaxtopics fit --model NAME``), declared without JAX.

Each estimator class (``jaxtopics.estimators``) takes its ``options`` from ``MODEL_OPTIONS``, so
the command builds its parser, answers ``--help`` and refuses a bad argument without importing
JAX (~1.5 s).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Option", "SHARED_OPTIONS", "MODEL_OPTIONS"]


@dataclass(frozen=True)
class Option:
    """A constructor argument an estimator exposes on the command line (``jaxtopics fit``).

    `flag`: e.g. "--num-topics"; `arg`: the constructor's keyword; `type`: int, float, str, or
    bool (a switch: given, the keyword is True); `help`: one line; `choices`: the values a str
    option accepts (None: any). The CLI offers the union of every model's options and passes a
    model only the ones it declares (an option of another model is refused with a clear error).
    """

    flag: str
    arg: str
    type: type
    help: str = ""
    choices: tuple[str, ...] | None = None

    def parser_arguments(self) -> dict:
        """``argparse.add_argument`` keywords beyond flag, dest, default (None: not given) and
        help: a switch for a bool option, else the type and choices."""
        if self.type is bool:
            return {"action": "store_true"}
        return {"type": self.type, "choices": self.choices}


#: options of every model
SHARED_OPTIONS = (
    Option("--alpha", "alpha", float, "document-topic Dirichlet (model default)"),
    Option("--beta", "beta", float, "topic-word Dirichlet (model default)"),
    Option("--sampler", "sampler", str, "kernel: parallel (default), sequential, ..."))

# options of several models (the CLI lists each flag once, with the help of its first use)
NUM_TOPICS = Option("--num-topics", "num_topics", int, "K, the number of topics")
NUM_BLOCKS = Option("--num-blocks", "num_blocks", int, "blocks per parallel sweep (of tokens, "
                    "sentences or documents, by model; default 64)")
GAMMA = Option("--gamma", "gamma", float, "DP concentration: hdp's corpus-level DP over topics, "
               "dpmrm's DP over topics of each label")
SPLIT_MERGE_STEPS = Option("--split-merge-steps", "split_merge_steps", int,
                           "split-merge moves per sweep (hdp: of topics, default 10; slda: of "
                           "two topics' sentences, default 1; 0: none)")
TOPIC_CAPACITY = Option("--topic-capacity", "topic_capacity", int,
                        "starting number of topic slots, grown when full (hdp, dpmrm; 0: "
                        "automatic)")
INITIAL_TOPICS = Option("--initial-topics", "initial_topics", int,
                        "topics of the random initial state (hdp, dpmrm)")
# sampled Dirichlet-process concentrations (``jaxtopics.sampled_concentrations``), the same flags
# for hdp, dpmm and dpmrm
CONCENTRATIONS = (
    Option("--resample-concentrations", "resample_concentrations", bool,
           "draw the DP concentrations after every sweep (hdp: alpha, gamma; dpmm: alpha; "
           "dpmrm: alpha, gamma); --alpha and --gamma are the starts"),
    Option("--prior-shape", "prior_shape", float,
           "sampled concentrations: shape of their Gamma prior (hdp, dpmm, dpmrm; default 1)"),
    Option("--prior-rate", "prior_rate", float,
           "sampled concentrations: rate of their Gamma prior (hdp, dpmm, dpmrm; default 1)"))
# learned Dirichlet priors (``jaxtopics.learned_priors``), the same flags for lda, slda and ptm
OPTIMIZE_ALPHA = Option("--optimize-alpha", "optimize_alpha", str,
                        "learn alpha from the chain (lda, slda, ptm, dmm): one value (symmetric) or one "
                        "per topic or cluster (asymmetric); --alpha is the start",
                        choices=("symmetric", "asymmetric"))
OPTIMIZE_BETA = Option("--optimize-beta", "optimize_beta", bool,
                       "learn the symmetric beta from the chain (lda, slda, ptm, dmm); --beta is the "
                       "start")
OPTIMIZE_EVERY = Option("--optimize-every", "optimize_every", int,
                        "learned priors: sweeps between updates (lda, slda, ptm, dmm; default 10)")
BURN_IN = Option("--burn-in", "burn_in", int,
                 "learned priors: sweeps before the first update (lda, slda, ptm, dmm; default 50)")
OPTIMIZER = Option("--optimizer", "optimizer", str,
                   "learned priors (lda, slda, ptm, dmm): minka (Minka's fixed point, the "
                   "default) or optax (L-BFGS on the same evidence)", choices=("minka", "optax"))
LEARNED_PRIORS = (OPTIMIZE_ALPHA, OPTIMIZE_BETA, OPTIMIZE_EVERY, BURN_IN, OPTIMIZER)
# seed words (guided topics, ``jaxtopics.seed_words``), the same flags for lda and ptm
SEED_WORDS = (Option("--seed-words", "seed_words", str,
                     "guided topics (lda, ptm): a file of lines 'topic_id<TAB>word word ...' "
                     "(docs/command-line.md)"),
              Option("--seed-weight", "seed_weight", float,
                     "guided topics (lda, ptm): the prior pseudo-count of a seed word in its "
                     "topic (default 1)"))

# the exact parallel kernels' token draw, the same flag for lda and ptm
DRAW = Option("--draw", "draw", str, "lda, ptm parallel, exact draws: dense, sparse (the same "
              "law, cheaper at large K) or auto (default: by K, the layout and the backend)",
              choices=("auto", "dense", "sparse"))

#: model name (``--model``) -> its own options, beyond SHARED_OPTIONS
MODEL_OPTIONS: dict[str, tuple[Option, ...]] = {
    "lda": (NUM_TOPICS,
            Option("--exchange", "exchange", str,
                   "sharded runs: how devices share the word-topic counts: rotate (default: "
                   "each device holds one word group at a time) or moves (the default with "
                   "--draw sparse) (LDA)"),
            Option("--sync-every", "sync_every", int,
                   "sharded runs with --exchange moves: blocks between exchanges of "
                   "word-topic moves (LDA; default 4)"),
            NUM_BLOCKS,
            Option("--mh-steps", "mh_steps", int, "LDA parallel: Metropolis-Hastings cycles "
                   "per token instead of an exact draw (default 0: exact; for very large K)"),
            DRAW,
            *LEARNED_PRIORS, *SEED_WORDS),
    "slda": (NUM_TOPICS, NUM_BLOCKS, SPLIT_MERGE_STEPS, *LEARNED_PRIORS),
    "ptm": (NUM_TOPICS,
            Option("--num-pseudo-docs", "num_pseudo_docs", int,
                   "P, the number of pseudo-documents (PTM)"),
            Option("--lam", "lam", float, "Dirichlet over pseudo-documents (PTM, default 0.1)"),
            NUM_BLOCKS, DRAW, *LEARNED_PRIORS, *SEED_WORDS),
    "dpmrm": (GAMMA,
              Option("--eta", "eta", float, "Dirichlet over a document's labels (dpmrm)"),
              INITIAL_TOPICS, NUM_BLOCKS,
              TOPIC_CAPACITY,
              Option("--table-capacity", "table_capacity", int,
                     "starting number of table slots per document, grown when full (dpmrm; 0: "
                     "automatic, 32 or the longest document's tokens)"),
              *CONCENTRATIONS),
    "dmm": (Option("--num-clusters", "num_clusters", int,
                   "K, the largest number of clusters (DMM)"),
            NUM_BLOCKS, *LEARNED_PRIORS),
    "dpmm": (Option("--capacity", "capacity", int,
                    "starting number of cluster slots, grown when full (DPMM)"),
             NUM_BLOCKS, *CONCENTRATIONS),
    "hdp": (GAMMA, INITIAL_TOPICS, NUM_BLOCKS, SPLIT_MERGE_STEPS,
            Option("--split-merge-every", "split_merge_every", int,
                   "the split-merge moves run in a sweep with probability 1/E (hdp; 0: "
                   "automatic, 8 for the direct-assignment samplers parallel and sequential, "
                   "1 for crf and crf_sequential)"),
            TOPIC_CAPACITY,
            *CONCENTRATIONS),
}
