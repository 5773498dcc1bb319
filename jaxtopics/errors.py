"""Exception types raised by jaxtopics for bad input.

Every error is a subclass of :class:`JaxTopicsError`, itself a :class:`ValueError`, so callers
can catch all input problems at once or a specific kind.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = [
    "ShardLayoutWarning",
    "JaxTopicsError",
    "CorpusError",
    "EmptyDocumentError",
    "FormatError",
    "InvariantError",
    "ParameterError",
    "UnknownWordsWarning",
    "LabelWarning",
]


class JaxTopicsError(ValueError):
    """Base of every input error jaxtopics raises (a ValueError).

    Example:
        >>> import jaxtopics as jt
        >>> try:
        ...     jt.Corpus.from_texts([])
        ... except jt.JaxTopicsError as error:          # here a CorpusError
        ...     print(type(error).__name__, error)
        CorpusError corpus has no documents (no texts given)
    """


class CorpusError(JaxTopicsError):
    """Bad corpus content: ids out of range, negative counts, empty corpus, ..."""


class EmptyDocumentError(CorpusError):
    """A model that cannot take empty documents was given some."""


class FormatError(CorpusError):
    """A malformed file; ``str()`` reads ``"path:line: message"``.

    Attributes:
        message: what is wrong.
        path: the file, or None if unknown.
        line: 1-based line number, or None if unknown.

    Example:
        >>> from jaxtopics.errors import FormatError
        >>> str(FormatError("negative count -2", "corpus.ldac", 3))
        'corpus.ldac:3: negative count -2'
    """

    def __init__(
        self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None
    ) -> None:
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        return f"{where}: {self.message}" if where else self.message

    def __str__(self) -> str:
        return self._format()

    def __reduce__(self):  # keep pickling (e.g. across processes) working
        return (type(self), (self.message, self.path, self.line))


class ParameterError(JaxTopicsError):
    """A bad hyper-parameter or option value."""


class InvariantError(JaxTopicsError):
    """A chain's state broke an invariant of its model after a jitted chunk of sweeps: a negative
    count, count tables that do not sum to what the model counts (tokens, sentences, documents,
    tables), or a log joint that is not finite. Not bad input: a defect in a kernel (or corrupted
    memory). The driver (``fit.run_sweeps``) raises it before the state is kept, evaluated or
    checkpointed, so no model file holds such a state.

    Args:
        message: what broke, where.
        sweep: the sweeps done when the check ran.
        failed: the names of the broken invariants.

    Attributes:
        sweep: the sweeps done when the check ran (the failure arose in the chunk that ended
            there).
        failed: the names of the broken invariants (each names its table).

    Example:
        >>> from jaxtopics.errors import InvariantError
        >>> error = InvariantError("broken", sweep=30, failed=("word_topic: non-negative",))
        >>> error.sweep, error.failed
        (30, ('word_topic: non-negative',))
    """

    def __init__(self, message: str, sweep: int | None = None, failed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.sweep = sweep
        self.failed = tuple(failed)

    def __reduce__(self):  # keep pickling (e.g. across processes) working
        return (type(self), (str(self), self.sweep, self.failed))


class UnknownWordsWarning(UserWarning):
    """New documents hold words a fitted model does not know; their tokens were dropped."""


class LabelWarning(UserWarning):
    """A label of a labelled model (DP-MRM) can own no topic (its documents have no tokens), so
    documents with only such labels get uniform topic proportions."""


class ShardLayoutWarning(UserWarning):
    """A chain continues on a different number of devices than it ran on: from then on it is a
    different chain than an uninterrupted run (``FittedModel.resume``)."""


def warn_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside this package (the user's call),
    however deep inside jaxtopics the warning is raised."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 2         # stacklevel 2: warn_caller's caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
