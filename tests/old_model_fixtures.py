"""The corpora and fits behind ``tests/fixtures/<model>_format_<v>.jtm``: one model file of
every model in the oldest model-file format ``jt.load`` reads for it, each written by the code
of a commit that wrote that format and had the model (``FIXTURES``). Format 1 (every
model but DP-MRM): the vocabulary as a numpy unicode array, no checksum, no ``num_docs``,
``text_options``, ``shards`` (the model branches were merged after format 2 came, so their
tips still wrote format 1). Format 2 without a checksum for DP-MRM (from the first commit that
kept its label names, which its format-1 files lack). Read by tests/test_old_model_files.py.

Only ``Corpus.from_token_lists`` and the estimators are used, which every version has, so the
same module runs under an old checkout to write a fixture again::

    git worktree add --detach /tmp/old_<commit> <commit>
    PYTHONPATH=/tmp/old_<commit> python tests/old_model_fixtures.py <file> tests/fixtures
    git worktree remove /tmp/old_<commit>
"""

from __future__ import annotations

import sys
from pathlib import Path


def token_corpus():
    """16 documents of 4-10 tokens over 28 words, by a fixed rule (LDA, PTM, DMM, DPMM, HDP)."""
    import jaxtopics as jt

    docs = [[f"w{((j % 3) * 7 + (j * 5 + i * 3) % 7 + (i % 4 == 0) * 21) % 28}"
             for i in range(4 + (j * 5) % 7)] for j in range(16)]
    return jt.Corpus.from_token_lists(docs)


def sentence_corpus():
    """12 documents of 2-4 sentences of 2-5 tokens (Sentence-LDA)."""
    import jaxtopics as jt

    docs = [[[f"w{((j % 3) * 6 + (j + s * 5 + i * 2) % 6 + (i == 3) * 18) % 24}"
              for i in range(2 + (j + s) % 4)] for s in range(2 + j % 3)] for j in range(12)]
    return jt.Corpus.from_token_lists(docs, sentences=True)


def labelled_corpus():
    """16 documents with label sets over L0-L2, a quarter of them with two labels (DP-MRM)."""
    import jaxtopics as jt

    docs, sets = [], []
    for j in range(16):
        sets.append([f"L{j % 3}"] + ([f"L{(j + 1) % 3}"] if j % 4 == 0 else []))
        docs.append([f"w{((j % 3) * 6 + (j * 7 + i * 3) % 6 + (i % 5 == 0) * 20) % 24}"
                     for i in range(5 + j % 7)])
    return jt.Corpus.from_token_lists(docs, labels=sets, label_names=["L0", "L1", "L2"])


#: fixture file -> (model, the commit that wrote it, its corpus, its estimator); each fixture is
#: ``make(jt).fit(corpus(), SWEEPS, seed=SEED, progress=False)`` saved. DP-MRM files of format 1
#: lack the label names (kept since b007890), which ``jt.load`` needs: its oldest readable file
#: is of format 2 (without a checksum), and its format-1 file is in ``UNREADABLE``.
FIXTURES = {
    "lda_format_1.jtm": ("lda", "86ceab3", token_corpus,
                         lambda jt: jt.LDA(3, alpha=0.2, beta=0.05, num_blocks=4)),
    "slda_format_1.jtm": ("slda", "6798105", sentence_corpus,
                          lambda jt: jt.SentenceLDA(3, alpha=0.2, beta=0.05, num_blocks=4)),
    "ptm_format_1.jtm": ("ptm", "d990c38", token_corpus,
                         lambda jt: jt.PTM(3, 4, alpha=0.2, beta=0.05, lam=0.3, num_blocks=4)),
    "dmm_format_1.jtm": ("dmm", "5f9fb4c", token_corpus,
                         lambda jt: jt.DMM(4, alpha=0.1, beta=0.1, num_blocks=4)),
    "dpmm_format_1.jtm": ("dpmm", "5f9fb4c", token_corpus,
                          lambda jt: jt.DPMM(alpha=0.5, beta=0.1, num_blocks=4)),
    "dpmrm_format_2.jtm": ("dpmrm", "b007890", labelled_corpus,
                           lambda jt: jt.DPMRM(alpha=1.5, gamma=0.7, num_blocks=4, initial_topics=2)),
    "hdp_format_1.jtm": ("hdp", "841610d", token_corpus,
                         lambda jt: jt.HDP(alpha=1.0, gamma=1.0, beta=0.1, initial_topics=2,
                                           num_blocks=4)),
}
#: files of a format that ``jt.load`` refuses (with one FormatError saying why), written alike
UNREADABLE = {
    "dpmrm_format_1_without_label_names.jtm": ("dpmrm", "6798105", labelled_corpus,
                                               FIXTURES["dpmrm_format_2.jtm"][3]),
}
SWEEPS, SEED = 6, 2


def write(file: str, directory: Path) -> Path:
    """Fit and save the fixture ``file`` with the jaxtopics on the path (an old checkout)."""
    import jaxtopics as jt

    _, _, corpus, make = {**FIXTURES, **UNREADABLE}[file]
    path = Path(directory) / file
    make(jt).fit(corpus(), SWEEPS, seed=SEED, progress=False).save(path)
    return path


if __name__ == "__main__":
    import jaxtopics

    print(f"jaxtopics from {Path(jaxtopics.__file__).parent}", file=sys.stderr)
    print(write(sys.argv[1], Path(sys.argv[2])))
