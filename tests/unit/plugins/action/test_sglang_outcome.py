"""sglang_outcome's action plugin before a rollback of a guarded switch (a task failed past the
restart, a gate failed, the variant was slow): it reads the host's guard files (never disarms
the guard: the rollback still needs it) and says guard_acted_first when the guard already
restored the known-good, else the gate's cause or task_failed."""
from __future__ import annotations

import base64
import json
from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.action.sglang_outcome import ActionModule

PLAN = {"converged": False, "stop": None, "config_id": "c0ffee", "perf_gate": {}}
ARGS = {"plan": PLAN, "variant": "ddtree", "version": "0.5.23", "release": "/opt/sglang/releases/r",
        "unit": "sglang.service", "state_dir": "/etc/sglang/", "validation": {"rc": 0}, "restart": {"changed": True},
        "gate": None, "perf": None, "baseline": None, "failure": "Failed to exec: container state improper",
        "guard": {"changed": True, "deadline_at": "2026-12-04 12:00:00 UTC"}, "fail_on_rollback": True}
ACTED = {"pending": {"config_id": "c0ffee", "variant": "ddtree"}, "why": "the controller did not confirm DDTREE's gate",
         "time": 1796300040.0, "restored": "nextn", "healthy": True, "seconds": 4.2}


def slurped(files):
    """ansible.builtin.slurp's answers for the host's files {path: data}; a missing one fails."""
    def answer(module, module_args, task_vars):
        assert module == "ansible.builtin.slurp", "only reads: %s %s" % (module, module_args)
        data = files.get(module_args["src"])
        if data is None:
            return {"failed": True, "msg": "file not found: %s" % module_args["src"]}
        return {"content": base64.b64encode(json.dumps(data).encode()).decode()}
    return answer


def decide(files, **over):
    task = MagicMock(args={}, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    plugin.call = MagicMock(side_effect=slurped(files))
    return plugin.decide(dict(ARGS, **over), {}), plugin.call


@pytest.mark.parametrize("files, cause, rollback", [
    ({"/etc/sglang/pending.json": {"config_id": "c0ffee"}}, "task_failed", True),
    ({}, "task_failed", True),
    ({"/etc/sglang/guard.json": dict(ACTED, pending={"config_id": "earlier"})}, "task_failed", True),
    ({"/etc/sglang/guard.json": ACTED}, "guard_acted_first", False),
], ids=["the guard still waits: rolled back", "no guard files: rolled back",
        "the guard acted on an earlier switch: rolled back", "the guard acted on this switch: undone, no rollback"])
def test_a_task_failed_after_the_restart(files, cause, rollback):
    got, call = decide(files)
    assert (got["outcome"], got["cause"], got["rollback"], got["remember"]) == ("rolled_back", cause, rollback, False)
    assert got["confirmed"] is None and not got["changed"]
    assert sorted(c.args[1]["src"] for c in call.call_args_list) == ["/etc/sglang/guard.json",
                                                                     "/etc/sglang/pending.json"]


GATES = {
    "health gate failed": dict(failure="", gate={"state": "failed", "cause": "kv_pool_oom", "elapsed": 2.0}),
    "slower than the known-good": dict(
        failure="", gate={"state": "healthy", "elapsed": 6.8},
        plan=dict(PLAN, perf_gate={"enabled": True, "min_ratio": 0.95, "workload": {"requests": 8}}),
        perf={"changed": False, "summary": {"output_tok_s": 100.0}, "ratio": 0.5},
        baseline={"baseline": {"output_tok_s": 200.0, "source": "measured"}, "error": ""}),
}


@pytest.mark.parametrize("gate", sorted(GATES))
@pytest.mark.parametrize("files, acted", [
    ({}, False),
    ({"/etc/sglang/guard.json": ACTED}, True),
], ids=["the guard did not act", "the guard acted on this switch (frozen past its deadline)"])
def test_a_failed_gate_of_a_guarded_switch(gate, files, acted):
    """What the gates saw after the guard restored the known-good was that restore: the
    switch ended by the guard, not by the gate (the lab's paused host showed it)."""
    got, call = decide(files, **GATES[gate])
    if acted:
        assert (got["cause"], got["rollback"], got["remember"]) == ("guard_acted_first", False, False)
    else:
        assert got["cause"] != "guard_acted_first" and got["rollback"] and got["remember"], got
    assert got["outcome"] == "rolled_back"
    assert sorted(c.args[1]["src"] for c in call.call_args_list) == ["/etc/sglang/guard.json",
                                                                     "/etc/sglang/pending.json"]


def test_an_unguarded_failed_gate_reads_nothing_of_the_guard():
    got, call = decide({}, guard=None, **GATES["health gate failed"])
    assert (got["outcome"], got["cause"], got["remember"]) == ("rolled_back", "kv_pool_oom", True)
    assert not call.called


def test_the_host_that_restored_a_failed_new_server_leaves_the_rollback_to_the_handler_which_finds_it_done():
    """The host's follower restored a new server that failed (its grace ran out before this run
    took it over): the gate's cause, remembered, and a rollback whose arm says the host did it."""
    by_host = dict(ACTED, reason="follow", why="DDTREE failed (...), and no controller took it over within 15 s")
    got, _call = decide({"/etc/sglang/guard.json": by_host}, **GATES["health gate failed"])
    assert (got["outcome"], got["cause"], got["rollback"], got["remember"]) == (
        "rolled_back", "kv_pool_oom", True, True)


@pytest.mark.parametrize("trial, confirmed, recorded", [(False, True, True), (True, False, False)],
                         ids=["a deploy: confirmed and recorded", "a try: neither (the known-good comes back after it)"])
def test_a_passing_try_is_neither_confirmed_nor_recorded(trial, confirmed, recorded):
    task = MagicMock(args={}, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    plugin.call = MagicMock(return_value={"changed": True, "fired": None})
    got = plugin.decide(dict(ARGS, failure="", gate={"state": "healthy", "elapsed": 3.0}, trial=trial), {})
    assert got["outcome"] == "deployed"
    assert plugin.call.called is confirmed and got["record_deployed"] is recorded


def test_a_task_failed_while_the_guard_restored_waits_for_the_guard_and_is_its_doing(monkeypatch):
    """The host frozen past the deadline, then thawed: its guard stops the new server to restore
    the known-good, which cancels the deploy's restart job (the task fails). The guard's result,
    written as it began, names this arm while the switch is still pending: the outcome waits for
    the guard to end, then says the guard acted first (not task_failed) and rolls nothing back."""
    arm = {"config_id": "c0ffee", "variant": "ddtree", "armed_at": 1796300000.0, "timeout": 20, "settle": 3}
    began = dict(ACTED, pending=arm, healthy=False, restored=None, error="the guard's run did not finish")
    reads = [{"/etc/sglang/pending.json": arm, "/etc/sglang/guard.json": began}] * 2 + \
        [{"/etc/sglang/guard.json": dict(ACTED, pending=arm)}]
    files = {}
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)

    def answer(module, module_args, task_vars):
        if module_args["src"].endswith("pending.json"):
            files.clear()
            files.update(reads.pop(0) if reads else {})
        return slurped(files)(module, module_args, task_vars)
    task = MagicMock(args={}, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    plugin.call = MagicMock(side_effect=answer)
    got = plugin.decide(dict(ARGS, failure="Unable to restart service sglang.service: Job for sglang.service canceled."),
                        {})
    assert (got["outcome"], got["cause"], got["rollback"], got["remember"]) == (
        "rolled_back", "guard_acted_first", False, False), got
    assert len(slept) == 2 and not reads, "read again each second until the guard's run ended"
