"""The host's guard (module_utils/guard.py) as data tables: what a run of it decides from the
pending switch, the reason it runs and the clock; what it says; and the known-good checks it
makes before it trusts a snapshot (host_state.known_good_problem)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import guard, host_state

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
], ids=["nothing pending at the deadline", "nothing pending at boot", "a timer before the deadline waits",
        "the deadline passed: restore", "within the timer's accuracy: restore", "during a rollback",
        "a boot with a switch pending restores at once"])
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
], ids=["never acted", "restored, healthy", "restored, not healthy"])
def test_said(result, text):
    assert guard.said(result) == text


def test_units_and_timer():
    units = ("sglang-guard.timer", "sglang-guard.service", "sglang-guard-boot.service")
    assert guard.guard_units("sglang.service") == units
    timer = guard.timer_text("sglang.service", T0 + 330)
    assert "OnCalendar=2026-12-03 12:18:50 UTC\n" in timer and "Unit=sglang-guard.service\n" in timer
    boot = guard.service_text("sglang.service", "/usr/bin/python3", "/etc/sglang", "boot")
    assert "ExecStart=/usr/bin/python3 /usr/local/lib/inferops-sglang/guard/sglang-guard --state-dir /etc/sglang " \
           "--reason boot\n" in boot and "WantedBy=multi-user.target" in boot
    assert "[Install]" not in guard.service_text("sglang.service", "/usr/bin/python3", "/etc/sglang", "deadline")


def test_a_run_with_nothing_pending_changes_nothing(tmp_path):
    assert guard.run(str(tmp_path), "boot") == \
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
