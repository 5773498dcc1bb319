"""A persistent cache of compiled programs, so a second run skips XLA's compilation.

Compilation is most of a small fit's wall time (a model's sweeps are one large jitted
program). JAX can keep compiled executables on disk, keyed by the program, its shapes, the
backend and XLA's flags (``jax_compilation_cache_dir``); a later process that builds the same
program loads it instead of compiling it. The command line turns this on by default, under
``$JAXTOPICS_CACHE/xla`` (default ``~/.cache/jaxtopics/xla``); in Python call
:func:`use_compilation_cache` once before fitting. The cache only ever saves time: a missing,
stale or unwritable entry is compiled again. Delete the folder to clear it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import ParameterError

__all__ = ["ENV", "default_dir", "use_compilation_cache"]

#: the environment variable that moves the cache (a folder) or turns it off ("off")
ENV = "JAXTOPICS_COMPILE_CACHE"
#: values of the setting that turn the cache off
OFF = ("off", "none", "0", "false", "no")
#: programs that compile faster than this are not stored, unless
#: ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise. 0: every program. A fit also
#: runs dozens of small programs (init, counts, read-outs: ~20 ms to compile each, ~1 ms to
#: load); storing them took 0.3-0.8 s off a cached `jaxtopics fit` on Tweet (LDA 3.1 -> 2.4 s
#: without pictures) for a few hundred kB of disk
MIN_COMPILE_SECONDS = 0.0


def default_dir() -> Path | None:
    """Where the cache lives by default.

    Returns:
        ``$JAXTOPICS_COMPILE_CACHE`` (None when it says "off"), else ``xla`` inside jaxtopics'
        cache folder (``$JAXTOPICS_CACHE``, else ``$XDG_CACHE_HOME/jaxtopics``, else
        ``~/.cache/jaxtopics``).
    """
    setting = os.environ.get(ENV)
    if setting is not None and setting.strip():
        return None if setting.strip().lower() in OFF else Path(setting).expanduser()
    from .datasets import cache_dir
    return cache_dir() / "xla"


def use_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Keep compiled programs on disk for this process and later ones.

    A cache JAX already uses (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is kept as it is.
    Call before the first fit: programs compiled earlier in the process are not stored.

    Args:
        path: the folder (created if missing); None: :func:`default_dir`; "off": none.

    Returns:
        The folder in use, or None when the cache is off.

    Raises:
        ParameterError: `path` exists and is not a folder, or cannot be created or written in.

    Example:
        >>> import jaxtopics as jt
        >>> jt.use_compilation_cache("off") is None
        True
    """
    import jax
    if path is not None and str(path).strip().lower() in OFF:
        return None
    current = jax.config.jax_compilation_cache_dir
    if current:
        return Path(current)
    folder = default_dir() if path is None else Path(path).expanduser()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ParameterError(f"compilation cache {str(folder)!r}: cannot create the folder "
                             f"({e.strerror or e}); give another folder or 'off' "
                             f"(${ENV}, --compile-cache)") from None
    try:            # a folder JAX cannot write in would warn once per program (review)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ParameterError(f"compilation cache {str(folder)!r}: cannot write in the folder "
                             f"({e.strerror or e}); give another folder or 'off' "
                             f"(${ENV}, --compile-cache)") from None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:    # a user's setting wins
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in os.environ:
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
