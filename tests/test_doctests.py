"""The API reference (issue 32): every ``>>>`` example in a docstring under jaxtopics/ runs as a
doctest, one test per module; and the public API keeps its one docstring style (Google:
``Args:``, ``Returns:``, ``Raises:``, ``Example:``; see docs/api.md), so it cannot silently rot.

The public surface checked: ``jaxtopics.__all__`` and the ``__all__`` of the modules in
``PUBLIC_MODULES`` (their own functions and classes, and those classes' public methods and
properties). A function that takes arguments names each of them in its ``Args:`` section (an
entry may name several, ``a, b: ...``); one that returns something has ``Returns:`` (or
``Yields:``); a class whose constructor takes arguments lists them under ``Args:`` (or, for a
record type whose constructor arguments are its fields, under ``Attributes:``). A property
documents its value in its first line.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
import textwrap

import pytest

import jaxtopics

MODULES = ["jaxtopics"] + sorted(
    info.name for info in pkgutil.walk_packages(jaxtopics.__path__, "jaxtopics."))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: the modules whose ``__all__`` is the public API (besides ``jaxtopics.__all__``)
PUBLIC_MODULES = ("corpus", "fitted", "model_files", "selection", "evaluation", "metrics",
                  "coherence", "hyper", "learned_priors", "datasets", "text", "io", "processes",
                  "distributed", "fit", "new_documents", "errors", "estimators", "compile_cache",
                  "plot", "sparse", "interop", "sklearn")
#: public modules that need an optional package (extra ``interop``): skipped where it is missing
OPTIONAL = {"sklearn": "sklearn"}
#: public modules whose docstrings are still to be converted, not checked yet: move one to
#: PUBLIC_MODULES once converted (its names in jaxtopics.__all__ are then checked too)
PENDING: tuple[str, ...] = ()


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    if name.removeprefix("jaxtopics.") in OPTIONAL:
        pytest.importorskip(OPTIONAL[name.removeprefix("jaxtopics.")])
    module = importlib.import_module(name)
    monkeypatch.chdir(tmp_path)                # an example that saves a model file writes here
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, (f"{runner.failures} of {runner.tries} examples of {name} "
                                  "failed:\n" + "".join(report))


# -- the docstring style of the public API -----------------------------------------------------

_SECTION = re.compile(r"^(Args|Arguments|Attributes|Returns|Yields|Raises|Example|Examples|Note|"
                      r"Notes|See Also|Warning|Warns|References):\s*$")


def _sections(doc: str) -> dict[str, list[str]]:
    """{section name: its lines} of a Google-style docstring (``inspect.getdoc`` text)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        m = _SECTION.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None and (not line or line.startswith(" ")):
            current.append(line)
        else:
            current = None
    return out


def _documented_names(lines: list[str]) -> set[str]:
    """The names an ``Args:``/``Attributes:`` section documents: those before the colon of each
    entry (the section's least indented lines), ``a, b (int): ...`` naming a and b."""
    entries = [ln for ln in lines if ln.strip()]
    if not entries:
        return set()
    indent = min(len(ln) - len(ln.lstrip()) for ln in entries)
    names: set[str] = set()
    for ln in entries:
        if len(ln) - len(ln.lstrip()) == indent and ":" in ln:
            head = re.sub(r"\([^)]*\)", "", ln.split(":", 1)[0])
            names.update(n.strip().lstrip("*") for n in head.split(","))
    return names


def _own_body_returns(fn) -> bool:
    """Whether `fn`'s source returns a value or yields (nested functions aside)."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return False
    node = ast.parse(source).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if node.returns is not None:
        return ast.unparse(node.returns) not in ("None", "NoReturn")
    stack = list(node.body)
    while stack:
        sub = stack.pop()
        if isinstance(sub, (ast.Return,)) and sub.value is not None:
            return True
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(sub))
    return False


def _parameters(fn, bound: bool) -> list[str]:
    """`fn`'s parameter names (``*args``/``**kwargs`` by their names), less self / cls."""
    names = list(inspect.signature(fn).parameters)
    return names[1:] if bound and names and names[0] in ("self", "cls") else names


def _public_surface() -> dict[str, object]:
    """{qualified name: object} of every public function, class, method and property."""
    found: dict[str, object] = {}
    seen: set[int] = set()

    def add(qualname: str, obj: object) -> None:
        if id(obj) in seen:                    # an alias (metrics.nmi = normalized_mutual_info)
            return
        seen.add(id(obj))
        found[qualname] = obj
        if inspect.isclass(obj):            # its public methods, inherited ones too (fit)
            for klass in obj.__mro__:
                if not klass.__module__.startswith("jaxtopics"):
                    continue
                for attr, value in vars(klass).items():
                    if attr.startswith("_") or not isinstance(value, (
                            property, functools.cached_property, classmethod, staticmethod)) and not (
                            inspect.isfunction(value)) or id(value) in seen:
                        continue
                    seen.add(id(value))
                    found[f"{qualname}.{attr}"] = value

    for short in PUBLIC_MODULES:
        if short in OPTIONAL and importlib.util.find_spec(OPTIONAL[short]) is None:
            continue
        module = importlib.import_module(f"jaxtopics.{short}")
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and getattr(obj, "__module__", None) == module.__name__:   # not re-exports
                add(f"{short}.{name}", obj)
    for name in jaxtopics.__all__:
        obj = getattr(jaxtopics, name)
        if inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj)):
            home = obj.__module__.removeprefix("jaxtopics.")
            assert home in PUBLIC_MODULES + PENDING, f"jaxtopics.{name} comes from {home}: list it"
            if home not in PENDING:
                add(f"{home}.{name}", obj)
    return found


def _style_problems(qualname: str, obj: object) -> list[str]:
    if isinstance(obj, (property, functools.cached_property)):
        fn = obj.fget if isinstance(obj, property) else obj.func
        return [] if inspect.getdoc(fn) else [f"{qualname}: no docstring"]
    bound = qualname.count(".") >= 2 and not isinstance(obj, staticmethod)   # a method
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    doc = inspect.getdoc(obj) if inspect.isclass(obj) else inspect.getdoc(inspect.unwrap(obj))
    if not doc:
        return [f"{qualname}: no docstring"]
    sections = _sections(doc)
    problems = []
    if inspect.isclass(obj):
        if "__init__" not in vars(obj) and "__new__" not in vars(obj):
            return []                          # the constructor of a base class, checked there
        try:
            params = [p for p in inspect.signature(obj).parameters]
        except (TypeError, ValueError):
            params = []
        listed = _documented_names(sections.get("Args", []) + sections.get("Attributes", []))
    else:
        fn = inspect.unwrap(obj)
        params = _parameters(fn, bound)
        listed = _documented_names(sections.get("Args", []))
        if _own_body_returns(fn) and not ("Returns" in sections or "Yields" in sections):
            problems.append(f"{qualname}: no Returns: section")
    missing = [p for p in params if p not in listed]
    if missing:
        problems.append(f"{qualname}: arguments not in its Args: section: {missing}")
    return problems


def test_public_api_docstrings_follow_the_style():
    surface = _public_surface()
    assert len(surface) > 100, sorted(surface)
    problems = [p for qualname, obj in sorted(surface.items()) for p in _style_problems(qualname, obj)]
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


def test_one_docstring_style():
    """No numpydoc sections (``Parameters`` over a dashed line) anywhere in the package."""
    numpydoc = re.compile(r"^\s*(Parameters|Returns|Examples?|Raises)\s*\n\s*-{3,}\s*$", re.M)
    offenders = [name for name in MODULES
                 if numpydoc.search(inspect.getsource(importlib.import_module(name)))]
    assert not offenders, offenders
