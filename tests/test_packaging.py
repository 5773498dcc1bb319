"""The package as a user installs it: a wheel built from the sources (``python -m build
--wheel``), installed in a fresh venv, runs ``jaxtopics demo``; it carries LICENSE, py.typed
and the one version (``jaxtopics/_version.py``).

The fresh venv takes jaxtopics from the wheel only. Its dependencies (jax, numpy, ...) come
from this test's own environment through a ``.pth`` line (no download, a few seconds): not
``--system-site-packages``, which gives the base interpreter's packages, without jax when the
tests run in a venv. A ``.pth`` line adds a directory but runs none of the ``.pth`` files in it,
so an editable install of jaxtopics there is not seen: the test checks that the imported
package is the installed wheel. Building needs setuptools >= 77 in build's isolated
environment (from the package index, or pip's cache): without it the test skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import jaxtopics

ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_version_has_one_source() -> None:
    version_file = (ROOT / "jaxtopics" / "_version.py").read_text(encoding="utf-8")
    assert f'__version__ = "{jaxtopics.__version__}"' in version_file
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject.split("[tool")[0]
    assert (ROOT / "jaxtopics" / "py.typed").exists()
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert 'license = "MIT"' in pyproject


def test_wheel_installs_in_a_fresh_venv_and_runs_the_demo(tmp_path) -> None:
    pytest.importorskip("build")
    src = tmp_path / "src"                 # a copy: the build's own files stay out of the tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "jaxtopics", src / "jaxtopics",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", src],
                 cwd=tmp_path)
    if built.returncode != 0 and "setuptools" in built.stdout + built.stderr and (
            "No matching distribution" in built.stdout + built.stderr
            or "Could not find a version" in built.stdout + built.stderr):
        pytest.skip("build's isolated environment cannot get setuptools >= 77 (offline)")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("jaxtopics-*.whl")
    assert wheel.name.startswith(f"jaxtopics-{jaxtopics.__version__}-")

    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path).stdout.strip())
    (site / "_jaxtopics_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --ignore-installed: where the test environment has jaxtopics installed as a wheel (CI),
    # pip would see it through the .pth line and install nothing
    installed = _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
                      wheel], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr

    probe = _run([python, "-c", "import importlib.metadata as m, importlib.resources as r, jaxtopics;"
                  "print(jaxtopics.__file__); print(jaxtopics.__version__, m.version('jaxtopics'));"
                  "print(r.files('jaxtopics').joinpath('py.typed').is_file());"
                  "print(m.metadata('jaxtopics')['License-Expression'])"], cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    where, versions, typed, license_ = probe.stdout.split("\n")[:4]
    assert Path(where).resolve().is_relative_to(site.resolve())
    assert versions == f"{jaxtopics.__version__} {jaxtopics.__version__}"
    assert typed == "True" and license_ == "MIT"

    script = venv / ("Scripts/jaxtopics.exe" if os.name == "nt" else "bin/jaxtopics")
    demo = _run([script, "demo", "--max-docs", "60", "--sweeps", "5", "--eval-every", "5",
                 "--no-progress", "--devices", "1"], cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "Traceback" not in demo.stderr and "share of tokens" in demo.stdout, demo.stdout
