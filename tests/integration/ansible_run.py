"""Run the collection's modules and playbooks the way a user does (the ansible CLI, this
checkout's ansible.cfg, the lab inventory) and hand back the structured results."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAB_INVENTORY = str(REPO / "inventory" / "lab")
# The tests reach the lab hosts as production is reached, over SSH with ControlPersist: the
# connection settings alone are a last -i source (`labctl inventory --ssh --no-hosts`), so the
# hosts an inventory of a test's own adds are reached that way too. Each task is then a channel
# of the host's one connection instead of a `podman exec` (240 ms of CPU per task against 390 ms
# on a 40-task playbook, and tasks are most of what the integration gate's two cores do). The
# tests that kill or freeze a controller or a host mid-run (test_guard, spawn_deploy in
# test_fault_matrix) keep the lab inventory's podman connection: a frozen host is unreachable
# at once there, where SSH waits for it.
SSH_VARS = REPO / "build" / "lab-ssh-vars.yml"
_SSH_VARS_MADE: list[bool] = []


def ssh_vars_inventory() -> str:
    """The SSH connection settings as an inventory file (written once per process, atomically:
    every worker writes the same text)."""
    if not _SSH_VARS_MADE:
        SSH_VARS.parent.mkdir(exist_ok=True)
        text = subprocess.run([sys.executable, str(REPO / "lab" / "labctl.py"), "inventory", "--ssh", "--no-hosts"],
                              check=True, capture_output=True, text=True).stdout
        scratch = SSH_VARS.with_name("%s.%d" % (SSH_VARS.name, os.getpid()))
        scratch.write_text(text)
        scratch.replace(SSH_VARS)
        _SSH_VARS_MADE.append(True)
    return str(SSH_VARS)


def _env(extra=None):
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               CONTAINERS_CONF=str(REPO / "lab" / "containers.conf"))
    # (A host first named by an inventory of a test's own would look for it beside that one.)
    env.setdefault("INFEROPS_WHEELHOUSE", str(REPO / "build" / "wheelhouse"))
    env.update(extra or {})
    return env


def run_module(host: str, module: str, args: dict, check: bool = False, inventory: tuple = ()) -> dict:
    """One module on one lab host; returns the module's result (its `failed` key set on failure).
    `inventory`: sources after the lab's (a host the lab's own inventory does not name)."""
    sources = [arg for source in (LAB_INVENTORY, ssh_vars_inventory()) + tuple(inventory) for arg in ("-i", source)]
    cmd = [str(BIN / "ansible"), host] + sources + ["-m", module]
    if args:
        cmd += ["-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True, check=False)
    try:
        data = json.loads(proc.stdout)
        return data["plays"][0]["tasks"][0]["hosts"][host]
    except (ValueError, KeyError, IndexError) as exc:
        raise AssertionError("ansible %s gave no result (rc %d): %s\n%s" % (
            module, proc.returncode, exc, (proc.stdout + proc.stderr)[-3000:])) from exc


def run_playbook(playbook: str, limit: str | None = None, extra_vars: dict | None = None,
                 json_output: bool = False, inventory: str | tuple = LAB_INVENTORY,
                 check_diff: bool = False, controller: Path = BIN) -> subprocess.CompletedProcess:
    """`inventory`: one source, or several (a later one's group variables win). `controller`:
    the bin folder of the ansible-core that runs it (the matrix's venvs; default: the tests')."""
    sources = ((inventory,) if isinstance(inventory, str) else inventory) + (ssh_vars_inventory(),)
    cmd = [str(controller / "ansible-playbook"), *(arg for src in sources for arg in ("-i", src)), playbook]
    if check_diff:
        cmd += ["--check", "--diff"]
    if limit:
        cmd += ["-l", limit]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    env = _env() if json_output else _env({"ANSIBLE_STDOUT_CALLBACK": "default"})
    began = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    log_the_run(playbook, limit, time.monotonic() - began, proc.returncode)
    return proc


def log_the_run(playbook: str, limit: str | None, seconds: float, returncode: int) -> None:
    """Each playbook run's seconds, by test, in build/playbook-runs.tsv: where the integration
    gate's time goes (make integration starts it empty)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    with open(REPO / "build" / "playbook-runs.tsv", "a") as table:
        table.write("%s\t%s\t%s\t%.1f\t%d\n" % (test, playbook, limit or "", seconds, returncode))


def process_tree(root: int) -> list:
    """root and every process descended from it (from /proc/*/stat)."""
    children = {}
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        try:
            with open("/proc/%s/stat" % entry) as fh:
                children.setdefault(int(fh.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [root]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def kill_run(pid: int) -> None:
    """An ansible-playbook run dies as its machine would: its main process and every process it
    started, at once (its workers call setsid: its process group alone would leave one to finish
    its task)."""
    for each in process_tree(pid):
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass
