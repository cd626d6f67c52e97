"""The ansible-core matrix: ansible-test sanity and the unit tests on each ansible-core release
the collection supports beside the development set's (2.19 on Python 3.11, `make sanity units`),
each on a controller Python that release supports.

    python tests/matrix.py venvs 2.20:3.12 2.21:3.13     # a controller venv per pair (cached)
    python tests/matrix.py check 2.20:3.12 2.21:3.13     # sanity and units per pair, side by side

Each pair gets a venv in /var/cache/inferops-sglang/matrix (ansible-core from PyPI, built
once) and a copy of the collection of its own (build/matrix/<core>/ansible_collections/
inferops/sglang: what git tracks, as `make collection-copy` makes it), so that their
ansible-test runs and `make units`' never share a tests/output. The interpreters come from PATH
(python3.12) or from pyenv. Each pair's output is in build/matrix/<core>.log; the check ends
with a table and exits 1 if any pair failed.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path("/var/cache/inferops-sglang/matrix")
OUT = REPO / "build" / "matrix"


class MatrixError(Exception):
    """A pair that cannot be set up, with what to change."""


def parse(pair: str) -> tuple[str, str]:
    core, sep, python = pair.partition(":")
    if not sep or core.count(".") != 1 or not python.startswith("3."):
        raise MatrixError("%r: write each pair as <ansible-core>:<python>, for example 2.20:3.12" % pair)
    return core, python


def interpreter(python: str) -> str:
    """python<X.Y> on PATH when it runs, else pyenv's newest X.Y."""
    name = "python" + python
    for candidate in [shutil.which(name)] + pyenv_pythons(python):
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    raise MatrixError("no Python %s: install it (Debian's python%s, or `pyenv install %s`)" % (python, python, python))


def pyenv_pythons(python: str) -> list[str]:
    pyenv = shutil.which("pyenv")
    if not pyenv:
        return []
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False).stdout.strip()
    versions = sorted((Path(root) / "versions").glob(python + ".*"),
                      key=lambda p: [int(x) for x in p.name.split(".") if x.isdigit()], reverse=True)
    return [str(v / "bin" / ("python" + python)) for v in versions]


def venv_path(core: str, python: str) -> Path:
    return CACHE / ("ansible-core-%s-py%s" % (core, python))


def venv(core: str, python: str) -> Path:
    """The pair's controller venv: ansible-core <core>.*, built once (a stamp names the release)."""
    where = venv_path(core, python)
    if (where / ".ready").is_file():
        return where
    partial = where.with_name(where.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    run([interpreter(python), "-m", "venv", str(partial)])
    run([str(partial / "bin" / "pip"), "install", "-q", "ansible-core==%s.*" % core])
    shutil.rmtree(where, ignore_errors=True)
    partial.rename(where)
    # (A venv's scripts name its folder: those of the partial one would run nothing once moved.)
    for script in (where / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            text = script.read_bytes()
            if text.startswith(b"#!") and str(partial).encode() in text:
                script.write_bytes(text.replace(str(partial).encode(), str(where).encode()))
    version = subprocess.run([str(where / "bin" / "ansible"), "--version"], capture_output=True, text=True,
                             check=True).stdout.splitlines()[0]
    (where / ".ready").write_text(version + "\n")
    return where


def run(argv: list[str], **kwargs) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if proc.returncode != 0:
        raise MatrixError("%s failed (rc %d): %s" % (" ".join(argv), proc.returncode,
                                                     (proc.stderr or proc.stdout).strip()[-2000:]))


def collection_copy(core: str) -> Path:
    """The copy `make collection-copy` makes for sanity, at build/matrix/<core> instead."""
    root = OUT / core
    run(["make", "--no-print-directory", "collection-copy", "SANITY_ROOT=%s" % root.relative_to(REPO)], cwd=REPO)
    return root / "ansible_collections" / "inferops" / "sglang"


def check(core: str, python: str, results: dict) -> None:
    """sanity, then units, in the pair's copy; what it said in build/matrix/<core>.log."""
    started = time.monotonic()
    log = OUT / ("%s.log" % core)
    try:
        bin_dir = venv(core, python) / "bin"
        dest = collection_copy(core)
        with log.open("w") as out:
            rcs = []
            for test in ("sanity", "units"):
                out.write("==== ansible-test %s, ansible-core %s, Python %s\n" % (test, core, python))
                out.flush()
                rcs.append(subprocess.run([str(bin_dir / "ansible-test"), test, "--local", "--python", python,
                                           "--requirements", "--color", "no"], cwd=dest, stdout=out,
                                          stderr=subprocess.STDOUT, check=False).returncode)
        results[core] = (rcs, time.monotonic() - started, "")
    except MatrixError as exc:
        results[core] = ([None, None], time.monotonic() - started, str(exc))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("venvs", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        pairs = [parse(pair) for pair in argv[1:]]
        if argv[0] == "venvs":
            for core, python in pairs:
                print("matrix: ansible-core %s on Python %s: %s" % (core, python, venv(core, python)))
            return 0
    except MatrixError as exc:
        print("matrix: %s" % exc, file=sys.stderr)
        return 1
    # (A pair no longer in the matrix leaves no copy whose results make test would count.)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    results: dict = {}
    threads = [threading.Thread(target=check, args=(core, python, results)) for core, python in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = ["| ansible-core | Python | sanity | units | s |", "|---|---|---|---|---:|"]
    for core, python in pairs:
        rcs, seconds, problem = results[core]
        said = ["passed" if rc == 0 else ("FAILED (rc %s)" % rc if rc is not None else "not run") for rc in rcs]
        rows.append("| %s | %s | %s | %s | %.0f |" % (core, python, said[0], said[1], seconds))
        if problem or any(rc != 0 for rc in rcs):
            tail = (OUT / ("%s.log" % core)).read_text(errors="replace").splitlines()[-40:] if not problem else []
            print("---- ansible-core %s: %s" % (core, problem or "the last lines of build/matrix/%s.log" % core))
            print("\n".join(tail))
    print("\n".join(rows))
    return 0 if all(not results[c][2] and results[c][0] == [0, 0] for c, _p in pairs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
