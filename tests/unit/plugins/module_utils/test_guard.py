"""The host's guard (module_utils/guard.py) as data tables: what a run of it decides from the
pending switch, the reason it runs and the clock; what it says; and the known-good checks it
makes before it trusts a snapshot (host_state.known_good_problem)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import guard, guard_link, host_state

T0 = 1796300000.0
PENDING = {"config_id": "c0ffee", "variant": "ddtree", "phase": "gate", "started": T0, "deadline": T0 + 330}


@pytest.mark.parametrize("pending, reason, now, action, why", [
    (None, "deadline", T0 + 400, guard.IDLE, "no switch is pending: the deploy confirmed it or rolled it back"),
    (None, "boot", T0, guard.IDLE, "no switch is pending: the deploy confirmed it or rolled it back"),
    (PENDING, "deadline", T0 + 10, guard.WAIT, "the deadline 2026-12-03 12:18:50 UTC is not reached yet"),
    (PENDING, "deadline", T0 + 330, guard.RESTORE,
     "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC"),
    (PENDING, "deadline", T0 + 329.5, guard.RESTORE,
     "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC"),
    (dict(PENDING, phase="rollback"), "deadline", T0 + 900, guard.RESTORE,
     "the controller did not confirm DDTREE's rollback by its deadline 2026-12-03 12:18:50 UTC"),
    (PENDING, "boot", T0 + 10, guard.RESTORE, "the host restarted during DDTREE's gate"),
    (dict(PENDING, phase="restore", cause="cuda_oom"), "follow", T0 + 10, guard.RESTORE,
     "the controller rolled DDTREE back (cuda_oom) and handed its restore to the host"),
    (dict(PENDING, phase="restore"), "deadline", T0 + 1, guard.RESTORE,
     "the controller rolled DDTREE back and handed its restore to the host"),
], ids=["nothing pending at the deadline", "nothing pending at boot", "a timer before the deadline waits",
        "the deadline passed: restore", "within the timer's accuracy: restore", "during a rollback",
        "a boot with a switch pending restores at once", "a handed-over restore: the follower runs it at once",
        "a handed-over restore: the timer's backstop too"])
def test_decide(pending, reason, now, action, why):
    assert guard.decide(pending, reason, now) == (action, why)


@pytest.mark.parametrize("result, text", [
    (None, None),
    ({"why": "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC", "time": T0 + 331,
      "restored": "nextn", "healthy": True, "seconds": 5.14},
     "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC at 12:18:51; the host "
     "restored NEXTN by itself, healthy in 5.1 s"),
    ({"why": "the host restarted during DDTREE's gate", "time": T0 + 40, "restored": "nextn", "healthy": False,
      "error": "sglang.service failed while it started (journalctl -u sglang.service)"},
     "the host restarted during DDTREE's gate at 12:14:00; the host tried to restore NEXTN by itself and it is NOT "
     "healthy: sglang.service failed while it started (journalctl -u sglang.service)"),
    ({"why": "the controller rolled DDTREE back (cuda_oom) and handed its restore to the host", "time": T0 + 40,
      "restored": "nextn", "healthy": True, "seconds": 6.02, "reason": "rollback"},
     "the controller rolled DDTREE back (cuda_oom) and handed its restore to the host at 12:14:00; the host restored "
     "NEXTN, healthy in 6.0 s"),
], ids=["never acted", "restored, healthy", "restored, not healthy", "the controller's restore, handed over"])
def test_said(result, text):
    assert guard.said(result) == text


ARMED = dict(PENDING, armed_at=T0, invocation="old", unit="sglang.service", grace=10)
FAILING = {"why": "sglang.service: unit failed (result exit-code)", "since": T0 + 6}


@pytest.mark.parametrize("pending, now, failing, action, why", [
    (ARMED, T0 + 6, FAILING, guard.WAIT,
     "DDTREE failed (sglang.service: unit failed (result exit-code)); a controller may take it over until 12:13:36"),
    (ARMED, T0 + 16, FAILING, guard.RESTORE,
     "DDTREE failed (sglang.service: unit failed (result exit-code)) at 12:13:26, and no controller took it over "
     "within 10 s"),
    (dict(ARMED, grace=600), T0 + 22, FAILING, guard.RESTORE,
     "DDTREE failed (sglang.service: unit failed (result exit-code)) at 12:13:26, and no controller took it over "
     "within 15 s"),
    (dict(ARMED, phase="rollback"), T0 + 60, FAILING, guard.WAIT, "the deadline 2026-12-03 12:18:50 UTC is not reached yet"),
    (ARMED, T0 + 200, None, guard.WAIT, "the deadline 2026-12-03 12:18:50 UTC is not reached yet"),
    (dict(ARMED, deadline=T0 + 12), T0 + 12, FAILING, guard.RESTORE,
     "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:13:32 UTC"),
], ids=["failed: the grace for a controller to take it over", "the grace ran out: the host restores",
        "a grace over 15 s counts as 15", "a rollback under way is the controller's", "healthy, unconfirmed: it waits",
        "the deadline comes before the grace"])
def test_decide_on_a_failure_the_follower_saw(pending, now, failing, action, why):
    assert guard.decide(pending, guard.FOLLOW, now, failing) == (action, why)


def status(invocation="new", active="active", sub="running", restarts=0, result="success"):
    return {"load_state": "loaded", "active_state": active, "sub_state": sub, "result": result,
            "invocation_id": invocation, "n_restarts": restarts}


VERDICT_FAILED = {"state": "failed", "cause": "oom_kv_pool", "reason": "unit failed (result exit-code)",
                  "time": T0 + 5}


@pytest.mark.parametrize("st, verdict, first_new, seen", [
    (status("old"), None, None, None),
    (status(), None, ("new", 0), None),
    (status(active="failed", sub="failed", result="exit-code"), None, ("new", 0),
     "sglang.service: unit failed (result exit-code)"),
    (status(active="activating", sub="auto-restart"), None, ("new", 0),
     "sglang.service: unit is waiting to be restarted after a failure (auto-restart)"),
    (status("newer"), None, ("new", 0), "sglang.service: unit was restarted (invocation newer replaced new)"),
    (status(restarts=2), None, ("new", 0), "sglang.service: systemd restarted the unit (NRestarts 2, was 0)"),
    (status(), VERDICT_FAILED, ("new", 0),
     "its health gate said failed (cause oom_kv_pool): unit failed (result exit-code)"),
    (status(), dict(VERDICT_FAILED, state="timeout", cause="stalled", reason="no progress"), None,
     "its health gate said timeout (cause stalled): no progress"),
    (status(), dict(VERDICT_FAILED, time=T0 - 100), ("new", 0), None),
    (status(), dict(VERDICT_FAILED, state="healthy"), ("new", 0), None),
], ids=["not restarted yet: the old server is not judged", "the new one runs", "it failed", "it crash-loops",
        "restarted again", "systemd restarted it", "the gate said failed", "the gate stalled before the follower saw it",
        "a verdict older than the arm is another switch's", "the gate said healthy"])
def test_observe(st, verdict, first_new, seen):
    assert guard.observe(ARMED, st, verdict, first_new) == seen


@pytest.mark.parametrize("st, kept", [
    (status("old"), True), (status("new"), False), (status("old", active="failed"), False),
], ids=["the unit still runs what it ran at the arm", "it was restarted", "it failed"])
def test_never_switched(st, kept):
    assert guard.never_switched(ARMED, st) is kept
    assert guard.never_switched(dict(ARMED, invocation=""), st) is False
    # A restore the controller handed over restarts what runs: it is what the rollback is for.
    assert guard.never_switched(dict(ARMED, phase="restore"), st) is False


def test_the_deploy_lock_of_the_gone_controller_is_released_and_no_other(tmp_path):
    lock = tmp_path / "deploy.lock"
    lock.write_text(json.dumps({"run_id": "other"}))
    mine = dict(ARMED, lock={"path": str(lock), "run_id": "run-1"})
    assert guard.release_deploy_lock(mine) is False and lock.exists(), "another run's lock stays"
    lock.write_text(json.dumps({"run_id": "run-1"}))
    assert guard.release_deploy_lock(mine) is True and not lock.exists()
    assert (tmp_path / "deploy.lock.released").exists(), "the next deploy sees the host may have changed"
    assert guard.release_deploy_lock(mine) is False
    assert guard.release_deploy_lock(ARMED) is False


def test_units_and_timer():
    units = ("sglang-guard.timer", "sglang-guard.service", "sglang-guard-boot.service")
    assert guard.guard_units("sglang.service") == units
    timer = guard.timer_text("sglang.service", T0 + 330)
    assert "OnCalendar=2026-12-03 12:18:50 UTC\n" in timer and "Unit=sglang-guard.service\n" in timer
    boot = guard.service_text("sglang.service", "/usr/bin/python3", "/etc/sglang", "boot")
    assert "ExecStart=/usr/bin/python3 /usr/local/lib/inferops-sglang/guard/sglang-guard --state-dir /etc/sglang " \
           "--reason boot\n" in boot and "WantedBy=multi-user.target" in boot
    assert "[Install]" not in guard.service_text("sglang.service", "/usr/bin/python3", "/etc/sglang", "deadline")
    follow = guard.service_text("sglang.service", "/usr/bin/python3", "/etc/sglang", "follow")
    assert guard.follower_unit("sglang.service") == "sglang-guard-follow.service"
    assert "Type=simple\n" in follow and "--reason follow\n" in follow and "[Install]" not in follow
    # (Stopped before the unit it watches at a shutdown: a reboot does not end the watch as a stop.)
    assert "After=network.target sglang.service\n" in follow and "After=network.target\n" in boot
    # A run that fails is run again, for ever.
    assert all("Restart=on-failure\n" in text and "StartLimitIntervalSec=0\n" in text for text in (boot, follow))
    assert "TimeoutStopSec=10\n" in follow


def test_a_run_with_nothing_pending_changes_nothing(tmp_path):
    assert guard.act(str(tmp_path), "boot") == \
        "inferops.sglang guard (boot): no switch is pending: the deploy confirmed it or rolled it back; nothing to do"
    assert sorted(p.name for p in tmp_path.iterdir()) == [guard.LOCK]


def snapshot(state, tmp_path, **files):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    for name, text in files.items():
        (run / name).write_text(text)
    host_state.snapshot_known_good(str(state), [str(run / n) for n in files], {"variant": "nextn"}, 0)
    return state / host_state.KNOWN_GOOD


@pytest.mark.parametrize("damage, problem", [
    (None, None),
    (lambda kg: (kg / "sglang.env").unlink(), "incomplete: missing sglang.env in {kg}"),
    (lambda kg: (kg / "sglang.service").unlink(), "incomplete: missing sglang.service in {kg}"),
    (lambda kg: (kg / "sglang.env").write_text("B=2\n"), "corrupt: changed since the snapshot: sglang.env in {kg}"),
    (lambda kg: (kg / "meta.json").write_text("{not json"), "corrupt: {kg}/meta.json does not parse as a deploy record"),
    (lambda kg: (kg / "meta.json").unlink(), "incomplete: {kg} has no meta.json (its deploy record)"),
], ids=["complete and true", "env missing", "unit missing", "a file changed", "meta.json corrupt",
        "meta.json missing"])
def test_known_good_problem(tmp_path, damage, problem):
    state = tmp_path / "etc-sglang"
    state.mkdir()
    kg = snapshot(state, tmp_path, **{"sglang.service": "ExecStart=/a\n", "sglang.env": "A=1\n"})
    if damage:
        damage(kg)
    expected = problem.format(kg=kg) if problem else None
    assert host_state.known_good_problem(str(state), "sglang.service") == expected


def test_an_older_record_without_hashes_is_checked_for_its_files(tmp_path):
    state = tmp_path / "etc-sglang"
    kg = state / host_state.KNOWN_GOOD
    kg.mkdir(parents=True)
    (kg / "meta.json").write_text(json.dumps({"variant": "nextn", "has_secrets": True}))
    (kg / "sglang.service").write_text("ExecStart=/a\n")
    assert host_state.known_good_problem(str(state), "sglang.service") == \
        "incomplete: missing secrets.yaml, sglang.env in %s" % kg
    assert host_state.known_good_problem(str(tmp_path / "none"), "sglang.service") is None


@pytest.mark.parametrize("pending, result, fired", [
    (None, {"pending": {"config_id": "abc"}, "healthy": True}, True),
    ({"config_id": "abc"}, {"pending": {"config_id": "abc"}}, False),
    (None, {"pending": {"config_id": "old"}, "healthy": True}, False),
    (None, None, False),
], ids=["it acted on this switch", "still pending: not yet", "it acted on an earlier switch", "it never acted"])
def test_fired_on_says_whether_the_guard_already_acted_on_this_switch(pending, result, fired):
    assert (guard.fired_on("abc", pending, result) is not None) is fired
    assert guard.fired_on("", pending, result) is None
    # A restore the controller handed over ended the switch, but the guard did not act on its own.
    handed = dict(result or {}, reason="rollback")
    assert guard.fired_on("abc", pending, handed) is None
    assert (guard.ended_on("abc", pending, handed) is not None) is fired


@pytest.mark.parametrize("result, rollback", [
    ({"healthy": True, "seconds": 6.0, "known_good": "NEXTN", "leftovers_waited": 0.01, "unit": "handmade.service"},
     {"restored": True, "gate": {"state": "healthy", "elapsed": 6.0, "unit": "handmade.service"}, "known_good": "NEXTN",
      "leftovers": {"released": True, "msg": None, "waited": False, "elapsed": 0.01}}),
    ({"healthy": True, "seconds": 31.0, "known_good": "NEXTN", "leftovers_waited": 24.6},
     {"restored": True, "gate": {"state": "healthy", "elapsed": 31.0, "unit": None}, "known_good": "NEXTN",
      "leftovers": {"released": True, "msg": None, "waited": True, "elapsed": 24.6}}),
    ({"healthy": False, "seconds": 90.0, "known_good": "NEXTN", "leftovers_waited": 60.0,
      "leftovers": "GPU 0 still holds 40000 MiB", "error": "GPU 0 still holds 40000 MiB"},
     {"restored": True, "gate": {"state": "failed", "elapsed": 90.0, "unit": None, "cause": "restore_failed",
                                 "hint": "GPU 0 still holds 40000 MiB"}, "known_good": "NEXTN",
      "leftovers": {"released": False, "msg": "GPU 0 still holds 40000 MiB", "waited": True, "elapsed": 60.0}}),
    ({"healthy": False, "known_good": None, "error": "no known-good service existed; sglang.service is stopped"},
     {"restored": True, "gate": {"state": "failed", "elapsed": 0.0, "unit": None, "cause": "restore_failed",
                                 "hint": "no known-good service existed; sglang.service is stopped"},
      "known_good": None, "leftovers": {"released": True, "msg": None, "waited": False, "elapsed": 0.0}}),
], ids=["healthy at once", "healthy after the GPU memory came back", "the GPU memory never came back",
        "no known-good existed"])
def test_the_guards_restore_reads_as_the_rollbacks_result(result, rollback):
    assert guard.as_rollback(result) == rollback


def test_a_restore_not_ended_within_the_wait_is_said_unfinished_with_where_to_look():
    got = guard.unfinished_rollback("sglang.service", 1900.0)
    assert got["gate"]["state"] == "unfinished" and got["gate"]["cause"] == "restore_unfinished"
    assert "journalctl -u 'sglang-guard*'" in got["gate"]["hint"] and "1900 s" in got["gate"]["hint"]


RESTORED = {"why": "DDTREE failed (...), and no controller took it over within 15 s", "time": T0 + 31,
            "restored": "nextn", "healthy": True, "seconds": 7.5}


@pytest.mark.parametrize("extra, tail", [
    ({}, "healthy in 7.5 s"),
    ({"rejoined": "http://198.18.7.2:30000"}, "healthy in 7.5 s, and put it back into the gateway's rotation"),
    ({"rejoined": None, "out_of_rotation_since": T0 + 2, "rejoin_error": "http://198.18.7.1:38000 could not be "
      "reached: [Errno 111] Connection refused"},
     "healthy in 7.5 s, but it is OUT OF THE GATEWAY'S ROTATION since 12:13:22 (http://198.18.7.1:38000 could not "
     "be reached: [Errno 111] Connection refused): the next deploy or rollback.yml puts it back"),
], ids=["no gateway", "back in rotation", "the gateway could not be reached"])
def test_said_tells_whether_the_worker_is_back_behind_its_gateway(extra, tail):
    assert guard.said(dict(RESTORED, **extra)).endswith(tail)


def test_the_guard_puts_the_drained_worker_back_as_sglang_gateway_does(tmp_path):
    """A real HTTP server answers GET and POST /workers as smg does (202, and the worker listed
    ready; then a 500): the body names the worker and its API key, the gateway's key goes in the
    header; a failure is said."""
    import http.server
    import threading

    seen, answers, listed = [], [202, 500], []

    class Gateway(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = json.dumps({"workers": listed}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802 - http.server's name
            seen.append((self.path, self.headers.get("Authorization"),
                         json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            status = answers.pop(0)
            if status == 202:
                listed.append({"id": "w1", "url": seen[-1][2]["url"], "is_healthy": True, "status": "ready"})
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "secrets.yaml").write_text(json.dumps({"api-key": "worker-key"}))
        pending = {"gateway": {"url": "http://127.0.0.1:%d/" % server.server_port, "api_key": "gw-key",
                               "worker_url": "http://198.18.7.2:30000", "drained_at": T0}}
        assert guard.back_in_rotation(str(tmp_path), pending, {"healthy": True}) == {
            "rejoined": "http://198.18.7.2:30000"}
        assert seen[0] == ("/workers", "Bearer gw-key", {"url": "http://198.18.7.2:30000", "api_key": "worker-key"})
        listed.clear()   # (dropped again)
        failed = guard.back_in_rotation(str(tmp_path), pending, {"healthy": True})
        assert failed["rejoined"] is None and failed["out_of_rotation_since"] == T0
        assert failed["rejoin_error"].endswith("answered HTTP 500 to POST /workers")
        assert guard.back_in_rotation(str(tmp_path), pending, {"healthy": False}) == {}, "not behind an unhealthy one"
        assert guard.back_in_rotation(str(tmp_path), {}, {"healthy": True}) == {}
        # A restore handed over by a controller that keeps the worker out (the tune): no call, and said.
        kept = guard.back_in_rotation(str(tmp_path), dict(pending, rejoin=False), {"healthy": True, "reason": "rollback"})
        assert kept == {"rejoined": None, "kept_out": True, "out_of_rotation_since": T0} and len(seen) == 2
        assert "left it out of the gateway's rotation, as its controller asked" in guard.rotation_said(kept)
    finally:
        server.shutdown()


@pytest.mark.parametrize("pending, reason", [
    (dict(ARMED, phase="rollback", armed_at=0, deadline=1), guard.DEADLINE),
    (dict(ARMED, armed_at=0, deadline=4e9, grace=0.01), guard.FOLLOW),
], ids=["a failure seen, then the rollback's deadline passed: the deadline's reason",
        "a failure nobody took over: the follower's"])
def test_the_follower_acts_for_the_reason_that_came(tmp_path, monkeypatch, pending, reason):
    (tmp_path / guard.PENDING).write_text(json.dumps(pending))
    monkeypatch.setattr(guard, "read_unit", lambda unit: status("new", active="failed", sub="failed"))
    acted = []
    monkeypatch.setattr(guard, "act", lambda state_dir, why, failing, **_kw: acted.append((why, failing["why"])) or "done")
    assert guard.follow(str(tmp_path), poll=0.01) == "done"
    assert acted == [(reason, "sglang.service: unit failed (result success)")]


@pytest.mark.parametrize("states, answers, settle, result", [
    ([status("kg", "activating", "start")] * 2 + [status("kg")] * 9, [False, False, True, True, True], 0.0,
     (True, None)),
    ([status("kg", "activating", "start"), status("kg", "activating", "auto-restart", restarts=1)], [False] * 3, 0.0,
     (False, "sglang.service did not start: systemd restarted the unit (NRestarts 1, was 0) "
             "(journalctl -u sglang.service)")),
    ([status("kg", "activating", "start"), status("kg", "failed", "failed", result="exit-code")], [False] * 3, 0.0,
     (False, "sglang.service did not start: unit failed (result exit-code) (journalctl -u sglang.service)")),
    ([status("kg")] * 9, [True, False], 5.0,
     (False, "http://h/health answered 200, then stopped answering within its 5 s settle")),
], ids=["healthy, then settled", "crashed and restarted by systemd: failed at once, not at the timeout",
        "left failed", "a 200, then silence within the settle"])
def test_the_guards_start_of_the_known_good_is_judged_as_the_gate_judges_it(monkeypatch, states, answers, settle,
                                                                            result):
    states, answers = list(states), list(answers)
    monkeypatch.setattr(guard, "read_unit", lambda unit: states.pop(0) if len(states) > 1 else states[0])
    monkeypatch.setattr(guard, "healthy", lambda url, key, timeout: answers.pop(0) if len(answers) > 1 else answers[0])
    monkeypatch.setattr(guard.time, "sleep", lambda seconds: None)
    assert guard.wait_healthy("sglang.service", "http://h/health", "", 600.0, settle) == result


KNOWN_GOOD_OOM = [
    "[2026-12-06 10:30:50 TP0] Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, avail mem=3.10 GB\n",
    "[2026-12-06 10:30:51 TP0] Scheduler hit an exception: Traceback (most recent call last):\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "47.40 GiB of which 1.02 GiB is free.\n",
]


@pytest.mark.parametrize("lines, cause", [
    (KNOWN_GOOD_OOM, "cuda_oom"),
    (["[2026-12-06 10:30:50] server_args=ServerArgs(model_path='/models/x')\n"], None),
], ids=["its journal names the cause", "no signature: the guard's own words stand"])
def test_a_known_good_that_did_not_come_up_is_diagnosed_by_the_gates_classifier(monkeypatch, lines, cause):
    monkeypatch.setattr(guard, "read_unit", lambda unit: status("0123456789abcdef0123456789abcdef"))
    monkeypatch.setattr(guard, "stream_invocation", lambda invocation, unit=None: iter(lines))
    found = guard.diagnose("sglang.service")
    assert (found or {}).get("cause") == cause, found
    result = {"healthy": False, "known_good": "NEXTN", "seconds": 40.0, "diagnosis": found,
              "error": "sglang.service did not start: unit failed (result exit-code) (journalctl -u sglang.service)"}
    gate = guard.as_rollback(result)["gate"]
    assert gate["cause"] == (cause or "restore_failed") and gate["hint"], gate
    assert ("evidence" in gate) is bool(cause)
    said = guard.said(dict(result, why="the controller rolled DDTREE back", time=T0, restored="nextn", attempts=3))
    assert said.endswith(" (cause cuda_oom)" if cause else "(journalctl -u sglang.service)") and "after 3 tries" in said


@pytest.mark.parametrize("last_line, stall, said", [
    (T0 - 20, 8.0, "it said nothing for 20 s (the stall limit, sglang_service_health_stall)"),
    (T0 - 3, 8.0, None),
    (None, 8.0, "it said nothing for 30 s (the stall limit, sglang_service_health_stall)"),
    (T0 - 60, 8.0, "it said nothing for 30 s (the stall limit, sglang_service_health_stall)"),
    (T0 - 20, 0.0, None),
], ids=["quiet past the stall limit", "it spoke 3 s ago", "no line yet: counted from the start",
        "a line from before the start is not its progress", "no stall limit"])
def test_a_known_good_start_that_says_nothing_past_the_stall_limit_is_a_failed_try(monkeypatch, last_line, stall, said):
    monkeypatch.setattr(guard, "last_line_at", lambda invocation: last_line)
    monkeypatch.setattr(guard.time, "time", lambda: T0)
    assert guard.quiet_for(status("kg"), T0 - 30, stall) == said


def record_written(tmp_path, config_id, when):
    path = host_state.rolled_back_path(str(tmp_path), config_id)
    (tmp_path / host_state.ROLLED_BACK).mkdir(exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"cause": "by its controller"}, fh)
    os.utime(path, (when, when))


@pytest.mark.parametrize("pending, verdict, earlier, cause", [
    (dict(PENDING, armed_at=T0), {"time": T0 + 5, "cause": "cuda_oom"}, None, "cuda_oom"),
    (dict(PENDING, armed_at=T0), {"time": T0 - 50, "cause": "cuda_oom"}, None, "unit_failed"),
    (dict(PENDING, phase="restore", cause="kv_pool_oom"), None, None, "kv_pool_oom"),
    (dict(PENDING, phase="restore", cause="kv_pool_oom"), None, T0 + 3, "by its controller"),
    (dict(PENDING, phase="restore", cause="kv_pool_oom"), None, T0 - 3600, "kv_pool_oom"),
], ids=["a failure the follower saw: the gate's verdict of this switch names it",
        "an older switch's verdict is not this one's",
        "a restore handed over, its controller gone before its record: the guard's stands in",
        "its controller recorded it since the switch began: kept",
        "a record of an earlier try of it: this failure replaces it"])
def test_a_failed_switch_is_on_the_record_as_rolled_back_once(tmp_path, pending, verdict, earlier, cause):
    if verdict:
        (tmp_path / guard.VERDICT).write_text(json.dumps(verdict))
    if earlier:
        record_written(tmp_path, pending["config_id"], earlier)
    guard.remember_failure(str(tmp_path), pending, {"why": "unit failed"})
    record = json.loads(open(host_state.rolled_back_path(str(tmp_path), pending["config_id"])).read())
    assert record["cause"] == cause, record


# A server group's node other than rank 0 (a spoke of the guards' link), and rank 0's word.
SPOKE_PENDING = dict(ARMED, group={"name": "grp_a", "nodes": ["ct200", "ctg1"], "nnodes": 2, "node_rank": 1})
LINKED, ALONE = {"linked": True, "since": None, "serving": None}, {"linked": False, "since": T0 + 300, "serving": None}


@pytest.mark.parametrize("pending, reason, now, failing, spoke, action, why", [
    (SPOKE_PENDING, guard.GROUP, T0 + 20, {"why": "ct200 (rank 0)'s guard restores the server group (oom)"}, LINKED,
     guard.RESTORE, "ct200 (rank 0)'s guard restores the server group (oom); the server group restores as one"),
    (dict(SPOKE_PENDING, phase="rollback"), guard.GROUP, T0 + 20, {"why": "ctg1 (rank 1) restores (x)"}, None,
     guard.RESTORE, "ctg1 (rank 1) restores (x); the server group restores as one"),
    (SPOKE_PENDING, guard.DEADLINE, T0 + 331, None, LINKED, guard.WAIT,
     "rank 0's guard decides for the server group at its deadline"),
    (SPOKE_PENDING, guard.DEADLINE, T0 + 391, None, LINKED, guard.RESTORE,
     "rank 0's guard did not decide for the server group by 2026-12-03 12:19:50 UTC"),
    (SPOKE_PENDING, guard.DEADLINE, T0 + 340, None, ALONE, guard.WAIT,
     "rank 0's guard is out of reach; this node judges alone at 12:19:20"),
    (SPOKE_PENDING, guard.DEADLINE, T0 + 361, None, dict(ALONE, serving=True), guard.CONFIRM,
     "rank 0's guard ended the switch without a restore, and this node serves DDTREE with the group: the group's "
     "switch holds"),
    (dict(SPOKE_PENDING, phase="held"), guard.DEADLINE, T0 + 361, None, dict(ALONE, serving=True), guard.CONFIRM,
     "rank 0's guard ended the switch without a restore, and this node serves DDTREE with the group: the group's "
     "switch holds"),
    (SPOKE_PENDING, guard.DEADLINE, T0 + 361, None, dict(ALONE, serving=False), guard.RESTORE,
     "rank 0's guard is out of reach, and this node does not serve DDTREE"),
    (dict(SPOKE_PENDING, phase="rollback"), guard.DEADLINE, T0 + 361, None, dict(ALONE, serving=True), guard.RESTORE,
     "rank 0's guard is out of reach, and the controller's rollback did not end"),
    (dict(SPOKE_PENDING, phase="held"), guard.FOLLOW, T0 + 30, FAILING, LINKED, guard.RESTORE,
     "DDTREE failed (sglang.service: unit failed (result exit-code)) at 12:13:26, and no controller took it over "
     "within 10 s"),
], ids=["rank 0's guard restores: so does this node", "another node restores, during a rollback: so does this one",
        "linked at its deadline: rank 0's guard decides", "rank 0's guard a minute late: restores",
        "alone at its deadline: a failure rank 0's restore caused has time to show",
        "alone, and it serves with the group: rank 0 was confirmed", "held, alone and serving: confirmed",
        "alone, not serving: restores", "alone during the controller's rollback: restores",
        "held, and its server fails: restores after the grace, as in the gate"])
def test_decide_for_a_server_groups_node(pending, reason, now, failing, spoke, action, why):
    assert guard.decide(pending, reason, now, failing, spoke) == (action, why)


def test_a_server_groups_guards_hear_each_other_and_only_each_other():
    """Rank 0's hub and two spokes on loopback: words both ways, signed; a spoke with another
    key (another group, or someone without the API key) is never heard; the barrier lets the
    hub start once each linked spoke stopped."""
    group = {"name": "grp_a", "node_rank": 0, "dist_init_addr": "127.0.0.1:1", "port": 0}
    hub = guard_link.open_link(group, "api-key")
    port = hub.listener.getsockname()[1]
    spokes = [guard_link.Spoke("127.0.0.1", port, guard_link.signing_key("api-key", "grp_a"), rank) for rank in (1, 2)]
    stranger = guard_link.Spoke("127.0.0.1", port, guard_link.signing_key("not-the-key", "grp_a"), 3)
    try:
        wait_until(lambda: hub.peers() == [1, 2] and all(s.linked() for s in spokes + [stranger]))
        assert hub.peers() == [1, 2], "the stranger connected, but its hello was dropped"
        assert spokes[0].say(guard_link.FAILED, "unit failed", "follow") == [0]
        wait_until(lambda: not hub.inbox.empty())
        assert hub.next_word() == (guard_link.FAILED, 1, "unit failed", "follow") and hub.next_word() is None
        assert stranger.say(guard_link.FAILED, "forged") == [0]
        # A signed word after it on the same connection: once the hub has it, it read the forged one.
        right_key = guard_link.signing_key("api-key", "grp_a")
        assert guard_link.send(stranger.sock, guard_link.encode(right_key, guard_link.FAILED, 3, "signed"))
        wait_until(lambda: not hub.inbox.empty())
        assert hub.next_word() == (guard_link.FAILED, 3, "signed", ""), "the stranger's forged word was dropped"
        assert sorted(hub.say(guard_link.RESTORE, "grp_a restores", "follow")) == [1, 2]
        wait_until(lambda: all(not s.inbox.empty() for s in spokes))
        assert [s.next_word() for s in spokes] == [(guard_link.RESTORE, 0, "grp_a restores", "follow")] * 2
        # The barrier: each spoke says it stopped and waits; the hub says start once both did.
        said = []
        waiters = [threading.Thread(target=lambda s=s: said.append(guard_link.barrier(s, 10))) for s in spokes]
        for thread in waiters:
            thread.start()
        assert guard_link.barrier(hub, 10) == "every linked node stopped (ranks 1, 2)"
        for thread in waiters:
            thread.join(10)
        assert said == ["rank 0 said start"] * 2
    finally:
        for end in spokes + [stranger, hub]:
            end.close()


def test_a_barrier_goes_on_without_a_node_that_never_says_it_stopped():
    hub = guard_link.open_link({"name": "grp_a", "node_rank": 0, "dist_init_addr": "127.0.0.1:1", "port": 0}, "")
    spoke = guard_link.Spoke("127.0.0.1", hub.listener.getsockname()[1], guard_link.signing_key("", "grp_a"), 1)
    try:
        wait_until(lambda: hub.peers() == [1])
        assert guard_link.barrier(hub, 1) == "went on after 1 s without the word of rank 1"
        assert guard_link.barrier(spoke, 5) == "rank 0 said start", "the hub said it once it went on"
        hub.close()
        wait_until(lambda: not spoke.linked())
        assert spoke.alone_since() is not None
        # (A port held and never listened on: nothing answers there, not even the connect itself.)
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        alone = guard_link.Spoke("127.0.0.1", held.getsockname()[1], guard_link.signing_key("", "grp_a"), 2)
        assert guard_link.barrier(alone, 5) == "rank 0's guard is out of reach: started alone"
        alone.close()
        held.close()
    finally:
        spoke.close()


def wait_until(condition, timeout=10.0):
    """A hang guard for the link's threads (loopback answers in milliseconds)."""
    until = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < until, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("last, result, relayed", [
    (dict(SPOKE_PENDING, config_id="c0ffee"), None, True),
    (dict(SPOKE_PENDING, config_id="c0ffee", phase="rollback"), None, False),
    (dict(SPOKE_PENDING, config_id="c0ffee"), {"pending": {"config_id": "c0ffee"}, "reason": "follow"}, False),
], ids=["its controller confirmed rank 0: the group hears it", "a rollback's disarm: not a confirmation",
        "rank 0's guard restored: not a confirmation"])
def test_rank_0s_guard_says_the_group_is_confirmed_only_when_its_controller_did(tmp_path, last, result, relayed):
    if result:
        (tmp_path / guard.RESULT).write_text(json.dumps(result))
    sent = []

    class Hub(object):
        is_hub = True

        def say(self, word, why="", kind=""):
            sent.append(word)
            return [1]
    told = guard.relay_confirmation(Hub(), last, str(tmp_path))
    assert (told, sent) == (([1], [guard_link.CONFIRMED]) if relayed else (None, []))


def test_a_spoke_the_group_confirmed_ends_its_guard_and_one_told_to_restore_acts_for_the_group(tmp_path, monkeypatch):
    pending = dict(SPOKE_PENDING, config_id="c0ffee", unit="sglang.service")
    monkeypatch.setattr(guard, "read_unit", lambda unit: status("old"))
    monkeypatch.setattr(guard, "systemctl", lambda *args: (0, ""))

    class Spoke(object):
        is_hub = False

        def __init__(self, words):
            self.words = list(words)

        def next_word(self):
            return self.words.pop(0) if self.words else None

        def alone_since(self):
            return None

        def close(self):
            pass
    (tmp_path / guard.PENDING).write_text(json.dumps(pending))
    monkeypatch.setattr(guard, "linked", lambda state_dir, p: Spoke([(guard_link.CONFIRMED, 0, "DDTREE confirmed", "")]))
    assert guard.follow(str(tmp_path), poll=0.01).endswith("the server group's switch; confirmed")
    assert not (tmp_path / guard.PENDING).exists()
    (tmp_path / guard.PENDING).write_text(json.dumps(pending))
    acted = []
    monkeypatch.setattr(guard, "linked", lambda state_dir, p: Spoke([(guard_link.RESTORE, 0, "oom", "follow")]))
    monkeypatch.setattr(guard, "act", lambda state_dir, why, failing, **kw: acted.append((why, failing)) or "done")
    assert guard.follow(str(tmp_path), poll=0.01) == "done"
    assert acted[0][0] == guard.GROUP and acted[0][1]["failed"], acted
    assert acted[0][1]["why"] == "ct200 (rank 0)'s guard restores the server group (oom)"


# -- the watch after the gates (the follower, once the switch is confirmed) -----------------------

WATCH_OPTIONS = {"duration": 600.0, "interval": 10.0, "url": "http://127.0.0.1:30000", "metrics": False,
                 "limits": {}, "baseline": {}, "gateway": None}


def test_a_watch_begins_with_the_switchs_record_and_is_ended_once(tmp_path):
    record = guard.begin_watch(str(tmp_path), dict(PENDING, unit="sglang.service"), WATCH_OPTIONS, T0)
    assert record["until"] == T0 + 600 and record["config_id"] == "c0ffee" and guard.watching_now(record, "c0ffee")
    assert guard.watch_said(guard.read_watch(str(tmp_path)), now=T0 + 1) == "watching DDTREE until 12:23:20"
    assert guard.watch_said(guard.read_watch(str(tmp_path)), now=T0 + 900) == \
        "the watch of DDTREE did not end by 12:23:20: its follower stopped (a reboot?)"
    ended = guard.end_watch(str(tmp_path), guard.SUPERSEDED, "a switch to DFLASH began at 12:15:00")
    assert ended["outcome"] == "superseded" and not guard.watching_now(guard.read_watch(str(tmp_path)))
    assert guard.watch_said(ended).endswith(": a switch to DFLASH began at 12:15:00")
    assert guard.end_watch(str(tmp_path), guard.CLEAN, "again") is None, "a watch ends once"
    summary = guard.watch_summary(dict(ended, watch=dict(WATCH_OPTIONS, gateway={"api_key": "k"})))
    assert "watch" not in summary and summary["said"] == guard.watch_said(ended), "no gateway key in the facts"


def watched(tmp_path, monkeypatch, probes, until=T0 + 600, pending=None, during=None, resumed_at=None, journal=None,
            waits=None):
    """The follower's watch over `probes` (one per interval), the clock one interval per probe:
    (its line, the breach it acted on or None, the probes taken). `during(n)` runs at probe n;
    `waits` gets how long each probe's generation may wait."""
    guard.begin_watch(str(tmp_path), dict(pending or PENDING, unit="sglang.service"), WATCH_OPTIONS, T0)
    record = guard.read_watch(str(tmp_path))
    guard.write_json(str(tmp_path / guard.WATCH), dict(record, until=until, **(
        {"resumed_at": resumed_at} if resumed_at else {})))
    clock, taken, acted = [T0], [], []
    monkeypatch.setattr(guard.time, "time", lambda: clock[0])
    monkeypatch.setattr(guard, "WatchedJournal", journal or (lambda unit, since: None))
    monkeypatch.setattr(guard, "api_key", lambda state_dir: "")
    monkeypatch.setattr(guard, "read_unit", lambda unit: {"n_restarts": 0})

    def probe(record, journal, key, generation_waits):
        taken.append(clock[0])
        (waits if waits is not None else []).append(generation_waits)
        if during:
            during(len(taken))
        return dict(probes[len(taken) - 1], time=clock[0])
    monkeypatch.setattr(guard, "probe", probe)
    monkeypatch.setattr(guard, "act_on_breach", lambda state_dir, record, breach, link=None, told=False: acted.append(breach) or "restored")

    def sleep(seconds):
        clock[0] += seconds
    return guard.watch(str(tmp_path), "c0ffee", sleep=sleep), (acted or [None])[0], taken


@pytest.mark.parametrize("record, now, refused", [
    ({"until": T0 + 600}, T0 + 60, None),
    ({"until": T0 + 600}, T0 + 600, "the host was down when its time ran out (it booted at 12:23:20)"),
    ({"until": T0 + 600, "group": {"name": "grp_a", "node_rank": 0}}, T0 + 60,
     "the host rebooted at 12:14:20: a server group's node does not watch alone (its peers' watches saw it go)"),
], ids=["within its time: it goes on", "its time ran out while the host was down", "a server group's node"])
def test_resume_refused(record, now, refused):
    assert guard.resume_refused(record, now) == refused


@pytest.mark.parametrize("group, until, resumed", [
    (None, T0 + 600, True), (None, T0 + 30, False), ({"name": "grp_a", "node_rank": 0}, T0 + 600, False),
], ids=["resumed", "its time ran out meanwhile", "a server group's node"])
def test_a_host_that_boots_during_a_watch_resumes_it(tmp_path, monkeypatch, group, until, resumed):
    guard.begin_watch(str(tmp_path), dict(PENDING, unit="sglang.service", group=group), WATCH_OPTIONS, T0)
    guard.write_json(str(tmp_path / guard.WATCH), dict(guard.read_watch(str(tmp_path)), until=until))
    ran = []
    monkeypatch.setattr(guard, "systemctl", lambda *args: ran.append(args) or (0, "", ""))
    line = guard.resume_watch(str(tmp_path), now=T0 + 60)
    record = guard.read_watch(str(tmp_path))
    assert guard.watching_now(record) == resumed and (record.get("resumed_at") == T0 + 60) == resumed, record
    assert (("start", "--no-block", "sglang-guard-follow.service") in ran) == resumed, ran
    assert (("disable", "sglang-guard-boot.service") in ran) != resumed, ran
    if resumed:
        assert line.endswith("the watch of DDTREE goes on until 12:23:20, once the server is back"), line
        assert guard.watch_said(record, now=T0 + 61) == "watching DDTREE until 12:23:20 (resumed after the host's " \
            "reboot at 12:14:20)"
    else:
        assert record["outcome"] == guard.SUPERSEDED and line.endswith(record["ended_why"]), (line, record)
    # Booted again with no watch running: the boot unit is disabled, nothing else.
    ran.clear()
    if not resumed:
        assert "nothing to do" in guard.resume_watch(str(tmp_path), now=T0 + 90)
        assert ran == [("disable", "sglang-guard-boot.service")], ran


@pytest.mark.parametrize("back, acted", [(None, False), ({"cause": "server_exited", "why": "x"}, True)],
                         ids=["the server is back: the watch goes on", "it does not come back: a breach"])
def test_a_resumed_watch_first_waits_for_the_server_to_come_back(tmp_path, monkeypatch, back, acted):
    waited, since = [], []
    monkeypatch.setattr(guard, "not_back", lambda record, key: waited.append(record["resumed_at"]) or back)
    real = guard.WatchedJournal

    def journal(unit, started):
        since.append(started)
        return real(unit, started)
    line, breach, taken = watched(tmp_path, monkeypatch, [OK_PROBE] * 3, until=T0 + 25,
                                  during=None, resumed_at=T0 + 5, journal=journal)
    assert waited == [T0 + 5] and breach is back and bool(taken) != acted, (line, breach, taken)
    assert since == ([] if acted else [T0 + 5]), "its journal read from the boot on"


OK_PROBE = {"unit": "active", "generation": "ok"}
DEAD = {"unit": "active", "generation": "failed", "generation_evidence": "GET /health_generate answered 503 after 20.0 s"}


def test_the_watch_acts_on_the_probe_that_breaches(tmp_path, monkeypatch):
    line, breach, taken = watched(tmp_path, monkeypatch, [OK_PROBE, DEAD, DEAD, DEAD, OK_PROBE])
    assert line == "restored" and breach["cause"] == "generation_failed" and len(taken) == 4


CRASHED = {"unit": "failed", "result": "signal", "restarts": 0,
           "diagnosis": {"cause": "cuda_error", "rank": "TP0", "evidence": [{"match": "CUDA error: an illegal memory"}]}}


@pytest.mark.parametrize("released_at, acted_at", [(None, 2), (1, 1), (2, 2)],
                         ids=["its controller went away: after the grace", "the deploy already done",
                              "the deploy done at the next probe"])
def test_a_breach_waits_for_the_confirming_deploy_to_be_done_with_the_host(
        tmp_path, monkeypatch, released_at, acted_at):
    """The deploy that confirmed the switch rejoins the gateway and records what runs after the
    confirmation: the watch's restore waits until its lock is released, or the grace (15 s) passed;
    the breach found first is the one acted on."""
    lock = tmp_path / "deploy.lock"
    lock.write_text(json.dumps({"run_id": "r1"}))
    pending = dict(PENDING, lock={"path": str(lock), "run_id": "r1"})

    def release(probe_number):
        if probe_number == released_at:
            lock.unlink()
    line, breach, taken = watched(tmp_path, monkeypatch, [CRASHED, dict(CRASHED, diagnosis=None), OK_PROBE],
                                  pending=pending, during=release)
    assert line == "restored" and len(taken) == acted_at
    assert (breach["cause"], breach["time"]) == ("cuda_error", T0 + 10), breach


def test_a_watch_with_no_breach_ends_clean_when_its_time_runs_out(tmp_path, monkeypatch):
    line, breach, taken = watched(tmp_path, monkeypatch, [OK_PROBE, DEAD, OK_PROBE] * 3, until=T0 + 95)
    assert breach is None and len(taken) == 9
    assert line == "inferops.sglang guard (watch): the watch of DDTREE ended clean at 12:15:00"
    assert guard.read_watch(str(tmp_path))["outcome"] == "clean"


@pytest.mark.parametrize("environment, waits", [
    (None, 25.0), ("PYTHONUNBUFFERED=1\nSGLANG_HEALTH_CHECK_TIMEOUT=60\n", 65.0)],
    ids=["SGLang's default 20 s", "raised by its operator"])
def test_a_generation_waits_as_long_as_the_servers_own_health_timeout(tmp_path, monkeypatch, environment, waits):
    # (The server's environment file, as its unit reads it: a health request is called hung only
    # once SGLang's own timeout and a margin went by without an answer.)
    if environment:
        (tmp_path / "sglang.env").write_text(environment)
    seen = []
    watched(tmp_path, monkeypatch, [OK_PROBE] * 3, until=T0 + 25, waits=seen)
    assert seen and set(seen) == {waits}


def test_a_watch_another_ended_stops_without_acting(tmp_path, monkeypatch):
    probes, taken = [OK_PROBE] * 3, []

    def superseded_after_two(record, journal, key, waits):
        taken.append(1)
        if len(taken) == 2:
            guard.end_watch(str(tmp_path), guard.SUPERSEDED, "the next deploy took it as the known-good at 12:14:00")
        return dict(probes[0], time=T0)
    guard.begin_watch(str(tmp_path), dict(PENDING, unit="sglang.service"), WATCH_OPTIONS, T0)
    monkeypatch.setattr(guard.time, "time", lambda: T0 + 5)
    monkeypatch.setattr(guard, "WatchedJournal", lambda unit, since: None)
    monkeypatch.setattr(guard, "api_key", lambda state_dir: "")
    monkeypatch.setattr(guard, "probe", superseded_after_two)
    monkeypatch.setattr(guard, "read_unit", lambda unit: {"n_restarts": 0})
    line = guard.watch(str(tmp_path), "c0ffee", sleep=lambda s: None)
    assert line.endswith("the watch of DDTREE ended: the next deploy took it as the known-good at 12:14:00")
    assert guard.watch(str(tmp_path), "c0ffee", sleep=lambda s: None) is None, "no watch of it runs any more"
    assert guard.watch(str(tmp_path / "none"), "c0ffee") is None


def test_the_watched_journal_reads_on_from_its_cursor_through_the_classifier(monkeypatch):
    answers = iter([
        "INFO:     127.0.0.1 - \"GET /health_generate HTTP/1.1\" 200\n-- cursor: s=1\n",
        "[rank8]:[E1207 14:11:02.123] Process group watchdog thread terminated with exception: "
        "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[198.18.0.12]:29500\n-- cursor: s=2\n"])
    argvs = []
    monkeypatch.setattr(guard, "run_command", lambda argv: argvs.append(argv) or (0, next(answers), ""))
    journal = guard.WatchedJournal("sglang.service", T0)
    assert journal.read() is None
    found = journal.read()
    assert argvs[0][-2:] == ["--since", "@%d" % T0] and argvs[1][-2:] == ["--after-cursor", "s=1"]
    assert found["cause"] == "peer_died" and found["rank"] == "TP8", found


def test_the_watchs_restore_is_said_with_its_breach():
    result = {"reason": "watch", "healthy": True, "restored": "nextn", "time": T0 + 660, "seconds": 8.04,
              "why": "peer_died on TP8 (Connection closed by peer [198.18.0.12]:29500)"}
    assert guard.said(result) == ("the watch restored NEXTN at 12:24:20: peer_died on TP8 (Connection closed by peer "
                                  "[198.18.0.12]:29500), healthy in 8.0 s")
    assert guard.breach_said({"why": "peer_died on TP8", "rank": "TP8", "evidence": "x"}) == "peer_died on TP8 (x)"
    assert guard.breach_said({"why": "3 generations in a row failed since 12:20:00", "rank": None,
                              "evidence": "GET /health_generate answered 503 after 20.0 s"}) == \
        "3 generations in a row failed since 12:20:00 (GET /health_generate answered 503 after 20.0 s)"


def test_a_gateway_that_answers_badly_never_holds_the_watchs_restore_back(monkeypatch):
    from http.client import BadStatusLine

    def broken(method, base, path, headers):
        raise BadStatusLine("HTTP/1.1 2")
    monkeypatch.setattr(guard, "gateway_call", broken)
    record = {"watch": {"gateway": {"url": "http://198.18.7.1:38000", "worker_url": "http://198.18.7.2:30000"}}}
    assert guard.drain(record).startswith("http://198.18.7.1:38000 could not be reached: ")
    assert record["gateway"]["worker_url"] == "http://198.18.7.2:30000", "put back after the restore all the same"
    assert guard.drain({"watch": {}}) is None, "no gateway: nothing to drain"


DRAINING = {"id": "w1", "url": "http://198.18.0.5:30000", "is_healthy": True, "status": "draining"}
READY = dict(DRAINING, status="ready")


@pytest.mark.parametrize("entries, posted, error", [
    ([DRAINING, DRAINING, None, None, READY], True, None),
    ([None, None, READY], True, None),
    ([READY, READY], False, None),
    ([DRAINING] * 200, False, "still drained"),
    ([None] * 200, True, "did not route to"),
], ids=["a removal still draining ends first", "gone: added, then routed", "in rotation already",
        "a removal that never ends", "added, never routed"])
def test_the_watchs_rejoin_waits_for_the_gateways_removal_then_for_its_route(monkeypatch, entries, posted, error):
    """smg answers POST /workers with 409 while the removal of the drained entry is under way, and
    then drops the entry: the rejoin waits for the removal to end, adds the worker, and waits until
    the gateway routes to it."""
    seen, calls, clock = list(entries), [], [0.0]

    def listing(method, base, path, headers):
        entry = seen.pop(0) if len(seen) > 1 else seen[0]   # (the last stays)
        return 200, {"workers": [entry] if entry else []}
    monkeypatch.setattr(guard, "gateway_call", listing)
    monkeypatch.setattr(guard, "http_call", lambda method, url, headers, body: calls.append((method, url)) or (202, b""))
    monkeypatch.setattr(guard.time, "monotonic", lambda: clock[0])

    def sleep(seconds):
        clock[0] += seconds
    said = guard.rejoin({"url": "http://gw:31000", "worker_url": "http://198.18.0.5:30000"}, None, sleep=sleep)
    assert (said is None) == (error is None) and (error is None or error in said), said
    assert (calls == [("POST", "http://gw:31000/workers")]) == posted, calls


# -- a server group's watch: its nodes watched as one ---------------------------------------------

class QuietLink(object):
    """A node's link to the group's other guards, saying `words` once `after` waits passed."""

    def __init__(self, is_hub, words=(), after=0):
        self.is_hub, self.words, self.after, self.said = is_hub, list(words), after, []

    def next_word(self):
        if self.after > 0:
            self.after -= 1
            return None
        return self.words.pop(0) if self.words else None

    def say(self, word, why="", kind=""):
        self.said.append((word, why, kind))
        return [1] if self.is_hub else [0]


def test_a_group_nodes_watch_hears_its_link_between_probes(monkeypatch):
    slept = []
    assert guard.word_within(None, 10.0, slept.append) is None and slept == [10.0]
    slept = []
    link = QuietLink(False, [(guard_link.CONFIRMED, 0, "x", ""), (guard_link.RESTORE, 0, "oom", "follow")], after=3)
    assert guard.word_within(link, 10.0, slept.append) == (guard_link.RESTORE, 0, "oom", "follow")
    assert slept == [guard.HEAR_EVERY] * 4, "heard within its half-second steps, a confirmation ignored"
    slept = []
    assert guard.word_within(QuietLink(True), 2.0, slept.append) is None and sum(slept) == 2.0


GROUP_PENDING = dict(SPOKE_PENDING, config_id="c0ffee", unit="sglang.service")


@pytest.mark.parametrize("is_hub, heard, told, said", [
    (False, (guard_link.RESTORE, 0, "peer_died on TP0 (Connection closed by peer)", "follow"), True, []),
    (True, (guard_link.FAILED, 1, "the unit is failed", "follow"), True, [guard_link.RESTORE]),
], ids=["a node rank 0 tells: it restores, and says nothing back",
        "rank 0 a node tells it failed: it makes every node restore"])
def test_a_word_of_the_group_makes_a_watching_node_restore_as_one(tmp_path, monkeypatch, is_hub, heard, told, said):
    guard.begin_watch(str(tmp_path), GROUP_PENDING, WATCH_OPTIONS, T0)
    link, restored = QuietLink(is_hub, [heard], after=5), []
    monkeypatch.setattr(guard, "read_unit", lambda unit: {"n_restarts": 0})
    monkeypatch.setattr(guard, "api_key", lambda state_dir: "")
    monkeypatch.setattr(guard, "WatchedJournal", lambda unit, since: None)
    monkeypatch.setattr(guard, "probe", lambda record, journal, key: dict(OK_PROBE, time=T0))
    monkeypatch.setattr(guard, "restore", lambda state_dir, record, link=None: restored.append(link) or
                        {"healthy": True, "restored": "nextn", "seconds": 3.0})
    monkeypatch.setattr(guard, "remember_failure", lambda *args: None)
    line = guard.watch(str(tmp_path), "c0ffee", sleep=lambda s: None, link=link)
    assert restored == [link], "the restore waits at the group's barrier"
    assert [word for word, _why, _kind in link.said] == said
    result = guard.read_result(str(tmp_path))
    assert result["breach"]["cause"] == "group_node_failed" and result["reason"] == guard.WATCHED, result
    node = "ct200 (rank 0)" if not is_hub else "ctg1 (rank 1)"
    assert result["why"].startswith(node) and line.startswith("inferops.sglang guard (watch): the watch restored NEXTN")
    assert guard.read_watch(str(tmp_path))["outcome"] == guard.RESTORED


def test_a_nodes_own_breach_tells_the_group_before_it_restores(tmp_path, monkeypatch):
    guard.begin_watch(str(tmp_path), GROUP_PENDING, WATCH_OPTIONS, T0)
    link = QuietLink(False)
    monkeypatch.setattr(guard, "drain", lambda record: None)
    monkeypatch.setattr(guard, "restore", lambda state_dir, record, link=None: {"healthy": True, "restored": "nextn"})
    monkeypatch.setattr(guard, "remember_failure", lambda *args: None)
    breach = {"cause": "server_exited", "time": T0, "evidence": "the unit is failed", "rank": None,
              "why": "the server exited, its journal naming no cause"}
    guard.act_on_breach(str(tmp_path), guard.read_watch(str(tmp_path)), breach, link)
    assert link.said == [(guard_link.FAILED, "the server exited, its journal naming no cause (the unit is failed)",
                          guard.FOLLOW)]


def test_a_held_node_begins_its_watch_when_rank_0_confirms_the_group(tmp_path, monkeypatch):
    monkeypatch.setattr(guard, "systemctl", lambda *args: (0, ""))
    held = dict(GROUP_PENDING, phase=guard.HELD, held_watch=WATCH_OPTIONS)
    (tmp_path / guard.PENDING).write_text(json.dumps(held))
    assert guard.confirmed_by_rank_0(str(tmp_path), "c0ffee").endswith("; confirmed")
    record = guard.read_watch(str(tmp_path))
    assert guard.watching_now(record, "c0ffee") and record["group"]["node_rank"] == 1 and "held_watch" not in record
    assert not (tmp_path / guard.PENDING).exists()


def test_a_rollback_that_ends_the_watch_is_taken_up_by_the_watching_follower(tmp_path, monkeypatch):
    """rollback.yml during a watch: its arm ends the watch and hands its restore over, and only
    starts a follower that is not running - so the watching one takes the restore up."""
    guard.begin_watch(str(tmp_path), dict(PENDING, unit="sglang.service"), WATCH_OPTIONS, T0)

    def rollback_arrives(state_dir, config_id, sleep=None, link=None):
        guard.write_json(os.path.join(state_dir, guard.PENDING), dict(ARMED, phase=guard.RESTORE_PHASE))
        return "inferops.sglang guard (watch): the watch of DDTREE ended: a rollback began at 12:15:00"
    acted = []
    monkeypatch.setattr(guard, "watch", rollback_arrives)
    monkeypatch.setattr(guard, "read_unit", lambda unit: status("old"))
    monkeypatch.setattr(guard, "act", lambda state_dir, reason, failing=None, **kw: acted.append(reason) or "restored")
    assert guard.follow(str(tmp_path), poll=0.01) == "restored" and acted == [guard.DEADLINE]
