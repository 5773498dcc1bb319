"""The text pipeline that turns raw texts into tokens: Unicode NFC normalisation (Unicode
Standard Annex #15, so a decomposed and a composed "café" are one word), a word tokenizer that
keeps combining marks (Unicode general category M, UAX #44) inside words, lowercasing, a minimum
token length, an English stop-word list, a simple sentence splitter, and :class:`TextOptions`,
which records these choices so a fitted model tokenises new texts exactly as its training texts
were; :class:`jaxtopics.corpus.Corpus` builds its vocabulary on the tokens this module makes.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from .errors import CorpusError, ParameterError

__all__ = ["ENGLISH_STOP_WORDS", "TextOptions", "default_tokenizer", "nfc_vocab",
           "split_sentences"]

ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amount an and another any anyhow anyone anything anyway
    anywhere are aren't around as at back be became because become becomes becoming been before
    beforehand behind being below beside besides between beyond both bottom but by call can
    can't cannot could couldn't did didn't do does doesn't doing don't done down due during
    each eg either else elsewhere enough etc even ever every everyone everything everywhere
    except few first for former formerly from front full further get gets give go had hadn't
    has hasn't have haven't having he he'd he'll he's hence her here here's hereafter hereby
    herein hereupon hers herself him himself his how how's however i i'd i'll i'm i've ie if in
    indeed instead into is isn't it it's its itself just keep last latter latterly least less
    let's like made many may me meanwhile might mine more moreover most mostly much must
    mustn't my myself name namely neither never nevertheless next no nobody none noone nor not
    nothing now nowhere of off often on once one only onto or other others otherwise ought our
    ours ourselves out over own part per perhaps please put rather re same say says see seem
    seemed seeming seems several shall shan't she she'd she'll she's should shouldn't show side
    since so some somehow someone something sometime sometimes somewhere still such take than
    that that's the their theirs them themselves then thence there there's thereafter thereby
    therefore therein thereupon these they they'd they'll they're they've this those though
    through throughout thru thus to together too top toward towards under until up upon us
    very via was wasn't we we'd we'll we're we've well were weren't what what's whatever when
    when's whence whenever where where's whereafter whereas whereby wherein whereupon wherever
    whether which while whither who who's whoever whole whom whose why why's will with within
    without won't would wouldn't yet you you'd you'll you're you've your yours yourself
    yourselves zero one two three four five six seven eight nine ten
    """.split()
)
"""A standard English stop-word list (function words, pronouns, contractions, number words)."""

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_JOINERS = "'\u2019\u200c\u200d"   # apostrophes, zero-width (non-)joiner: inside a word only


#: planes 0-3 and 14: Unicode assigns nothing in planes 4-13, and 15-16 are private use (no
#: marks); ``tests/test_text.py`` checks the marks against a scan of every code point
_MARK_PLANES = (range(0x00000, 0x40000), range(0xE0000, 0xF0000))


@functools.lru_cache(maxsize=1)
def _token_re() -> re.Pattern[str]:
    """Words: a letter, then letters, digits, combining marks (Unicode category M) and joiners,
    ending in a letter, digit or mark. Python's ``\\w`` lacks the marks, which cut Devanagari,
    Thai or Arabic words apart at every vowel sign, virama or harakat; the mark class is built from
    this Python's ``unicodedata`` once, on first use, from the planes that hold assigned code
    points other than private use (`_MARK_PLANES`: a fifth of the scan of every code point)."""
    ranges: list[str] = []
    start = prev = -2
    for cp in (cp for plane in _MARK_PLANES for cp in plane):
        if unicodedata.category(chr(cp))[0] == "M":
            if cp != prev + 1:
                if start >= 0:
                    ranges.append(f"\\U{start:08x}-\\U{prev:08x}")
                start = cp
            prev = cp
    ranges.append(f"\\U{start:08x}-\\U{prev:08x}")
    marks = "".join(ranges)
    return re.compile(rf"[^\W\d_](?:[\w{marks}{_JOINERS}]*[\w{marks}])?")


def default_tokenizer(text: str) -> list[str]:
    """Words made of letters with internal digits, apostrophes and combining marks (``don't``,
    ``covid19``, ``हिन्दी``), after NFC normalisation (so a decomposed ``café`` is the composed
    one). Digits-only runs, punctuation, symbols and emoji are not words. Scripts written without
    spaces (Chinese, Japanese, Thai) come out as whole runs: pass a segmenting ``tokenizer`` to
    :meth:`Corpus.from_texts` for those.

    Args:
        text: one text.

    Returns:
        Its words, in order (case kept: ``TextOptions`` lowercases after).

    Example:
        >>> from jaxtopics.text import default_tokenizer
        >>> default_tokenizer("Don't panic: COVID19, 42 cafés!")
        ["Don't", 'panic', 'COVID19', 'cafés']
    """
    text = unicodedata.normalize("NFC", text)
    return [t.replace("\u2019", "'") for t in _token_re().findall(text)]


def split_sentences(text: str) -> list[str]:
    """Split at ``.``, ``!`` or ``?`` followed by whitespace, and at newlines.

    Args:
        text: one text.

    Returns:
        Its sentences (blank ones dropped).

    Example:
        >>> from jaxtopics.text import split_sentences
        >>> split_sentences("One. Two! Three?\\nFour")
        ['One.', 'Two!', 'Three?', 'Four']
    """
    return [s for s in _SENTENCE_SPLIT_RE.split(text) if s and not s.isspace()]


class TextOptions(NamedTuple):
    """How :meth:`Corpus.from_texts` turns one text into tokens: NFC-normalise, tokenize,
    lowercase (each token NFC-normalised again: lowercasing can undo it), drop tokens shorter
    than ``min_length``, drop stop words.

    A corpus built from texts keeps its options (``Corpus.text_options``), and so does a model
    fitted to it (also in its model file), so new texts are tokenised exactly as the training
    texts were (``FittedModel.transform``). ``tokenizer`` is None for :func:`default_tokenizer`,
    else the callable given; a model file cannot hold a callable, so one read from a file says
    ``"custom"`` (and new texts must then be tokenised by the caller). ``stop_words`` is
    ``"english"`` (:data:`ENGLISH_STOP_WORDS`), a sorted tuple of words, or None. Build with
    :meth:`make`, which validates.

    Attributes:
        tokenizer: None (:func:`default_tokenizer`), the callable given, or ``"custom"``.
        lowercase: lowercase the tokens.
        stop_words: "english", a sorted tuple of words, or None.
        min_length: the shortest token kept.

    Example:
        >>> from jaxtopics.text import TextOptions
        >>> options = TextOptions.make(stop_words=["the"], min_length=3)
        >>> options.tokenize(["The cat and the hat", "a b cde"])
        [['cat', 'and', 'hat'], ['cde']]
    """

    tokenizer: Callable[[str], Sequence[str]] | str | None = None
    lowercase: bool = True
    stop_words: str | tuple[str, ...] | None = "english"
    min_length: int = 2

    @classmethod
    def make(
        cls,
        tokenizer: Callable[[str], Sequence[str]] | None = None,
        lowercase: bool = True,
        stop_words: Literal["english"] | Iterable[str] | None = "english",
        min_length: int = 2,
    ) -> TextOptions:
        """Validated options.

        Args:
            tokenizer: text -> tokens; None: :func:`default_tokenizer`.
            lowercase: lowercase the tokens.
            stop_words: "english", a collection of words (kept sorted), or None.
            min_length: the shortest token kept.

        Returns:
            The TextOptions.

        Raises:
            ParameterError: naming the bad option."""
        if tokenizer is not None and not callable(tokenizer):
            raise ParameterError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
        if not isinstance(lowercase, (bool, np.bool_)):
            raise ParameterError(f"lowercase must be True or False, got {lowercase!r}")
        if isinstance(min_length, bool) or not isinstance(min_length, (int, np.integer)):
            raise ParameterError(f"min_length must be an int, got {min_length!r}")
        if min_length < 0:
            raise ParameterError(f"min_length must be >= 0, got {min_length}")
        stops: str | tuple[str, ...] | None
        if stop_words is None:
            stops = None
        elif isinstance(stop_words, str):
            if stop_words != "english":
                raise ParameterError(
                    f"unknown stop-word list {stop_words!r}; use 'english', None, "
                    f"or a collection of words"
                )
            stops = "english"
        else:
            try:
                words = list(stop_words)
            except TypeError:
                raise ParameterError(
                    f"stop_words must be 'english', None or a collection of words, "
                    f"got {type(stop_words).__name__}"
                ) from None
            bad = [w for w in words if not isinstance(w, str)]
            if bad:
                raise ParameterError(f"stop_words must be strings, got {bad[0]!r}")
            stops = tuple(sorted({unicodedata.normalize("NFC", w) for w in words}))
        return cls(tokenizer, bool(lowercase), stops, int(min_length))

    def _stop_set(self) -> frozenset[str]:
        if self.stop_words is None:
            stops: frozenset[str] = frozenset()
        elif self.stop_words == "english":
            stops = ENGLISH_STOP_WORDS
        else:
            stops = frozenset(self.stop_words)
        if not self.lowercase:
            return stops
        return frozenset(unicodedata.normalize("NFC", w.lower()) for w in stops)   # as tokens

    def _pipeline(self) -> Callable[[str, int], list[str]]:
        """``f(text, d) -> tokens``; errors name document ``d``."""
        tok = self.tokenizer
        if tok is None:
            tok = default_tokenizer
        elif not callable(tok):
            raise ParameterError(
                f"these texts were tokenised by a custom tokenizer ({tok!r}), which a model file "
                f"cannot hold: tokenise new texts with it, e.g. "
                f"Corpus.from_texts(texts, tokenizer=...), and pass the Corpus"
            )
        stops, lowercase, min_length = self._stop_set(), self.lowercase, self.min_length
        nfc = unicodedata.normalize

        def tokens_of(text: str, d: int) -> list[str]:
            try:
                raw = tok(nfc("NFC", text))
            except Exception as e:  # the user's tokenizer failed: say on which document
                raise CorpusError(
                    f"document {d}: tokenizer raised {type(e).__name__}: {e}"
                ) from e
            if isinstance(raw, (str, bytes)):
                raise CorpusError(f"document {d}: tokenizer returned a string, expected a list")
            if not isinstance(raw, Iterable):
                raise CorpusError(f"document {d}: tokenizer returned {type(raw).__name__}, "
                                  f"expected a list of str")
            out = []
            for p, t in enumerate(raw):
                if not isinstance(t, str):
                    raise CorpusError(
                        f"document {d}: tokenizer returned non-str token {t!r} at position {p}"
                    )
                if lowercase:
                    t = t.lower()
                if not t.isascii():     # lowercasing (or the tokenizer) can undo NFC: "J\u030c"
                    t = nfc("NFC", t)   # lowercases to "j\u030c", whose NFC is "\u01f0"
                if t and len(t) >= min_length and t not in stops:   # never an empty word
                    out.append(t)
            return out

        return tokens_of

    def tokenize(self, texts: Iterable[str]) -> list[list[str]]:
        """The tokens of texts, as :meth:`Corpus.from_texts` makes them before its vocabulary is
        built.

        Args:
            texts: the texts.

        Returns:
            One list of tokens per text."""
        if isinstance(texts, (str, bytes)):
            raise CorpusError("texts must be an iterable of str, got a single string")
        tokens_of = self._pipeline()
        out = []
        for d, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"texts[{d}] must be a str, got {type(text).__name__}")
            out.append(tokens_of(text, d))
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-able description, as a model file stores it.

        Returns:
            {"tokenizer", "normalize", "lowercase", "stop_words", "min_length"} (a custom
            tokenizer is named, not stored).

        Example:
            >>> from jaxtopics.text import TextOptions
            >>> TextOptions.make(stop_words=["the"]).to_json()
            {'tokenizer': 'default', 'normalize': 'NFC', 'lowercase': True, 'stop_words': ['the'],
             'min_length': 2}
        """
        tok = self.tokenizer
        if tok is None:
            name = "default"
        elif isinstance(tok, str):
            name = tok
        else:
            qual = getattr(tok, "__qualname__", type(tok).__name__)
            module = (getattr(tok, "__module__", None)          # a method of a builtin type
                      or getattr(getattr(tok, "__objclass__", None), "__module__", None) or "?")
            name = f"custom:{module}.{qual}"
        stops = list(self.stop_words) if isinstance(self.stop_words, tuple) else self.stop_words
        return {"tokenizer": name, "normalize": "NFC", "lowercase": self.lowercase,
                "stop_words": stops, "min_length": self.min_length}

    @classmethod
    def from_json(cls, obj: Any) -> TextOptions:
        """Inverse of :meth:`to_json`.

        Args:
            obj: what :meth:`to_json` returned (read back from JSON).

        Returns:
            The TextOptions (tokenizer None for "default", else the custom tokenizer's name).

        Raises:
            ValueError: saying what is wrong."""
        keys = {"tokenizer", "normalize", "lowercase", "stop_words", "min_length"}
        if not isinstance(obj, dict) or set(obj) != keys:
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise ValueError(f"expected an object with keys {sorted(keys)}, got {got}")
        tok = obj["tokenizer"]
        if not isinstance(tok, str) or not (tok == "default" or tok.startswith("custom")):
            raise ValueError(f"tokenizer must be 'default' or 'custom:...', got {tok!r}")
        if obj["normalize"] != "NFC":
            raise ValueError(f"normalize must be 'NFC', got {obj['normalize']!r}")
        stops = obj["stop_words"]
        if not (stops is None or stops == "english" or (
                isinstance(stops, list) and all(isinstance(w, str) for w in stops))):
            raise ValueError(f"stop_words must be 'english', null or a list of words, got {stops!r}")
        if not isinstance(obj["lowercase"], bool):
            raise ValueError(f"lowercase must be true or false, got {obj['lowercase']!r}")
        ml = obj["min_length"]
        if isinstance(ml, bool) or not isinstance(ml, int) or ml < 0:
            raise ValueError(f"min_length must be an integer >= 0, got {ml!r}")
        return cls(None if tok == "default" else tok, obj["lowercase"],
                   tuple(stops) if isinstance(stops, list) else stops, ml)


def nfc_vocab(vocab: tuple[str, ...], what: str = "vocab words") -> tuple[str, ...]:
    """The vocabulary NFC-normalised (as ``from_texts`` normalises texts), so a word matches
    however its characters were composed.

    Args:
        vocab: the words.
        what: what the entries are, in the error ("vocab words", "label_names entries").

    Returns:
        The words NFC-normalised (`vocab` itself where all are already).

    Raises:
        CorpusError: two entries become the same word, naming both (their code points differ
            where they look alike)."""
    if all(w.isascii() or unicodedata.is_normalized("NFC", w) for w in vocab):
        return vocab
    out = tuple(unicodedata.normalize("NFC", w) for w in vocab)
    seen: dict[str, int] = {}
    for i, w in enumerate(out):
        j = seen.setdefault(w, i)
        if j != i and vocab[j] != vocab[i]:         # exact repeats: the duplicate check's
            raise CorpusError(
                f"{what} {j} ({ascii(vocab[j])}) and {i} ({ascii(vocab[i])}) are the same "
                f"{'word' if what == 'vocab words' else 'name'} {w!r} once NFC-normalised "
                f"(a corpus normalises its words and label names, "
                f"as from_texts does its texts): give each once, e.g. normalise the texts they "
                f"were taken from")
    return out
