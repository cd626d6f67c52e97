"""tests/matrix.py, the ansible-core matrix's runner: its pairs, and the Python it finds."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("matrix", Path(__file__).resolve().parents[2] / "matrix.py")
matrix = importlib.util.module_from_spec(SPEC)
sys.modules["matrix"] = matrix
SPEC.loader.exec_module(matrix)


@pytest.mark.parametrize("pair, parsed", [("2.20:3.12", ("2.20", "3.12")), ("2.21:3.13", ("2.21", "3.13"))])
def test_a_pair_is_an_ansible_core_and_a_python(pair, parsed):
    assert matrix.parse(pair) == parsed


@pytest.mark.parametrize("pair", ["2.20", "2.20.1:3.12", "2.20:2.7", ":3.12"])
def test_a_pair_written_otherwise_says_how_to_write_it(pair):
    with pytest.raises(matrix.MatrixError, match="<ansible-core>:<python>, for example 2.20:3.12"):
        matrix.parse(pair)


def test_a_python_found_nowhere_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(matrix.shutil, "which", lambda name: None)
    with pytest.raises(matrix.MatrixError, match=r"no Python 3\.99: install it .*pyenv install 3\.99"):
        matrix.interpreter("3.99")


def test_pyenvs_newest_release_of_a_python_comes_first(tmp_path, monkeypatch):
    for version in ("3.12.1", "3.12.10", "3.12.9", "3.13.0"):
        (tmp_path / "versions" / version / "bin").mkdir(parents=True)
    monkeypatch.setattr(matrix.shutil, "which", lambda name: "/usr/bin/pyenv" if name == "pyenv" else None)
    monkeypatch.setattr(matrix.subprocess, "run", lambda *a, **k: type("P", (), {"stdout": str(tmp_path)})())
    newest_first = [str(tmp_path / "versions" / v / "bin" / "python3.12") for v in ("3.12.10", "3.12.9", "3.12.1")]
    assert matrix.pyenv_pythons("3.12") == newest_first
