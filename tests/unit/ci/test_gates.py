"""make test's gate runner: a pytest gate passes only when every collected test ran and
none failed; its counts come from the JUnit files."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("gates", Path(__file__).resolve().parents[2] / "gates.py")
gates = importlib.util.module_from_spec(SPEC)
sys.modules["gates"] = gates   # its dataclasses look their module up there
SPEC.loader.exec_module(gates)


def junit(tmp_path, name, tests, failures=0, errors=0, skipped=0):
    path = tmp_path / name
    path.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="%d" failures="%d" '
                    'errors="%d" skipped="%d"/></testsuites>' % (tests, failures, errors, skipped))
    return path


@pytest.mark.parametrize("files, rc, collected, passed, problem", [
    ([(10, 0, 0, 0)], 0, 10, True, ""),
    ([(4, 0, 0, 0), (6, 0, 0, 0)], 0, 10, True, ""),            # ansible-test: one file per context
    ([(10, 1, 0, 0)], 1, 10, False, ""),                        # a failed test fails through pytest's exit
    ([(7, 0, 0, 0)], 0, 10, False, "7 of 10 collected tests ran"),  # a crashed worker's tests never ran
    ([(0, 0, 0, 0)], 0, 0, False, "no test ran"),
    ([], 0, 10, False, "pytest wrote no results"),
], ids=["all-ran", "several-files", "failed", "worker-crashed", "none-collected", "no-junit"])
def test_a_pytest_gate_passes_only_when_every_collected_test_ran(
        tmp_path, monkeypatch, files, rc, collected, passed, problem):
    paths = [junit(tmp_path, "r%d.xml" % i, *counts) for i, counts in enumerate(files)]
    monkeypatch.setattr(gates, "junit_files", lambda name: paths)
    monkeypatch.setattr(gates, "collected", lambda folder: collected)
    gate = gates.Gate("integration", rc=rc)
    gates.check_counts(gate)
    assert gate.passed is passed
    assert problem in gate.problem


def test_the_table_shows_every_gate_and_the_failed_one():
    counts = {"passed": 96, "failures": 1, "errors": 0, "skipped": 0}
    table = gates.table([gates.Gate("lint", rc=0, seconds=11.2),
                         gates.Gate("integration", rc=1, seconds=600, counts=counts)], 700)
    assert "| lint | passed | 11 |" in table
    assert "| integration | FAILED (exit 1) | 600 | 96 / 1 / 0 / 0 |" in table
    assert table.splitlines()[-1] == "| **all** | FAILED | 700 | |"


def test_a_failures_evidence_is_its_texts_tail_for_the_first_two(tmp_path):
    text = "\n".join("line %d" % i for i in range(100))
    case = '<testcase classname="t" name="row%d"><failure message="first">%s</failure></testcase>'
    path = tmp_path / "r.xml"
    path.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest">%s</testsuite></testsuites>'
                    % "".join(case % (i, text) for i in range(3)))
    evidence = gates.junit_evidence([path])
    assert len(evidence) == 2 and evidence[0].startswith("---- t::row0 (the last 40 lines of its failure)")
    assert evidence[0].splitlines()[1:] == ["line %d" % i for i in range(60, 100)]


@pytest.mark.parametrize("files, passed, problem", [
    ([10, 10], True, ""),
    ([10], False, "10 of 20 collected tests ran"),   # one ansible-core's units never ran
], ids=["each-ansible-core-ran", "one-missing"])
def test_the_matrix_gate_counts_the_unit_tests_once_per_ansible_core(tmp_path, monkeypatch, files, passed, problem):
    """Its JUnit files are those of each ansible-core's copy; it must reach the collected count
    once per pair of INFEROPS_MATRIX."""
    for core, tests in zip(("2.20", "2.21"), files):
        folder = tmp_path / "build" / "matrix" / core / gates.COPY_JUNIT.rsplit("/", 1)[0]
        folder.mkdir(parents=True)
        junit(folder, "python-units.xml", tests)
    monkeypatch.setattr(gates, "REPO", tmp_path)
    monkeypatch.setattr(gates, "collected", lambda folder: 10)
    monkeypatch.setenv("INFEROPS_MATRIX", "2.20:3.12 2.21:3.13")
    gate = gates.Gate("matrix", rc=0)
    gates.check_counts(gate)
    assert (gate.passed, gate.counts["tests"]) == (passed, sum(files)) and problem in gate.problem
