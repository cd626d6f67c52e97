"""The promise with the controller gone: the host's own guard (sglang_guard). Each row stops a
DDTREE switch on ct200 the way a user meets it - Ctrl-C or SIGKILL of ansible-playbook after
the restart, the host restarted during the gate - and shows the host serving NEXTN, healthy,
by itself, with the known-good intact and true and the guard's word in status.yml. Then: a
pending switch is never "unchanged", a broken known-good is refused before the running
service is touched, and check mode leaves a stale lock where it was.

Ctrl-C also comes at each other phase: after the lock (nothing changed, nothing armed), in
the settle window and during the speed gate (during the rollback, the controller waits on the
guard's lock while the host restores: the kill matrix's "killed during its rollback" row, a
Ctrl-C ending that task's worker as a kill does); and the host is stopped
during the gate: the play says it is unreachable, its report says the switch's state is
unknown and when the guard acts, and at its next boot the host restores the known-good.

Where the rows need the controller to be away while the gate waits, the DDTREE start is
slowed (a fault); the guard's deadline is short here (health timeout 20 s + settle 3 s + margin 5 s)."""
from __future__ import annotations

import json
import re
import time

import pytest

from tests.integration import interrupting
from tests.integration.ansible_run import REPO, run_playbook
from tests.integration.deploying import (
    CRASH_FILE, STATE, UNIT, crash_after_the_kill, deploy, guard_evidence, guard_result, healthy, invocation, pending,
    report, reset_service, wait_for_the_guard, watch_restored, watching)
from tests.integration.interrupting import at_task, kill_controller, sigint
from tests.integration.labhost import podman

pytestmark = pytest.mark.xdist_group("guard")
# The kill matrix and the Ctrl-C at each phase: a group of their own, on another worker (each group
# deploys the module's NEXTN once on its worker's ct200), so that no group holds one worker for
# half the integration gate (the guard's rows were 1713 s of one worker, the whole suite 2289 s).
# (xdist joins a test's groups: these rows' group is "guard_kills".)
KILLS = pytest.mark.xdist_group("kills")

# Deploys the rows interrupt: the guard's deadline about 28 s after the restart (health timeout
# 20 s, settle 3 s, margin 5 s), so that it acts soon after the controller went away.
# (The slowed start is quiet for minutes: the stall check is off, so the gate waits on its clock.)
GUARDED = {"sglang_service_health_timeout": 20, "sglang_service_health_stall": 0, "sglang_guard_margin": 5,
           "sglang_retry_rolled_back": True}
# Deploys that must pass their gates: the margin covers the speed gate's measurement on two busy cores.
PASSING = {"sglang_service_health_timeout": 20, "sglang_guard_margin": 120, "sglang_retry_rolled_back": True}
# A hang guard: the deadline plus the restore, on two busy cores.
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
    # (Each row reads the guard's result of its own switch: an earlier row's is not it.)
    host.run("rm -f /etc/inferops-lab/faults.json %s /run/inferops-sglang/deploy.lock %sguard.json" % (CRASH_FILE, STATE))
    if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout):
        assert deploy("deploy_nextn", host).returncode == 0
    yield host
    host.run("rm -f /etc/inferops-lab/faults.json " + CRASH_FILE)


def slow_ddtree(host):
    host.put("/etc/inferops-lab/faults.json", json.dumps({"slow_start_s": 600, "only_algorithm": "DDTREE"}))


def interrupted(host, when, interrupt, playbook="deploy_ddtree", **extra):
    """A playbook (deploy_ddtree.yml) on the row's host with the guard's short clock
    (GUARDED), interrupted once `when(host, proc)` holds: the ended playbook."""
    return interrupting.interrupted(host, when, interrupt, playbook, dict(GUARDED, **extra))


def interrupted_after_the_restart(host, interrupt, playbook="deploy_ddtree", **extra):
    """A playbook (deploy_ddtree.yml) with DDTREE slowed, interrupted once the host restarted into DDTREE."""
    slow_ddtree(host)
    return interrupted(host, lambda h, _proc: restarted_into_ddtree(h), interrupt, playbook, **extra)


def restarted_into_ddtree(host):
    return pending(host) and "DDTREE" in host.peek(["cat", UNIT], check=True).stdout and \
        host.show("sglang.service", "ActiveState")["ActiveState"] in ("active", "activating")


def assert_restored_by_the_guard(host, reason, kg_unit):
    """`reason`: why the guard's run acted (or the reasons a row allows, when the kill and the
    controller's hand-over of its restore race)."""
    result = wait_for_the_guard(host, GUARD_WAIT_S)
    reasons = (reason,) if isinstance(reason, str) else reason
    assert result["reason"] in reasons and (result["restored"], result["healthy"]) == ("nextn", True), result
    assert not pending(host), "the switch is no longer pending"
    assert "NEXTN" in host.run(["cat", UNIT]).stdout and healthy(host)
    assert host.run(["cat", STATE + "known-good/sglang.service"]).stdout == kg_unit, "the known-good is intact"
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn", "and true"
    status = run_playbook("playbooks/status.yml", limit=host.name)
    said = "the host restored NEXTN%s, healthy in" % ("" if result["reason"] == "rollback" else " by itself")
    assert "the host's guard: " in status.stdout and said in " ".join(status.stdout.split()), status.stdout[-2000:]
    assert "UNVERIFIED" not in status.stdout


def test_the_host_restores_the_known_good_at_its_deadline_when_a_ctrl_c_left_a_slow_start_unconfirmed(nextn):
    """DDTREE starts slowly and never fails; Ctrl-C after the restart: nobody confirms it, and the
    host restores NEXTN at the guard's deadline. (The controller killed as its machine dies is
    the kill matrix's, below: a SIGKILL of the main's process group alone left a worker behind.)"""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    assert interrupted_after_the_restart(host, sigint).returncode != 0
    assert_restored_by_the_guard(host, "deadline", kg_unit)


# The production clock for these rows (health timeout 1800 s): only the host's own judgement of the
# failure can bring the known-good back within seconds; its deadline is half an hour away.
PRODUCTION_CLOCK = {"sglang_service_health_timeout": 1800, "sglang_guard_margin": 300, "sglang_retry_rolled_back": True}
# DDTREE dies at once: ready, then the crash (as in the settle window of a real broken kernel).
CRASHES = {"crash_after_ready_s": 0.2, "only_algorithm": "DDTREE"}
# For the rows killed while the gate waits, DDTREE crashes once the controller is dead (the row
# says when: crash_after_the_kill), so that the gate cannot fail and be taken over by the
# controller first, however loaded the machine is (then the kill would come during its rollback,
# another point of the matrix). Its 12 s settle window keeps the gate waiting until the kill.
CRASHES_AFTER_THE_KILL = {"crash_when_file": CRASH_FILE, "only_algorithm": "DDTREE"}
GATE_WAITS = dict(PRODUCTION_CLOCK, sglang_service_health_settle=12)
# The promise: a new server that failed is replaced within 90 s of the kill or of the failure.
REPLACED_WITHIN_S = 90


# The failed DDTREE's GPU memory lingers this long after its processes are gone (a slow driver):
# longer than the follower's grace, so that it is still held when the guard acts (the linger
# begins at the crash, and the crash-looping unit's later starts fail before they take any).
SLOW_RELEASE = {"gpu_release_lag_s": 25}
# The known-good (NEXTN) loads its weights this much slower: the controller killed during its
# rollback is killed while the host's restore is still starting it, however loaded the machine.
SLOW_KNOWN_GOOD_S = 25


# The failure of each row: DDTREE crashes as it starts (at_once: its failure is timed from the
# kill), or once the controller is dead (its failure is timed from the row's order to crash).
AT_ONCE, AFTER_THE_KILL = "at once", "after the kill"
FAILURES = {AT_ONCE: (CRASHES, PRODUCTION_CLOCK), AFTER_THE_KILL: (CRASHES_AFTER_THE_KILL, GATE_WAITS)}


# Who restores: the follower, for a failure no controller took over (follow), or the restore the
# controller handed to the host (rollback); as the kill lands before or after the hand-over, either.
FOLLOW, HANDED, EITHER = "follow", "rollback", ("follow", "rollback")
# What else is slow on the host of a row: the failed server's GPU memory, or the known-good's start.
GPU_MEMORY, KNOWN_GOOD = "gpu memory", "known-good"


def the_hosts_faults(faults, slowed):
    if slowed == GPU_MEMORY:
        return dict(faults, **SLOW_RELEASE)
    if slowed == KNOWN_GOOD:
        # (NEXTN by the name the stand-in resolves it to, as SGLang does: EAGLE.)
        return {"by_algorithm": {"DDTREE": faults, "EAGLE": {"slow_start_s": SLOW_KNOWN_GOOD_S}}}
    return faults


# The rows whose next deploys are run too (one for each way the lock is left: the guard released
# it, or its controller's hand-over left it): the deploy after the guard acted needs no
# sglang_break_lock, says what the host did, and the one after it says it no more.
NEXT_DEPLOY_ROWS = ("killed while the gate waits", "killed during its rollback")


@KILLS
@pytest.mark.parametrize("when, interrupt, crash, slowed, reason", [
    (at_task("Start the health gate"), kill_controller, AT_ONCE, None, FOLLOW),
    (at_task("Gate on health"), kill_controller, AFTER_THE_KILL, None, FOLLOW),
    ("restarted", kill_controller, AT_ONCE, None, FOLLOW),
    (at_task("Gate on health"), sigint, AFTER_THE_KILL, None, FOLLOW),
    (at_task("Gate on health"), kill_controller, AFTER_THE_KILL, GPU_MEMORY, FOLLOW),
    (at_task("Hand the failed switch's restore to the host"), kill_controller, AT_ONCE, None, EITHER),
    # (The handler's hand-over waits on the guard's lock while the host's restore runs: the kill lands there.)
    (at_task("Hand the restore of the known-good to the host's guard"), kill_controller, AT_ONCE, KNOWN_GOOD, HANDED),
], ids=["killed after the restart, before the gate began", "killed while the gate waits",
        "killed as DDTREE starts", "ctrl-c while the gate waits",
        "killed, and the failed server's GPU memory comes back slowly",
        "killed as it hands the failed gate's restore to the host", "killed during its rollback"])
def test_a_new_server_that_fails_is_replaced_by_the_host_within_seconds_of_the_kill(nextn, when, interrupt, crash,
                                                                                    slowed, reason, request):
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    faults, clock = FAILURES[crash]
    host.put("/etc/inferops-lab/faults.json", json.dumps(the_hosts_faults(faults, slowed)))
    # (The rows switch to one DDTREE configuration: an earlier row's record of it is not this one's.)
    host.run("rm -f %srolled-back/*.json" % STATE)
    killed, before = [], invocation(host)

    def restarted(h, _proc):
        # (Its unit's new invocation: the file alone is written before the restart.)
        return pending(h) and invocation(h) != before
    when = restarted if when == "restarted" else when

    def at_the_kill(proc):
        killed.append(time.time())
        interrupt(proc)
    at_the_kill.__wrapped__ = interrupt   # (a Ctrl-C: pressed again if it does not end the run)
    interrupted(host, when, at_the_kill, **clock)
    failed_at = crash_after_the_kill(host) if crash == AFTER_THE_KILL else killed[0]
    assert_restored_by_the_guard(host, reason, kg_unit)
    result = guard_result(host)
    back = result["time"] + result["seconds"] - failed_at
    print("\nthe kill and the failure -> the known-good healthy again: %.1f s (%s)" % (back, result["why"]))
    # (Said in the run's table too: pytest-xdist does not show a row's output.)
    with open(REPO / "build" / "kill-matrix.tsv", "a") as table:
        table.write("%s\t%s\t%.1f\t%s\n" % (request.node.callspec.id, result["reason"], back, result["why"]))
    if slowed == KNOWN_GOOD:
        assert result["time"] < killed[0] < result["time"] + result["seconds"], ("killed mid-restore", killed, result)
    assert back < REPLACED_WITHIN_S, result
    # The known-good started once, into free GPUs: the failed server's memory was waited for.
    waited = result["leftovers_waited"] >= 1.0 if slowed == GPU_MEMORY else True
    assert result["attempts"] == 1 and waited, result
    # The failed configuration is on the record as rolled back, by the controller or, gone before it
    # wrote it, by the guard: a re-run of exactly it is not retried.
    recorded = host.run(["cat", "%srolled-back/%s.json" % (STATE, result["pending"]["config_id"])], check=False)
    assert recorded.returncode == 0 and "\"cause\"" in recorded.stdout, (recorded.stderr, result)
    # The guard released the lock of the switch it ended by itself; a restore handed over leaves it to
    # its controller, whose next deploy finds it gone and the switch over, and breaks it.
    locked = host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 0
    assert (result["lock_released"], locked) == ((True, False) if result["reason"] == FOLLOW else (False, True)), result
    if request.node.callspec.id not in NEXT_DEPLOY_ROWS:
        return
    # The next deploy needs no sglang_break_lock, says what happened, and leaves NEXTN as it is.
    serving = invocation(host)
    again = deploy("deploy_nextn", host)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "the host restored NEXTN" in json.dumps(report(host)) and invocation(host) == serving
    # Said once: the deploy after it does not repeat it.
    assert deploy("deploy_nextn", host).returncode == 0
    assert "the host restored NEXTN" not in json.dumps(report(host)) and invocation(host) == serving


FOLLOWER = "sglang-guard-follow.service"


def test_a_guard_run_that_dies_is_run_again_and_restores_the_known_good(nextn):
    """The host's follower is killed (the kernel's OOM killer, say) while it waits out its grace
    after the new server failed, the controller gone: systemd runs it again (Restart=on-failure),
    and the run after it restores NEXTN. The journal says the run that died."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps(CRASHES_AFTER_THE_KILL))
    journal = ["journalctl", "-u", FOLLOWER, "-o", "cat", "--since", "@%d" % time.time()]
    interrupted(host, at_task("Gate on health"), kill_controller, **GATE_WAITS)
    crash_after_the_kill(host)
    # (What the follower says when it sees the new server fail; it acts once its grace has run out.)
    host.wait_for(lambda: "guard (follow): " in host.run(journal, check=False).stdout, GUARD_WAIT_S, 0.2,
                  "the follower to see the failure")
    host.run(["systemctl", "kill", "-s", "KILL", FOLLOWER])
    assert_restored_by_the_guard(host, "follow", kg_unit)
    said = host.run(journal, check=False).stdout
    assert "status=9/KILL" in said and "Scheduled restart job" in said, said[-3000:]


def known_good_starts(host, since):
    """How many times the known-good (NEXTN) server started since `since`: its server_args line,
    which says EAGLE (SGLang 0.5.23 resolves the NEXTN alias before it logs its arguments)."""
    out = host.run("journalctl -u sglang.service -o cat --since @%d | grep -c \"server_args=.*'speculative_algorithm': "
                   "'EAGLE'\"" % since, check=False)
    return int(out.stdout.strip() or 0)


def test_rollback_yml_during_the_guards_restore_starts_the_known_good_once(nextn):
    """rollback.yml, as the stale lock's message advises, while the host's guard restores: the
    guard's lock orders them, and the known-good starts once (the rollback says the host did it)."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps(CRASHES_AFTER_THE_KILL))
    since = time.time()
    interrupted(host, at_task("Gate on health"), kill_controller, **GATE_WAITS)
    crash_after_the_kill(host)
    host.wait_for(lambda: (guard_result(host) or {}).get("error") == "the guard's run did not finish", GUARD_WAIT_S,
                  0.2, "the guard's restore")
    back = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert back.returncode == 0 and "the host restored NEXTN by itself" in " ".join(back.stdout.split()), \
        back.stdout[-3000:]
    assert_restored_by_the_guard(host, "follow", kg_unit)
    assert known_good_starts(host, since) == 1, guard_evidence(host)


def test_a_known_good_that_does_not_come_up_is_tried_again_said_with_its_cause_and_brought_back_later(nextn):
    """DDTREE fails its gate, and so does NEXTN after it (the same broken kernel, every variant:
    a bad driver, say): the host's restore tries NEXTN three times with its backoff, says each
    try in the journal, and ends NOT healthy with the known-good's own cause, read from its
    journal by the gate's classifier. Once the host is mended, rollback.yml brings NEXTN back."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps({"crash_after_ready_s": 0.2}))
    journal = ["journalctl", "-u", FOLLOWER, "-u", "sglang-guard.service", "-o", "cat", "--since",
               "@%d" % time.time()]
    failed = deploy("deploy_ddtree", host, **GUARDED)
    rep = report(host)
    said = " ".join(rep["diagnosis"].split())
    assert failed.returncode != 0 and rep["outcome"] == "rolled_back", said
    assert re.search(r"rolled back to NEXTN: failed( \(after [0-9.]+ s for what sglang.service left behind\))? - "
                     r"cuda_error: ", said), said
    # (Said by the deploy's report: marked said, as guard.json.prev.)
    result = json.loads(host.run("cat %sguard.json.prev || ls -l %s" % (STATE, STATE)).stdout)
    assert (result["reason"], result["healthy"], result["attempts"]) == ("rollback", False, 3), result
    tries = host.run(journal, check=False).stdout
    assert "did not come up (try 1)" in tries and "did not come up (try 2)" in tries, tries[-3000:]
    status = " ".join(run_playbook("playbooks/status.yml", limit=host.name).stdout.split())
    assert "rolled back to NEXTN: failed" in status and "cuda_error" in status, status[-2000:]
    host.run("rm -f /etc/inferops-lab/faults.json")
    back = run_playbook("playbooks/rollback.yml", limit=host.name)
    # (systemd may restart the crash-looping NEXTN into the mended host first: then it is left alone.)
    said = " ".join(back.stdout.split())
    assert back.returncode == 0 and ("rolled back to NEXTN: healthy in" in said or "already serves, healthy" in said), \
        back.stdout[-3000:]
    assert host.run(["cat", UNIT]).stdout == kg_unit and healthy(host)


def test_a_tune_killed_after_a_passing_try_never_makes_the_try_the_known_good(nextn):
    """tune.yml killed once its try (DDTREE) passed and before it brought the known-good back:
    the try was never confirmed nor recorded, so the host's guard restores NEXTN at its deadline
    and NEXTN stays the known-good (before, the try was recorded and the next deploy kept it)."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    interrupted(host, at_task("Bring the known-good back after a try that started"), kill_controller, "tune",
                sglang_tune_variants=["ddtree"], sglang_tune_max_tries=1, sglang_guard_margin=30)
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn", "the try is not recorded"
    assert_restored_by_the_guard(host, "deadline", kg_unit)


def test_ctrl_c_mid_tune_is_recovered_by_rollback_yml_at_once(nextn):
    """A tune (playbooks/tune.yml) stopped while its canary tries DDTREE: rollback.yml brings
    the known-good back at once (the guard would at its deadline), byte for byte."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    proc = interrupted_after_the_restart(host, sigint, "tune", sglang_tune_variants=["ddtree"])
    assert proc.returncode != 0 and "TASK [Deploy the try" in proc.stdout, proc.stdout[-3000:]
    back = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert back.returncode == 0, back.stdout[-3000:]
    assert host.run(["cat", UNIT]).stdout == kg_unit and healthy(host)
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn"


def ddtree_answers(host, _proc):
    return pending(host) and "DDTREE" in host.run(["cat", UNIT]).stdout and healthy(host)


# (Not at "Wait for the host to restore the known-good": the tasks before it read the switch under the
# guard's lock, which the host's restore holds, so that banner comes once the restore ended, and a
# Ctrl-C there races the run's own end.)
# The speed gate's measurement, about ten seconds on the tests' clock (deploy_ddtree.yml's is about
# two): a Ctrl-C sent once its banner is read lands within it on a loaded machine. (With the
# playbook's own, a make test once read the banner after the measurement ended: the Ctrl-C came
# during the confirmation, and the run confirmed DDTREE.)
LONG_MEASUREMENT = {"enabled": True, "min_ratio": 1.0, "baseline": "measure", "workload": {
    "api": "generate", "stream": True, "requests": 16, "concurrency": 2, "max_new_tokens": 192, "warmup": 1}}


@KILLS
@pytest.mark.parametrize("when, extra", [(ddtree_answers, {}),
                                         (at_task("Measure the new service"), {"sglang_perf_gate": LONG_MEASUREMENT})],
                         ids=["during the settle window", "during the speed gate"])
def test_ctrl_c_at_each_phase_after_the_restart_leaves_the_known_good(nextn, when, extra):
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    assert interrupted(host, when, sigint, sglang_service_leftovers_timeout=5, **extra).returncode != 0
    assert_restored_by_the_guard(host, "deadline", kg_unit)


def test_killed_after_the_files_and_before_the_restart_the_old_server_keeps_serving_and_gets_its_files_back(nextn):
    """The controller killed once the switch's files are written and before the restart: NEXTN
    never stopped serving; at the guard's deadline its files come back and it is not restarted
    (a reboot before then restores them at boot: the boot row)."""
    host = nextn
    kg_unit, before = host.run(["cat", UNIT]).stdout, invocation(host)
    interrupted(host, at_task("Say in the report that the switch is under way"), kill_controller)
    assert "DDTREE" in host.run(["cat", UNIT]).stdout and pending(host), "the files were written, the switch pending"
    assert invocation(host) == before and healthy(host), "the old server serves on"
    assert_restored_by_the_guard(host, "deadline", kg_unit)
    assert invocation(host) == before, "never restarted"


def test_ctrl_c_after_the_lock_changes_nothing_and_arms_nothing(nextn):
    host = nextn
    before = invocation(host)
    assert interrupted(host, at_task("Check the GPUs"), sigint).returncode != 0
    assert invocation(host) == before and healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout
    assert not pending(host) and guard_result(host) is None
    # The lock it left names what to do.
    again = deploy("deploy_ddtree", host, **PASSING)
    said = " ".join(again.stdout.split())
    assert again.returncode != 0 and "the lock is stale" in said and "playbooks/rollback.yml" in said, said[-2000:]


def test_a_host_paused_past_the_deadline_serves_the_known_good_once_it_runs_again(nextn):
    """A host that hangs (here: its container frozen) from the restart until past the guard's
    deadline: when it runs again its guard acts at once. The deploy either found it unreachable
    (a task that started while it was frozen) or, its gate's task having started before, gave up
    on DDTREE's start and rolled back; either way the host serves NEXTN, healthy."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout

    def pause_past_the_deadline(_proc):
        deadline = json.loads(host.run(["cat", STATE + "pending.json"]).stdout)["deadline"]
        podman("pause", host.container)
        try:
            host.wait_for(lambda: time.time() > deadline + 2, GUARD_WAIT_S, 0.5, "the guard's deadline")
        finally:
            podman("unpause", host.container)
    ended = interrupted_after_the_restart(host, pause_past_the_deadline)
    assert ended.returncode != 0, ended.stdout[-3000:]
    assert_restored_by_the_guard(host, "deadline", kg_unit)
    rep = report(host)
    if "unreachable=1" in ended.stdout:
        # The deploy reached for the host while it was frozen: unreachable, as a hung host is over SSH;
        # its last report is the switch under way, with the guard's deadline.
        assert rep["outcome"] == "pending" and rep["guard"]["deadline_at"].endswith(" UTC"), rep
    else:
        # Which came first after the thaw, the gate's timeout or the guard, is the host's scheduler's call.
        assert rep["outcome"] == "rolled_back" and rep["cause"] in ("timeout", "guard_acted_first"), rep["diagnosis"]


def test_a_host_down_during_the_gate_is_unreachable_and_restores_the_known_good_at_boot(nextn):
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    # Only the boot can act in time: the deadline is far.
    lost = interrupted_after_the_restart(host, lambda _proc: podman("stop", "-t", "2", host.container),
                                         sglang_guard_margin=600)
    assert lost.returncode != 0
    # As over SSH: unreachable, not a module whose output did not parse.
    assert "unreachable=1" in lost.stdout and "does not run" in lost.stdout, lost.stdout[-3000:]
    assert "deserialization" not in lost.stdout
    # Its report says the switch's state is unknown, and when the guard acts.
    rep = report(host)
    assert rep["outcome"] == "pending" and rep["guard"]["deadline_at"].endswith(" UTC"), rep
    summary = [line for line in lost.stdout.splitlines() if line.startswith("ct200 ")][-1]
    assert " unreachable " in summary and "state unknown; the host's guard restores the known-good at" in summary
    podman("start", host.container)
    host.wait_for(lambda: host.run("systemctl is-system-running", check=False).stdout.strip()
                  in ("running", "degraded"), GUARD_WAIT_S, 0.5, "the host's boot")
    assert_restored_by_the_guard(host, "boot", kg_unit)


def test_a_host_that_reboots_during_the_watch_resumes_it_and_replaces_a_server_that_fails_after(nextn):
    """DDTREE passes its gates and is watched; the host reboots (its container stopped and started).
    Its guard's boot unit resumes the watch once DDTREE, started with the host, is back; a crash
    after that is named, and NEXTN restored, by the host alone."""
    host = nextn
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps({"crash_when_file": CRASH_FILE, "only_algorithm": "DDTREE"}))
    proc = deploy("deploy_ddtree", host, sglang_watch_duration=600, sglang_watch_interval=2, **PASSING)
    assert proc.returncode == 0 and watching(host, "ddtree"), proc.stdout[-3000:]
    podman("stop", "-t", "2", host.container)
    podman("start", host.container)
    resumed = host.wait_for(lambda: (watching(host, "ddtree") or {}).get("resumed_at") and healthy(host) and
                            watching(host, "ddtree"), GUARD_WAIT_S, 0.5, "the watch to resume after the boot")
    said = " ".join(run_playbook("playbooks/status.yml", limit=host.name).stdout.split())
    assert "the host's watch: watching DDTREE until " in said and "(resumed after the host's reboot at " in said, said
    host.put(CRASH_FILE, "")
    result = host.wait_for(lambda: watch_restored(host), GUARD_WAIT_S, 0.5, "the watch's restore")
    assert (result["breach"]["cause"], result["restored"], result["healthy"]) == ("cuda_error", "nextn", True), result
    assert result["pending"]["config_id"] == resumed["config_id"] and "NEXTN" in host.run(["cat", UNIT]).stdout
    assert host.run(["cat", STATE + "known-good/sglang.service"]).stdout == kg_unit and healthy(host)


def test_a_pending_switch_is_unverified_and_a_re_run_gates_it(nextn):
    host = nextn
    # The guard waits (the deadline is far): the re-run comes first.
    interrupted_after_the_restart(host, sigint, sglang_guard_margin=600)
    status = run_playbook("playbooks/status.yml", limit=host.name)
    assert "DDTREE UNVERIFIED (a switch began at" in status.stdout, status.stdout[-2000:]
    host.run("rm -f /etc/inferops-lab/faults.json /run/inferops-sglang/deploy.lock")
    again = deploy("deploy_ddtree", host, **PASSING)
    rep = report(host)
    assert rep["outcome"] == "deployed" and rep["health"]["state"] == "healthy", rep["diagnosis"]
    assert rep["before"] == "ddtree (unverified)" and not pending(host), again.stdout[-2000:]
    # The ungated DDTREE never became the known-good: NEXTN still is.
    assert "NEXTN" in host.run(["cat", STATE + "known-good/sglang.service"]).stdout


@pytest.fixture
def ddtree_over_nextn(serving):
    """DDTREE deployed over NEXTN (the known-good); each row's damage to the known-good is
    undone afterwards (one deploy for all the rows)."""
    host = serving
    host.run("rm -f /etc/inferops-lab/faults.json /run/inferops-sglang/deploy.lock")
    kept = host.run(["cat", STATE + "known-good/sglang.service"], check=False).stdout
    if not ("DDTREE" in host.run(["cat", UNIT], check=False).stdout and "NEXTN" in kept and healthy(host)
            and not pending(host)):
        if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT], check=False).stdout):
            reset_service(host)
            assert deploy("deploy_nextn", host).returncode == 0
        assert deploy("deploy_ddtree", host, **PASSING).returncode == 0
    host.run("rm -rf /root/known-good.kept && cp -a %sknown-good /root/known-good.kept" % STATE)
    yield host
    host.run("rm -rf {0}known-good && cp -a /root/known-good.kept {0}known-good".format(STATE))


@pytest.mark.parametrize("damage, said, status", [
    ("rm /etc/sglang/known-good/sglang.env", "incomplete: missing sglang.env in /etc/sglang/known-good",
     "known-good NEXTN incomplete: missing sglang.env"),
    ("rm /etc/sglang/known-good/sglang.service", "incomplete: missing sglang.service in /etc/sglang/known-good",
     "known-good NEXTN incomplete: missing sglang.service"),
    ("echo '{not json' > /etc/sglang/known-good/meta.json",
     "corrupt: /etc/sglang/known-good/meta.json does not parse as a deploy record",
     "known-good corrupt: /etc/sglang/known-good/meta.json does not parse"),
], ids=["its env missing", "its unit missing", "its meta.json corrupt"])
def test_a_broken_known_good_is_named_and_refused_before_the_service_is_touched(
        ddtree_over_nextn, damage, said, status):
    host = ddtree_over_nextn
    before = invocation(host)
    host.run(damage)
    proc = run_playbook("playbooks/rollback.yml", limit=host.name)
    text = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "the known-good service is " + said in text, text[-2000:]
    assert invocation(host) == before and "DDTREE" in host.run(["cat", UNIT]).stdout, "the service was not touched"
    assert status in " ".join(run_playbook("playbooks/status.yml", limit=host.name).stdout.split())


def test_check_mode_on_a_host_mid_switch_changes_nothing_and_says_what_runs(nextn):
    """A host left starting an unconfirmed DDTREE by an interrupted deploy (its lock stale):
    a check run that would break the lock changes nothing on it, and says it runs DDTREE, unverified."""
    host = nextn
    # (A DDTREE that crashes the host's guard restores within seconds: this one stays starting.)
    interrupted_after_the_restart(host, sigint, sglang_guard_margin=600)
    state = "cat /run/inferops-sglang/deploy.lock; ls -a %s; sha1sum %s %s*.json %s*/*" % (STATE, UNIT, STATE, STATE)
    before = host.run(state).stdout
    assert '"run_id"' in before and "pending.json" in before, before
    proc = run_playbook("playbooks/deploy.yml", limit=host.name, check_diff=True,
                        extra_vars={"sglang_break_lock": True, "sglang_variant": "nextn"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert host.run(state).stdout == before, "check mode changed the host"
    # (Its check says what it would restore; the known-good is not started by it, so not proven healthy.)
    rollback = run_playbook("playbooks/rollback.yml", limit=host.name, check_diff=True)
    assert rollback.returncode == 0 and "Hand the restore of the known-good to the host" in rollback.stdout, \
        rollback.stdout[-3000:]
    assert "check mode: would restore NEXTN" in " ".join(rollback.stdout.split()), rollback.stdout[-3000:]
    assert host.run(state).stdout == before, "a rollback's check changed the host"
    summary = [line for line in proc.stdout.splitlines() if line.startswith("ct200 ")][-1]
    assert "ddtree (unverified) -> " in summary and " check " in summary, summary
    reset_service(host)
