"""Talk to lab hosts the way an operator would: podman exec into real systemd hosts (and, to read
their state while a test waits, nsenter: LabHost.peek)."""
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


# What a read on a host runs with (LabHost.peek): the container's own PATH, not the controller's.
PEEK_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
# Each host's init (pid, its start time in clock ticks): a host restarted has a new one.
_INIT: dict = {}


def start_ticks(pid: int):
    """/proc/<pid>/stat's start time, or None when no such process runs."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def frozen(pid: int) -> bool:
    """The process's cgroup is frozen (podman pause): from its freezer, v1 or v2."""
    try:
        lines = Path("/proc/%d/cgroup" % pid).read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        _number, controllers, path = line.split(":", 2)
        if controllers == "freezer":
            state = Path("/sys/fs/cgroup/freezer%s/freezer.state" % path)
            return state.exists() and state.read_text().strip() != "THAWED"
        if controllers == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                flag = Path(root + path + "/cgroup.freeze")
                if flag.exists() and flag.read_text().strip() == "1":
                    return True
    return False


def host_init(container: str):
    """The pid of the container's init on this machine, or None when it does not run."""
    pid, ticks = _INIT.get(container, (0, None))
    if pid and ticks is not None and start_ticks(pid) == ticks:
        return pid
    out = podman("inspect", "-f", "{{.State.Pid}} {{.State.Status}}", container, check=False)
    fields = out.stdout.split()
    if out.returncode != 0 or len(fields) != 2 or fields[1] != "running" or fields[0] == "0":
        _INIT.pop(container, None)
        return None
    pid = int(fields[0])
    _INIT[container] = (pid, start_ticks(pid))
    return pid


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

    def peek(self, cmd, check: bool = False) -> subprocess.CompletedProcess:
        """A read of the host's state (a file, a unit's properties, its journal, its port): the
        command runs in the host's namespaces, entered with nsenter, which costs about 1 ms of
        the controller's CPU where a podman exec costs 120 ms - the tests poll hosts while they
        wait, on two cores the lab's hosts share. For reads only: what it runs is not in the
        host's cgroup. A host that does not run (stopped, paused) is asked through podman exec,
        which answers as it always does."""
        pid = host_init(self.container)
        if pid is None or frozen(pid):
            return self.run(cmd, check=check)
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        proc = subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "--wd=/", "--", *argv],
                              env=PEEK_ENV, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("%s: %s exited %d\nstdout: %s\nstderr: %s" % (
                self.name, cmd, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
        return proc

    def put(self, path: str, content: str, mode: str = "0644") -> None:
        self.run('mkdir -p "$(dirname %s)" && cat > %s && chmod %s %s'
                 % ((shlex.quote(path),) * 2 + (mode, shlex.quote(path))), stdin=content)

    def show(self, unit: str, *props: str) -> dict:
        out = self.peek(["systemctl", "show", unit, "-p", ",".join(props)], check=True).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit: str) -> str:
        return self.peek(["journalctl", "-u", unit, "--no-pager", "-o", "short-precise"]).stdout

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
