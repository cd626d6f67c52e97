"""The promise with the controller gone: the host's own guard (sglang_guard). Each row stops a
DDTREE switch on ct200 the way a user meets it - Ctrl-C or SIGKILL of ansible-playbook after
the restart, the host restarted during the gate - and shows the host serving NEXTN, healthy,
by itself, with the known-good intact and true and the guard's word in status.yml. Then: a
pending switch is never "unchanged", a broken known-good is refused before the running
service is touched, and check mode leaves a stale lock where it was.

The DDTREE start is slowed (a fault) so the controller goes away while the gate waits; the
guard's deadline is short here (health timeout 12 s + settle + margin 20 s)."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.integration.ansible_run import BIN, LAB_INVENTORY, REPO, _env, run_playbook
from tests.integration.deploying import UNIT, deploy, healthy, invocation, report, reset_service
from tests.integration.labhost import podman

pytestmark = pytest.mark.xdist_group("guard")

STATE = "/etc/sglang/"
# The margin covers the speed gate's measurement (deploy_ddtree.yml has it on).
SHORT = {"sglang_service_health_timeout": 12, "sglang_guard_margin": 20, "sglang_retry_rolled_back": True}
# A hang guard: the deadline (about 35 s) plus the restore, on two busy cores.
GUARD_WAIT_S = 120


@pytest.fixture(scope="module")
def serving(lab):
    host = lab["ct200"]
    reset_service(host)
    proc = deploy("deploy_nextn", host)
    assert proc.returncode == 0, proc.stdout[-3000:]
    yield host
    reset_service(host)


@pytest.fixture
def nextn(serving):
    host = serving
    host.run("rm -f /etc/inferops-lab/faults.json /run/inferops-sglang/deploy.lock")
    if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout):
        assert deploy("deploy_nextn", host).returncode == 0
    yield host
    host.run("rm -f /etc/inferops-lab/faults.json")


def slow_ddtree(host):
    host.put("/etc/inferops-lab/faults.json", json.dumps({"slow_start_s": 600, "only_algorithm": "DDTREE"}))


def start_deploy(host, **extra):
    cmd = [str(BIN / "ansible-playbook"), "-i", LAB_INVENTORY, "playbooks/deploy_ddtree.yml", "-l", host.name,
           "-e", json.dumps(dict(SHORT, **extra))]
    return subprocess.Popen(cmd, cwd=REPO, env=_env({"ANSIBLE_STDOUT_CALLBACK": "default"}),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def interrupted_after_the_restart(host, interrupt, **extra):
    """deploy_ddtree.yml with DDTREE slowed, and `interrupt(proc)` once the host restarted into
    DDTREE; returns the playbook's exit code."""
    slow_ddtree(host)
    proc = start_deploy(host, **extra)
    try:
        host.wait_for(lambda: restarted_into_ddtree(host), GUARD_WAIT_S, 0.2, "the restart into DDTREE")
        interrupt(proc)
        proc.communicate(timeout=GUARD_WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode


def pending(host):
    return host.run(["cat", STATE + "pending.json"], check=False).returncode == 0


def restarted_into_ddtree(host):
    return pending(host) and "DDTREE" in host.run(["cat", UNIT]).stdout and \
        host.show("sglang.service", "ActiveState")["ActiveState"] in ("active", "activating")


def guard_result(host):
    out = host.run(["cat", STATE + "guard.json"], check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def assert_restored_by_the_guard(host, reason, kg_unit):
    host.wait_for(lambda: guard_result(host) is not None, GUARD_WAIT_S, 0.5, "the guard's result")
    result = guard_result(host)
    assert (result["reason"], result["restored"], result["healthy"]) == (reason, "nextn", True), result
    assert not pending(host), "the switch is no longer pending"
    assert "NEXTN" in host.run(["cat", UNIT]).stdout and healthy(host)
    assert host.run(["cat", STATE + "known-good/sglang.service"]).stdout == kg_unit, "the known-good is intact"
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn", "and true"
    status = run_playbook("playbooks/status.yml", limit=host.name)
    assert "the host's guard: " in status.stdout and "the host restored NEXTN by itself, healthy in" in status.stdout
    assert "UNVERIFIED" not in status.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_the_host_restores_the_known_good_when_the_controller_goes_away(nextn, sig):
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout

    def interrupt(proc):
        if sig == signal.SIGKILL:
            os.killpg(proc.pid, sig)   # the whole controller, at once
        else:
            proc.send_signal(sig)
    assert interrupted_after_the_restart(host, interrupt) != 0
    assert_restored_by_the_guard(host, "deadline", kg_unit)


def test_a_host_restarted_during_the_gate_restores_the_known_good_at_boot(nextn):
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout

    def restart_the_host(_proc):
        podman("stop", "-t", "2", host.container)
        podman("start", host.container)
    # Only the boot can act in time: the deadline is far.
    assert interrupted_after_the_restart(host, restart_the_host, sglang_guard_margin=600) != 0
    assert_restored_by_the_guard(host, "boot", kg_unit)


def test_a_pending_switch_is_unverified_and_a_re_run_gates_it(nextn):
    host = nextn
    # The guard waits (the deadline is far): the re-run comes first.
    interrupted_after_the_restart(host, lambda proc: proc.send_signal(signal.SIGINT), sglang_guard_margin=600)
    status = run_playbook("playbooks/status.yml", limit=host.name)
    assert "DDTREE UNVERIFIED (a switch began at" in status.stdout, status.stdout[-2000:]
    host.run("rm -f /etc/inferops-lab/faults.json /run/inferops-sglang/deploy.lock")
    again = deploy("deploy_ddtree", host, **SHORT)
    rep = report(host)
    assert rep["outcome"] == "deployed" and rep["health"]["state"] == "healthy", rep["diagnosis"]
    assert rep["before"] == "ddtree (unverified)" and not pending(host), again.stdout[-2000:]
    # The ungated DDTREE never became the known-good: NEXTN still is.
    assert "NEXTN" in host.run(["cat", STATE + "known-good/sglang.service"]).stdout
    reset_service(host)


def test_an_incomplete_known_good_is_refused_before_the_service_is_touched(nextn):
    host = nextn
    assert deploy("deploy_ddtree", host, **SHORT).returncode == 0   # NEXTN becomes the known-good
    before = invocation(host)
    host.run(["rm", STATE + "known-good/sglang.env"])
    proc = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert proc.returncode != 0
    assert "the known-good service is incomplete: missing sglang.env in /etc/sglang/known-good" in proc.stdout
    assert invocation(host) == before and "DDTREE" in host.run(["cat", UNIT]).stdout, "the service was not touched"
    status = run_playbook("playbooks/status.yml", limit=host.name)
    assert "known-good NEXTN incomplete: missing sglang.env" in status.stdout
    reset_service(host)


def test_check_mode_leaves_a_stale_lock_and_says_what_runs(nextn):
    host = nextn
    stale = json.dumps({"user": "alice", "controller": "gone", "pid": 999999, "playbook": "deploy.yml",
                        "taken": 1.0, "run_id": "gone:999999:0"})
    host.put("/run/inferops-sglang/deploy.lock", stale)
    proc = run_playbook("playbooks/deploy_ddtree.yml", limit=host.name, check_diff=True,
                        extra_vars={"gpu_preflight_break_lock": True})
    assert host.run(["cat", "/run/inferops-sglang/deploy.lock"]).stdout == stale, proc.stdout[-2000:]
    assert "NEXTN" in host.run(["cat", UNIT]).stdout
    host.run("rm -f /run/inferops-sglang/deploy.lock")
