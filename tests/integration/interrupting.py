"""A playbook run in the background, interrupted at a moment a test names, the way a user or a
machine interrupts one: Ctrl-C, or the death of the controller's machine (kill_run)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import warnings

from tests.integration.ansible_run import BIN, LAB_INVENTORY, REPO, _env, kill_run

# A hang guard: the moment to interrupt, and the end of the run after it, on two busy cores.
WAIT_S = 120


# ansible-playbook as its own entry point runs it, with Python's faulthandler on SIGUSR1: each
# thread's stack, for a run that does not end when it should.
LAUNCH = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
          "sys.argv[0] = %r; from ansible.cli.playbook import main; sys.exit(main())" % str(BIN / "ansible-playbook"))
# A Ctrl-C ends ansible-playbook in about a second; past this, the row says where it was and presses
# Ctrl-C again, as its user would (ansible-core's second SIGINT ends the controller at once).
AGAIN_AFTER_S = 30


def start_deploy(limit, playbook, extra, inventory=(LAB_INVENTORY,)):
    """A playbook in the background; its output lines gather in proc.lines as they come."""
    sources = [arg for source in inventory for arg in ("-i", source)]
    cmd = [sys.executable, "-c", LAUNCH] + sources + ["playbooks/%s.yml" % playbook, "-l", limit, "-e",
                                                      json.dumps(extra)]
    proc = subprocess.Popen(cmd, cwd=REPO, env=_env({"ANSIBLE_STDOUT_CALLBACK": "default"}),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    proc.lines = []
    proc.reader = threading.Thread(target=lambda: proc.lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    proc.reader.start()
    return proc


def interrupted(host, when, interrupt, playbook, extra, limit=None, inventory=(LAB_INVENTORY,)):
    """A playbook on `limit` (the host's name), and `interrupt(proc)` once `when(host, proc)` holds;
    returns the ended playbook (returncode, stdout)."""
    proc = start_deploy(limit or host.name, playbook, extra, inventory)
    try:
        host.wait_for(lambda: when(host, proc), WAIT_S, 0.2, "the moment to interrupt the deploy")
        interrupt(proc)
        if sigint in (interrupt, getattr(interrupt, "__wrapped__", None)):
            ctrl_c_again_if_it_goes_on(proc)
        proc.wait(timeout=WAIT_S)
        proc.reader.join(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(proc.lines))


def ctrl_c_again_if_it_goes_on(proc):
    """A Ctrl-C that did not end the run (seen in two full make test runs, never in a row run alone):
    its stacks, said as a warning in the test summary, then a second Ctrl-C."""
    try:
        proc.wait(timeout=AGAIN_AFTER_S)
        return
    except subprocess.TimeoutExpired:
        pass
    seen = len(proc.lines)
    proc.send_signal(signal.SIGUSR1)

    def stacks_said():
        return any(line.startswith(("Thread 0x", "Current thread 0x")) for line in proc.lines[seen:])
    deadline = time.monotonic() + 10
    while not stacks_said() and time.monotonic() < deadline:
        proc.reader.join(0.1)
    warnings.warn("ansible-playbook went on %d s after a Ctrl-C; a second one was sent. Its last lines and its "
                  "stacks:\n%s" % (AGAIN_AFTER_S, "".join(proc.lines[max(0, seen - 15):])))
    proc.send_signal(signal.SIGINT)


def at_task(name):
    """The moment the deploy starts the task of this name (its banner printed)."""
    # (The rollback's tasks are the role's handler's: RUNNING HANDLER [...].)
    return lambda _host, proc: any(line.startswith(("TASK [", "RUNNING HANDLER [")) and name in line
                                   for line in list(proc.lines))


def sigint(proc):
    proc.send_signal(signal.SIGINT)


def kill_controller(proc):
    """The controller dies as its machine would (ansible_run.kill_run)."""
    kill_run(proc.pid)
