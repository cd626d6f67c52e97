"""Talk to lab hosts the way an operator would: podman exec into real systemd hosts."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LABCTL = [sys.executable, str(REPO / "lab" / "labctl.py")]

# Under pytest-xdist each worker has lab hosts and a report folder of its own: the same host
# names (the inventory's ct129, ct200) in containers named for the worker. Set in the
# environment, so labctl, ansible (the lab inventory's ansible_host) and the roles' report
# folder all follow.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER:   # forced: a worker inherits the controller's environment, default set included
    os.environ.update(INFEROPS_LAB_PREFIX="inferops-test-%s-" % WORKER,
                      INFEROPS_REPORT_DIR=str(REPO / "build" / "reports" / WORKER))
PREFIX = os.environ.setdefault("INFEROPS_LAB_PREFIX", "inferops-")
REPORTS = Path(os.environ.setdefault("INFEROPS_REPORT_DIR", str(REPO / "reports")))
# The tests' clock: the stand-in starts in about 1.5 s and the health gate settles 3 s
# (the bench keeps its own fixed figures: lab/sim_defaults.json, 7 s).
os.environ.setdefault("INFEROPS_LAB_SETTLE", "3")
os.environ.setdefault("INFEROPS_LAB_TIMINGS", str(REPO / "lab" / "sim_tests.json"))
ENV = dict(os.environ, CONTAINERS_CONF=str(REPO / "lab" / "containers.conf"))


def labctl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([*LABCTL, *args], env=ENV, capture_output=True, text=True, check=check)


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], env=ENV, capture_output=True, text=True, check=check)


@dataclass
class LabHost:
    name: str

    @property
    def container(self) -> str:
        return PREFIX + self.name

    def run(self, cmd, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        proc = subprocess.run(["podman", "exec", "-i", self.container, *argv], env=ENV,
                              input=stdin, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("%s: %s exited %d\nstdout: %s\nstderr: %s" % (
                self.name, cmd, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
        return proc

    def put(self, path: str, content: str, mode: str = "0644") -> None:
        self.run('mkdir -p "$(dirname %s)" && cat > %s && chmod %s %s'
                 % ((shlex.quote(path),) * 2 + (mode, shlex.quote(path))), stdin=content)

    def show(self, unit: str, *props: str) -> dict:
        out = self.run(["systemctl", "show", unit, "-p", ",".join(props)]).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit: str) -> str:
        return self.run(["journalctl", "-u", unit, "--no-pager", "-o", "short-precise"],
                        check=False).stdout

    def wait_for(self, predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError("%s: timed out after %.0fs waiting for %s" % (self.name, timeout, what))
            time.sleep(interval)

    def gpus(self) -> dict:
        return json.loads(self.run(["cat", "/etc/inferops-lab/gpus.json"]).stdout)
