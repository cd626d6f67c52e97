"""sglang_guard's pending record, as a table: what a first arm records (the unit's invocation at
the arm, the lock's run, the gateway the worker was drained from and when), and what a
rollback's re-arm of the same switch keeps; and its read of what the guard did on a switch,
under the guard's lock."""
from __future__ import annotations

import json
import threading
import time
from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import guard
from ansible_collections.inferops.sglang.plugins.modules import sglang_guard

T0 = 1796300000.0
PARAMS = {"config_id": "c0ffee", "variant": "ddtree", "phase": "gate", "deadline": 330.0, "unit": "sglang.service",
          "unit_dir": "/etc/systemd/system", "group": "root", "timeout": 600.0, "settle": 3.0, "grace": 15.0,
          "leftovers_timeout": 60.0, "tolerance_mib": 1024, "host": "127.0.0.1", "port": 30000, "gateway": None,
          "cause": None, "wait": 0.0, "server_group": None, "group_port": 30097, "group_key": ""}
GATEWAY = {"url": "http://198.18.7.1:38000", "worker_url": "http://198.18.7.2:30000", "api_key": ""}


def record(tmp_path, earlier, **over):
    lock = tmp_path / "deploy.lock"
    lock.write_text(json.dumps({"run_id": "vm:1:2"}))
    module = MagicMock(check_mode=False)
    module.run_command.return_value = (0, "InvocationID=now-running\nActiveState=active\n", "")
    return sglang_guard.pending_record(module, dict(PARAMS, lock_path=str(lock), **over), T0, earlier)


@pytest.mark.parametrize("earlier, over, expected", [
    (None, {}, {"started": T0, "invocation": "now-running", "gateway": None, "lock": {"run_id": "vm:1:2"}}),
    (None, {"gateway": GATEWAY}, {"gateway": dict(GATEWAY, drained_at=T0)}),
    ({"config_id": "other", "started": T0 - 99, "invocation": "older", "gateway": dict(GATEWAY, drained_at=1.0)}, {},
     {"started": T0, "invocation": "now-running", "gateway": None}),
    ({"config_id": "c0ffee", "started": T0 - 40, "invocation": "before-the-switch",
      "gateway": dict(GATEWAY, drained_at=T0 - 41)}, {"phase": "rollback"},
     {"started": T0 - 40, "invocation": "before-the-switch", "gateway": dict(GATEWAY, drained_at=T0 - 41),
      "phase": "rollback"}),
], ids=["a first arm", "a first arm of a drained worker", "another switch's record is not kept",
        "the rollback's re-arm keeps the switch's start, invocation and drain"])
def test_pending_record(tmp_path, earlier, over, expected):
    got = record(tmp_path, earlier, **over)
    got["lock"] = {"run_id": got["lock"]["run_id"]}
    assert dict((key, got[key]) for key in expected) == expected
    assert got["armed_at"] == T0 and got["deadline"] == T0 + 330.0


# A server group's node as sglang_group says it (its other keys are ignored).
NODE = {"name": "grp_a", "nodes": ["ct200", "ctg1"], "nnodes": 2, "node_rank": 1, "face": False,
        "dist_init_addr": "198.18.3.32:29500", "changed": False}


@pytest.mark.parametrize("over, problem", [
    ({"deadline": -1877.0}, "deadline must be a positive number of seconds, got -1877.0"),
    ({"grace": 60.0}, "grace must be more than 0 and at most 15 seconds, got 60.0"),
    ({"grace": 0.0}, "grace must be more than 0 and at most 15 seconds, got 0.0"),
    ({"settle": -1.0}, "timeout must be positive, settle and leftovers_timeout 0 or more"),
    ({"server_group": dict(NODE, node_rank=2)}, "server_group grp_a: node_rank 2 is not one of its 2 nodes (ct200, ctg1)"),
    ({"server_group": dict(NODE, dist_init_addr="")}, "server_group lacks dist_init_addr (give sglang_group's result)"),
    ({"server_group": NODE, "group_port": 70000}, "group_port must be a TCP port (1-65535), got 70000"),
    ({"server_group": NODE, "group_port": 30097}, None),
    ({}, None),
], ids=["a negative margin", "a grace over 15 s", "no grace", "a negative settle", "a rank the group does not have",
        "a group without its address", "a port out of range", "a server group's node, in range", "in range"])
def test_inputs_out_of_range_are_refused_before_anything_is_written(over, problem):
    said = sglang_guard.input_problem(dict(PARAMS, **over))
    assert (said or "").startswith(problem or "") and (said is None) is (problem is None)


ARM = {"config_id": "c0ffee", "armed_at": T0}
ACTED = {"pending": ARM, "reason": "deadline", "why": "the controller did not confirm DDTREE by its deadline",
         "restored": "nextn", "healthy": True, "time": T0 + 40}


def read(state_dir, wait=0.0):
    return sglang_guard.read(MagicMock(check_mode=False), dict(PARAMS, state_dir=str(state_dir), wait=wait))


@pytest.mark.parametrize("files, fired", [
    ({"guard.json": ACTED}, True),
    ({"pending.json": ARM, "guard.json": dict(ACTED, healthy=False, error="the guard's run did not finish")}, False),
    ({"guard.json": dict(ACTED, pending=dict(ARM, config_id="earlier"))}, False),
    ({"pending.json": ARM}, False),
], ids=["it restored this switch", "its run on this switch did not finish", "it acted on an earlier switch",
        "it has not acted"])
def test_read_says_whether_the_guard_acted_on_this_switch_and_changes_nothing(tmp_path, files, fired):
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    got = read(tmp_path)
    assert (got["fired"] is not None, got["changed"]) == (fired, False), got
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(files) + ["guard.lock"])


def test_read_waits_for_a_guard_run_that_restores_the_switch_and_reads_how_it_ended(tmp_path):
    """A guard run holds its lock from its decision to its end; what it said as it began (the
    switch still pending) is not how it ended."""
    (tmp_path / "pending.json").write_text(json.dumps(ARM))
    (tmp_path / "guard.json").write_text(json.dumps(dict(ACTED, healthy=False, error="the guard's run did not finish")))
    holding, answer = threading.Event(), {}

    def guard_run():
        with guard.Locked(str(tmp_path)):
            holding.set()
            reader.start()
            reader.join(0.3)
            assert reader.is_alive() and not answer, "the read waits on the lock: %s" % answer
            (tmp_path / "guard.json").write_text(json.dumps(ACTED))
            (tmp_path / "pending.json").unlink()
    reader = threading.Thread(target=lambda: answer.update(read(tmp_path)))
    guard_run()
    reader.join(10)
    assert holding.is_set() and answer["fired"] == ACTED and answer["pending"] is None, answer


def test_a_rollbacks_arm_returns_at_once_while_the_guard_restores_the_switch(tmp_path):
    """The guard's own run restores the switch (its follower's grace ran out) and holds its lock:
    the rollback's hand-over returns at once, and its read (restore.yml) waits for the end."""
    pending = dict(ARM, deadline=T0 + 330)
    (tmp_path / "pending.json").write_text(json.dumps(pending))
    (tmp_path / "guard.json").write_text(json.dumps(dict(ACTED, pending=pending, healthy=False,
                                                         error=guard.UNFINISHED)))
    module = MagicMock(check_mode=False)
    with guard.Locked(str(tmp_path)):
        got = sglang_guard.arm(module, dict(PARAMS, state_dir=str(tmp_path), phase="restore", deadline=5.0))
    assert (got["changed"], got["pending"]) == (False, pending) and "restoring the known-good already" in got["msg"]
    # (An earlier switch's unfinished run is not this one's.)
    assert guard.restoring("c0ffee", pending, dict(ACTED, pending=dict(ARM, armed_at=T0 - 600),
                                                   error=guard.UNFINISHED)) is None


def test_read_on_a_host_the_deploy_has_not_prepared_finds_nothing(tmp_path):
    assert read(tmp_path / "none") == dict(changed=False, pending=None, fired=None, ended=None, rollback=None, said=None)


HANDED = dict(ACTED, reason="rollback", why="the controller rolled DDTREE back and handed its restore to the host",
              known_good="NEXTN", seconds=6.0)


def test_a_read_with_wait_returns_the_handed_over_restore_once_it_ended_as_the_rollbacks_result(tmp_path):
    """The rollback's wait (restore.yml): the switch stays pending until the guard's run that
    restores it ends; the read then returns its result, not as the guard's act of its own."""
    (tmp_path / "pending.json").write_text(json.dumps(dict(ARM, phase="restore")))

    def guard_run():
        with guard.Locked(str(tmp_path)):
            (tmp_path / "guard.json").write_text(json.dumps(HANDED))
            (tmp_path / "pending.json").unlink()
    timer = threading.Timer(0.5, guard_run)
    timer.start()
    got = read(tmp_path, wait=30.0)
    timer.join()
    assert got["pending"] is None and got["fired"] is None and got["ended"] == HANDED, got
    assert got["rollback"]["gate"] == {"state": "healthy", "elapsed": 6.0, "unit": None} and got["rollback"]["known_good"] == "NEXTN"


def test_a_read_with_wait_says_a_restore_still_under_way_unfinished(tmp_path):
    (tmp_path / "pending.json").write_text(json.dumps(dict(ARM, phase="restore")))
    got = read(tmp_path, wait=0.3)
    assert got["ended"] is None and got["rollback"]["gate"]["state"] == "unfinished", got


def test_a_restore_handed_over_is_read_without_waiting_for_the_run_that_restores_it(tmp_path):
    """The outcome's read, and the handler's arm, of a switch whose restore the failed gate handed
    to the host: the guard's run holds its lock for the whole restore, and neither waits for it
    (the rollback's read with wait does); neither says the guard acted on its own."""
    (tmp_path / "pending.json").write_text(json.dumps(dict(ARM, phase="restore", deadline=T0 + 5)))
    module = MagicMock(check_mode=False)
    params = dict(PARAMS, state_dir=str(tmp_path), phase="restore")
    with guard.Locked(str(tmp_path)):
        got = sglang_guard.read(module, params)
        armed = sglang_guard.arm(module, params)
    assert (got["fired"], got["ended"], got["pending"]["phase"]) == (None, None, "restore"), got
    assert (armed["changed"], armed["fired"]) == (False, None) and "handed over at" in armed["msg"], armed
    module.run_command.assert_not_called()


WATCH = {"duration": 600.0, "interval": 10.0, "url": "http://127.0.0.1:30000", "metrics": False, "limits": {},
         "baseline": {}, "gateway": None}


# (A pending record's `group` is its server group's, not the service's posix group of PARAMS.)
SWITCH = {"config_id": "c0ffee", "variant": "ddtree", "phase": "gate", "unit": "sglang.service", "armed_at": T0,
          "group": None}


@pytest.mark.parametrize("pending, watch, known_good, watched", [
    (SWITCH, WATCH, True, True),
    (SWITCH, dict(WATCH, duration=0.0), True, False),
    (SWITCH, None, True, False),
    (dict(SWITCH, group={"name": "ctg", "node_rank": 0}), WATCH, True, True),
    (SWITCH, WATCH, False, False),
], ids=["a watch", "duration 0", "none asked", "rank 0 of a server group: its watch begins now",
        "a first deploy: no known-good to restore"])
def test_the_confirmation_begins_the_watch_and_ends_the_switch(
        tmp_path, monkeypatch, pending, watch, known_good, watched):
    (tmp_path / guard.PENDING).write_text(json.dumps(pending))
    if known_good:
        (tmp_path / "known-good").mkdir()
        (tmp_path / "known-good" / "meta.json").write_text(json.dumps({"variant": "nextn"}))
    ran = []
    monkeypatch.setattr(sglang_guard, "run", lambda module, *args: ran.append(args) or "")
    module = MagicMock(check_mode=False)
    params = dict(PARAMS, state_dir=str(tmp_path), hold=False, watch=watch)
    said = sglang_guard.disarm(module, params)
    assert said["changed"] and not (tmp_path / guard.PENDING).exists()
    record = guard.read_watch(str(tmp_path))
    assert guard.watching_now(record, "c0ffee") == watched and bool(said["watching_until"]) == watched
    assert (("start", "--no-block", "sglang-guard-follow.service") in ran) == watched, ran
    # (The boot unit stays enabled while the watch runs: a reboot resumes it.)
    assert (("disable", "sglang-guard-boot.service") in ran) != watched, ran


@pytest.mark.parametrize("watch, held", [(WATCH, True), (None, False)], ids=["a watch asked", "none asked"])
def test_a_held_node_keeps_its_watch_for_rank_0s_confirmation(tmp_path, monkeypatch, watch, held):
    """A server group's node other than rank 0 holds its switch until rank 0's guard says the
    group's is confirmed (guard.confirmed_by_rank_0): its watch begins then, from the options
    its hold kept in the switch's record."""
    (tmp_path / guard.PENDING).write_text(json.dumps(dict(SWITCH, group={"name": "ctg", "node_rank": 1})))
    (tmp_path / "known-good").mkdir()
    (tmp_path / "known-good" / "meta.json").write_text(json.dumps({"variant": "nextn"}))
    monkeypatch.setattr(sglang_guard, "run", lambda module, *args: "")
    said = sglang_guard.disarm(MagicMock(check_mode=False), dict(PARAMS, state_dir=str(tmp_path), hold=True, watch=watch))
    kept = json.loads((tmp_path / guard.PENDING).read_text())
    assert said["changed"] and kept["phase"] == guard.HELD and kept.get(guard.HELD_WATCH) == (watch if held else None), kept
    assert bool(said["watching_until"]) == held and guard.read_watch(str(tmp_path)) is None, "not before rank 0"


def test_a_new_switch_ends_the_watch_of_the_one_before(tmp_path, monkeypatch):
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, T0)
    monkeypatch.setattr(sglang_guard, "run", lambda module, *args: "")
    monkeypatch.setattr(sglang_guard, "write_program", lambda check: False)
    monkeypatch.setattr(sglang_guard, "write_units", lambda params, deadline, check: False)
    monkeypatch.setattr(sglang_guard, "pending_record", lambda module, params, now, earlier: dict(PARAMS, armed_at=now))
    sglang_guard.arm(MagicMock(check_mode=False), dict(PARAMS, state_dir=str(tmp_path), variant="dflash",
                                                       config_id="d00d"))
    ended = guard.read_watch(str(tmp_path))
    assert ended["outcome"] == "superseded" and ended["ended_why"].startswith("a switch to DFLASH began at "), ended


def test_unknown_watch_limits_are_refused_before_anything_is_changed():
    assert sglang_guard.watch_problem(dict(WATCH, limits={"generation_failure": 2})).startswith(
        "unknown watch thresholds: generation_failure (known: ")
    assert sglang_guard.watch_problem(WATCH) is None and sglang_guard.watch_problem(None) is None


def watched(tmp_path, wait=0.0, config_id="c0ffee"):
    return sglang_guard.watched(MagicMock(check_mode=False), dict(PARAMS, state_dir=str(tmp_path), wait=wait,
                                                                  config_id=config_id))


def test_watched_waits_for_the_watch_to_end_and_says_how(tmp_path):
    """The play that waits for the watch (sglang_watch_wait): it reads the record until the
    follower ends it; here its time runs out clean."""
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, time.time())
    running = watched(tmp_path)
    assert running["watch"]["outcome"] is None and running["said"].startswith("watching DDTREE until "), running
    timer = threading.Timer(0.3, lambda: guard.end_watch(str(tmp_path), guard.CLEAN, "its time ran out"))
    timer.start()
    got = watched(tmp_path, wait=30.0)
    timer.join()
    assert got["changed"] is False and got["watch"]["outcome"] == "clean", got
    assert got["said"].startswith("the watch of DDTREE ended clean at "), got


def test_a_watch_whose_follower_stopped_before_its_end_says_so(tmp_path):
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, T0)   # (T0 is long past: its end too)
    stale = watched(tmp_path)
    assert stale["watch"]["outcome"] is None and stale["said"].startswith("the watch of DDTREE did not end by "), stale
    assert stale["said"].endswith(": its follower stopped (a reboot?)")


def test_watched_says_a_restore_as_the_guards_result_with_the_known_good(tmp_path):
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, T0)
    breach = {"cause": "cuda_error", "rank": "TP0", "evidence": "CUDA error", "time": T0 + 60, "why": "cuda_error on TP0"}
    guard.end_watch(str(tmp_path), guard.RESTORED, "cuda_error on TP0", breach)
    (tmp_path / guard.RESULT).write_text(json.dumps(dict(ACTED, reason=guard.WATCHED, why="cuda_error on TP0",
                                                         pending=SWITCH, restored="nextn", seconds=7.5)))
    got = watched(tmp_path)
    assert (got["watch"]["outcome"], got["watch"]["restored"], got["watch"]["breach"]["cause"]) == \
        ("restored", "nextn", "cuda_error"), got
    assert got["said"] == guard.said(json.loads((tmp_path / guard.RESULT).read_text())), got


def test_watched_finds_nothing_of_another_switch_or_none(tmp_path):
    assert watched(tmp_path)["watch"] is None
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, T0)
    assert watched(tmp_path, config_id="d00d") == dict(changed=False, pending=None, fired=None, watch=None, said=None)


def unwatch(tmp_path, check=False, config_id=None):
    return sglang_guard.unwatch(MagicMock(check_mode=check), dict(PARAMS, state_dir=str(tmp_path), config_id=config_id,
                                                                  cause="a rollback of the server group began"))


@pytest.mark.parametrize("running, check, config_id, ends", [
    (True, False, None, True),
    (True, False, "c0ffee", True),
    (True, False, "d00d", False),   # (another switch's watch runs: not this one's to end)
    (True, True, None, False),      # (check mode: says it would, changes nothing)
    (False, False, None, False),
])
def test_unwatched_ends_a_running_watch_with_nothing_restored(tmp_path, running, check, config_id, ends):
    """A server group's rollback ends every node's watch before any node stops: a stop on purpose
    is not the variant's failure."""
    guard.begin_watch(str(tmp_path), SWITCH, WATCH, time.time())
    if not running:
        guard.end_watch(str(tmp_path), guard.CLEAN, "its time ran out")
    got = unwatch(tmp_path, check, config_id)
    record = guard.read_watch(str(tmp_path))
    assert got["changed"] == (ends or (check and running)) and guard.watching_now(record) == (running and not ends)
    if ends:
        assert record["outcome"] == guard.SUPERSEDED and record["breach"] is None, record
        assert got["said"].startswith("the watch of DDTREE ended at ") and \
            ": a rollback of the server group began at " in got["said"], got
    assert not (tmp_path / guard.RESULT).exists()
