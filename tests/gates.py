"""Run CI's gates (`make test`) and end with a table of each gate's wall time and test counts.

    python tests/gates.py setup lint sanity units fidelity integration+molecule

Each argument is one gate, a make target; gates joined with "+" run side by side (they use
lab hosts of their own), the first one's output streamed, the others' kept in
build/gates/<gate>.log and printed when they end. Every gate runs even after one failed, so
that the table shows them all; the exit status is 1 if any failed.

A pytest gate writes JUnit files (build/gates/<gate>.xml via PYTEST_ADDOPTS; ansible-test
units its own, one per test context). Its counts are read from them, and the gate fails if
there are none (pytest never ran), if they count no test, or fewer tests than pytest collects
in the gate's folder (a crashed worker's tests that never ran).
"""
from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "build" / "gates"
# The gates whose make target runs pytest, and the folder it collects.
PYTEST_GATES = {"unit": "tests/unit", "units": "tests/unit", "fidelity": "tests/fidelity",
                "integration": "tests/integration", "package": "tests/packaging", "matrix": "tests/unit"}
# Gates that write their own JUnit files (ansible-test units, in its copy of the collection; the
# matrix's, in one copy per ansible-core), as globs under the repository.
COPY_JUNIT = "ansible_collections/inferops/sglang/tests/output/junit/*.xml"
OWN_JUNIT = {"units": "build/sanity/" + COPY_JUNIT, "matrix": "build/matrix/*/" + COPY_JUNIT}


def runs_of(name: str) -> int:
    """How many times the gate runs its folder's tests: the matrix once per ansible-core of
    MATRIX (the Makefile exports it as INFEROPS_MATRIX)."""
    return len(os.environ.get("INFEROPS_MATRIX", "").split()) if name == "matrix" else 1


@dataclass
class Gate:
    name: str
    rc: int | None = None
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)
    problem: str = ""
    failures: list = field(default_factory=list)
    evidence: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.rc == 0 and not self.problem


def junit_path(name: str) -> Path:
    return OUT / (name + ".xml")


def junit_files(name: str) -> list[Path]:
    if name in OWN_JUNIT:
        return sorted(REPO.glob(OWN_JUNIT[name]))
    return [junit_path(name)] if junit_path(name).exists() else []


def gate_env(name: str) -> dict:
    env = dict(os.environ)
    if name in PYTEST_GATES and name not in OWN_JUNIT:
        env["PYTEST_ADDOPTS"] = ("%s --junitxml=%s" % (env.get("PYTEST_ADDOPTS", ""), junit_path(name))).strip()
    return env


def start(name: str, stream: bool) -> subprocess.Popen:
    junit_path(name).unlink(missing_ok=True)
    out = None if stream else (OUT / (name + ".log")).open("w")
    return subprocess.Popen(["make", "--no-print-directory", name], cwd=REPO, env=gate_env(name),
                            stdout=out, stderr=subprocess.STDOUT if out else None)


def junit_counts(paths: list[Path]) -> dict:
    """passed/failed/errors/skipped over every suite of some JUnit files."""
    suites = []
    for path in paths:
        root = ET.parse(path).getroot()
        suites += [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
    total["passed"] = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    return total


def failed_cases(paths: list[Path]):
    """(test id, failure or error element) of every failed or erroring test case, in file order."""
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            for bad in list(case.findall("failure")) + list(case.findall("error")):
                yield "%s::%s" % (case.get("classname", ""), case.get("name", "")), bad


def junit_failures(paths: list[Path]) -> list[str]:
    """One line per failed or erroring test case: its id and the first line of its message.

    CI keeps only the tail of the output, so the names of what failed must come after the table."""
    lines = []
    for case, bad in failed_cases(paths):
        message = (bad.get("message") or bad.text or "").strip().splitlines()
        lines.append("%s: %s" % (case, message[0][:300] if message else bad.tag))
    return lines


def junit_evidence(paths: list[Path], failures: int = 2, lines: int = 40) -> list[str]:
    """The evidence of the first `failures` failed test cases: the last `lines` lines of each
    one's failure text (a row's hang guard puts what the host said there), bounded so that the
    names printed after it stay in the tail CI keeps."""
    out = []
    for case, bad in itertools.islice(failed_cases(paths), failures):
        text = (bad.text or bad.get("message") or "").rstrip().splitlines()
        out.append("---- %s (the last %d lines of its failure)\n%s" % (
            case, lines, "\n".join(line[:300] for line in text[-lines:])))
    return out


def collected(folder: str) -> int:
    """How many tests pytest collects in a folder (the count a run must reach)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", folder],
                          cwd=REPO, capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTEST_ADDOPTS=""))
    match = re.search(r"(\d+) tests? collected", proc.stdout)
    return int(match.group(1)) if match else 0


def check_counts(gate: Gate) -> None:
    paths = junit_files(gate.name)
    if not paths:
        gate.problem = "pytest wrote no results"
        return
    gate.counts = junit_counts(paths)
    gate.failures = junit_failures(paths)
    gate.evidence = junit_evidence(paths)
    wanted = collected(PYTEST_GATES[gate.name]) * runs_of(gate.name)
    if gate.counts["tests"] == 0:
        gate.problem = "no test ran"
    elif gate.counts["tests"] < wanted:
        gate.problem = "%d of %d collected tests ran (a worker crashed?)" % (gate.counts["tests"], wanted)


def run_group(names: list[str]) -> list[Gate]:
    gates = [Gate(name) for name in names]
    started = time.monotonic()
    procs = [start(name, stream=(i == 0)) for i, name in enumerate(names)]
    pending = dict(zip(names, procs))
    while pending:
        for gate in gates:
            proc = pending.get(gate.name)
            if proc is not None and proc.poll() is not None:
                gate.rc, gate.seconds = proc.returncode, time.monotonic() - started
                del pending[gate.name]
        time.sleep(0.5)
    for gate in gates[1:]:
        print("\n==== %s (ran beside %s) ====" % (gate.name, names[0]), flush=True)
        print((OUT / (gate.name + ".log")).read_text(errors="replace"), flush=True)
    for gate in gates:
        if gate.name in PYTEST_GATES:
            check_counts(gate)
    return gates


def table(gates: list[Gate], wall: float) -> str:
    rows = ["| gate | result | wall s | tests passed / failed / errors / skipped |", "|---|---|---:|---|"]
    for gate in gates:
        counts = gate.counts
        tests = "%(passed)d / %(failures)d / %(errors)d / %(skipped)d" % counts if counts else ""
        result = "passed" if gate.passed else ("FAILED (exit %s)" % gate.rc) + (": " + gate.problem if gate.problem else "")
        rows.append("| %s | %s | %.0f | %s |" % (gate.name, result, gate.seconds, tests))
    rows.append("| **all** | %s | %.0f | |" % ("passed" if all(g.passed for g in gates) else "FAILED", wall))
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    started, gates = time.monotonic(), []
    for arg in argv:
        group = arg.split("+")
        print("\n==== gate: %s ====" % " beside ".join(group), flush=True)
        gates += run_group(group)
    text = table(gates, time.monotonic() - started)
    (OUT / "times.md").write_text(text + "\n")
    print("\nmake test: gate times (side-by-side gates share their start; build/gates/times.md)\n" + text)
    for gate in gates:
        for text in gate.evidence:
            print(text)
    for gate in gates:
        for line in gate.failures:
            print("%s FAILED %s" % (gate.name, line))
    return 0 if all(g.passed for g in gates) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
