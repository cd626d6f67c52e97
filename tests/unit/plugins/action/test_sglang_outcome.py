"""sglang_outcome's action plugin before a rollback of a guarded switch (a task failed past the
restart, a gate failed, the variant was slow): it reads what the host's guard did
(sglang_guard state=read, which never disarms it: the rollback still needs it) and says
guard_acted_first when the guard already restored the known-good, else the gate's cause or
task_failed. A rollback is the task's change: it records the configuration's failure on the host
(sglang_state) itself, and its notify runs the rollback handler."""
from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.action.sglang_outcome import GUARD_MODULE, STATE_MODULE, ActionModule

PLAN = {"converged": False, "stop": None, "config_id": "c0ffee", "perf_gate": {}}
ARGS = {"plan": PLAN, "variant": "ddtree", "version": "0.5.23", "release": "/opt/sglang/releases/r",
        "unit": "sglang.service", "state_dir": "/etc/sglang/", "validation": {"rc": 0}, "restart": {"changed": True},
        "gate": None, "perf": None, "baseline": None, "failure": "Failed to exec: container state improper",
        "guard": {"changed": True, "deadline_at": "2026-12-04 12:00:00 UTC"}, "fail_on_rollback": True}
ACTED = {"pending": {"config_id": "c0ffee", "variant": "ddtree"}, "why": "the controller did not confirm DDTREE's gate",
         "time": 1796300040.0, "restored": "nextn", "healthy": True, "seconds": 4.2}


def plugin(answer):
    """The action plugin, its module calls answered by `answer(module, module_args, task_vars)`."""
    task = MagicMock(args={}, async_val=0, check_mode=False, diff=False)
    action = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    action.call = MagicMock(side_effect=answer)
    return action


def guard_read(fired, recorded=None):
    """sglang_guard's answer to state=read: what the guard did on this switch (`fired`), or None;
    sglang_state's to the rollback's record (`recorded`, default: written)."""
    def answer(module, module_args, task_vars):
        if module == STATE_MODULE:
            assert (module_args["config_id"], module_args["state_dir"]) == ("c0ffee", "/etc/sglang/")
            return recorded or {"changed": True, "record": module_args["rolled_back"]}
        assert (module, module_args["state"], module_args["config_id"]) == (GUARD_MODULE, "read", "c0ffee"), \
            "only reads: %s %s" % (module, module_args)
        return {"changed": False, "fired": fired, "pending": None}
    return answer


def decide(fired, recorded=None, **over):
    action = plugin(guard_read(fired, recorded))
    return action.decide(dict(ARGS, **over), {}), action.call


def modules(call):
    return [c.args[0] for c in call.call_args_list]


@pytest.mark.parametrize("fired, cause, rollback", [
    (None, "task_failed", True),
    (ACTED, "guard_acted_first", False),
], ids=["the guard did not act on this switch: rolled back", "the guard acted on this switch: undone, no rollback"])
def test_a_task_failed_after_the_restart(fired, cause, rollback):
    got, call = decide(fired)
    assert (got["outcome"], got["cause"], got["rollback"], got["remember"]) == ("rolled_back", cause, rollback, False)
    # A rollback is the task's change (its notify restores); an undone switch has none to make.
    assert got["confirmed"] is None and got["changed"] is rollback and got["guard_restored"] is (fired is not None)
    assert modules(call) == [GUARD_MODULE] + ([STATE_MODULE] if rollback else [])


GATES = {
    "health gate failed": dict(failure="", gate={"state": "failed", "cause": "kv_pool_oom", "elapsed": 2.0}),
    "slower than the known-good": dict(
        failure="", gate={"state": "healthy", "elapsed": 6.8},
        plan=dict(PLAN, perf_gate={"enabled": True, "min_ratio": 0.95, "workload": {"requests": 8}}),
        perf={"changed": False, "summary": {"output_tok_s": 100.0}, "ratio": 0.5},
        baseline={"baseline": {"output_tok_s": 200.0, "source": "measured"}, "error": ""}),
}


@pytest.mark.parametrize("gate", sorted(GATES))
@pytest.mark.parametrize("fired", [None, ACTED],
                         ids=["the guard did not act", "the guard acted on this switch (frozen past its deadline)"])
def test_a_failed_gate_of_a_guarded_switch(gate, fired):
    """What the gates saw after the guard restored the known-good was that restore: the
    switch ended by the guard, not by the gate (the lab's paused host showed it)."""
    got, call = decide(fired, **GATES[gate])
    acted = fired is not None
    if acted:
        assert (got["cause"], got["rollback"], got["remember"]) == ("guard_acted_first", False, False)
    else:
        assert got["cause"] != "guard_acted_first" and got["rollback"] and got["remember"], got
    assert got["outcome"] == "rolled_back" and modules(call) == [GUARD_MODULE] + ([] if acted else [STATE_MODULE])


def test_an_unguarded_failed_gate_reads_nothing_of_the_guard():
    got, call = decide(None, guard=None, **GATES["health gate failed"])
    assert (got["outcome"], got["cause"], got["remember"]) == ("rolled_back", "kv_pool_oom", True)
    assert modules(call) == [STATE_MODULE]


@pytest.mark.parametrize("over, retry", [
    (GATES["health gate failed"], None),
    ({}, True),
], ids=["a failed gate: remembered, not retried", "a task failed: on the record, retried"])
def test_a_rollback_records_the_configuration_before_its_handler_restores(over, retry):
    got, call = decide(None, guard=None, **over)
    record = call.call_args_list[-1].args[1]
    assert (got["changed"], got["rollback"]) == (True, True)
    assert record["rolled_back"] == got["record"]["rolled_back"] and record["rolled_back"].get("retry") is retry


def test_a_record_that_cannot_be_written_fails_the_decision_before_any_rollback():
    failed = {"failed": True, "msg": "/etc/sglang/ does not exist: the deploy creates the state folders first"}
    got, _call = decide(None, recorded=failed, guard=None, **GATES["health gate failed"])
    assert got == failed


def test_the_host_that_restored_a_failed_new_server_leaves_the_rollback_to_the_handler_which_finds_it_done():
    """The host's follower restored a new server that failed (its grace ran out before this run
    took it over): the gate's cause, remembered, and a rollback whose arm says the host did it."""
    by_host = dict(ACTED, reason="follow", why="DDTREE failed (...), and no controller took it over within 15 s")
    got, _call = decide(by_host, **GATES["health gate failed"])
    assert (got["outcome"], got["cause"], got["rollback"], got["remember"]) == (
        "rolled_back", "kv_pool_oom", True, True)
    # (So restore.yml does not stop a server group's node the guard brought back: it would stay down.)
    assert got["guard_restored"] is True


@pytest.mark.parametrize("trial, confirmed, recorded", [(False, True, True), (True, False, False)],
                         ids=["a deploy: confirmed and recorded", "a try: neither (the known-good comes back after it)"])
def test_a_passing_try_is_neither_confirmed_nor_recorded(trial, confirmed, recorded):
    action = plugin(lambda *_args: {"changed": True, "fired": None})
    got = action.decide(dict(ARGS, failure="", gate={"state": "healthy", "elapsed": 3.0}, trial=trial), {})
    assert got["outcome"] == "deployed"
    assert action.call.called is confirmed and got["record_deployed"] is recorded
    # (No rollback, no change: the confirmation is said in `confirmed`, the notify stays quiet.)
    assert not got["changed"] and (got["confirmed"] is not None) is confirmed


WATCH = {"duration": 1800.0, "interval": 10.0, "url": "http://127.0.0.1:30000", "limits": {}, "gateway": None}
PERF = {"new": {"output_tokens_per_s": 140.0, "accept_length": 3.5}, "baseline": {"output_tokens_per_s": 100.0}}


@pytest.mark.parametrize("watch, argv, perf, sent", [
    (None, [], None, {}),
    (dict(WATCH, duration=0), [], PERF, {}),
    (WATCH, ["--enable-metrics"], PERF, {"watch": dict(WATCH, metrics=True, baseline={
        "known_good_speed": 100.0, "gate_speed": 140.0, "gate_accept_length": 3.5})}),
    (WATCH, [], None, {"watch": dict(WATCH, metrics=False, baseline={})}),
], ids=["no watch asked", "duration 0", "a watch with the gate's figures and the server's metrics",
        "a watch without a performance gate"])
def test_the_confirmation_starts_the_watch_with_this_deploys_figures(watch, argv, perf, sent):
    args = dict(ARGS, plan=dict(PLAN, argv=argv), watch=watch)
    assert ActionModule.watched(args, {"perf": perf}) == sent
