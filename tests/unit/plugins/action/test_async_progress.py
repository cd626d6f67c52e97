"""async_progress's action plugin: a job that did not run async is its own answer; a running
one is polled with async_status until it ends, backing off from half a second to `interval`,
with a status line each `interval`, and its result (failed included) is the task's; past
`timeout` it fails naming what it waited for."""
from __future__ import annotations

from unittest.mock import MagicMock, patch

import pytest

from ansible_collections.inferops.sglang.plugins.action import async_progress
from ansible_collections.inferops.sglang.plugins.action.async_progress import ActionModule, minutes


def action(args, answers):
    task = MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    plugin._execute_module = MagicMock(side_effect=list(answers))
    plugin._remote_expand_user = MagicMock(side_effect=lambda path: path)
    plugin.get_shell_option = MagicMock(return_value="~/.ansible_async")
    return plugin


@pytest.mark.parametrize("job", [
    {"changed": True, "rc": 0, "stdout": "done"},
    {"skipped": True, "ansible_job_id": "1", "changed": False},
    {"ansible_job_id": "1", "finished": 1, "rc": 0},
], ids=["ran without async", "skipped", "already finished"])
def test_a_job_that_is_not_running_is_its_own_answer(job):
    plugin = action({"job": job}, [])
    got = plugin.run(task_vars={"inventory_hostname": "ct200"})
    assert not plugin._execute_module.called
    assert dict((k, v) for k, v in got.items() if k in job) == job


@pytest.mark.parametrize("final, failed", [
    ({"finished": 1, "rc": 0, "stdout": "Successfully installed sglang", "changed": True}, False),
    ({"finished": 1, "rc": 1, "failed": True, "msg": "non-zero return code", "stderr": "No matching distribution"}, True),
], ids=["succeeds", "fails with the job's own result"])
def test_a_running_job_is_polled_until_it_ends_with_a_line_per_poll(final, failed):
    running = {"started": 1, "finished": 0, "ansible_job_id": "42.1"}
    plugin = action({"job": running, "what": "installing sglang==0.5.23", "interval": 0.5},
                    [dict(running), dict(running), dict(final, ansible_job_id="42.1", started=1)])
    with patch.object(async_progress.time, "sleep"), patch.object(async_progress, "display") as shown:
        got = plugin.run(task_vars={"inventory_hostname": "ct200"})
    assert bool(got.get("failed")) is failed and got.get("rc") == final["rc"]
    assert "ansible_job_id" not in got and "finished" not in got and "elapsed" in got
    calls = plugin._execute_module.call_args_list
    assert [c.kwargs["module_name"] for c in calls] == ["ansible.legacy.async_status"] * 3
    assert calls[0].kwargs["module_args"] == {"jid": "42.1", "mode": "status", "_async_dir": "~/.ansible_async"}
    assert all(line.args[0].startswith("  ct200: installing sglang==0.5.23") for line in shown.display.call_args_list)


class Clock:
    """time.monotonic and time.sleep of a clock that moves only when slept on."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_polls_back_off_from_half_a_second_to_the_interval_with_a_line_each_interval():
    running = {"started": 1, "finished": 0, "ansible_job_id": "9.1"}
    polls = 9
    plugin = action({"job": running, "what": "measuring the new DDTREE", "interval": 4},
                    [dict(running)] * (polls - 1) + [{"finished": 1, "rc": 0, "started": 1}])
    clock = Clock()
    with patch.object(async_progress, "time", clock), patch.object(async_progress, "display") as shown:
        got = plugin.run(task_vars={"inventory_hostname": "ct129"})
    assert clock.slept == [0.5, 1, 2, 4, 4, 4, 4, 4]
    assert got["elapsed"] == sum(clock.slept) == 23.5
    lines = [line.args[0] for line in shown.display.call_args_list]
    # One line each interval while it runs (at 7.5, 11.5, ... s), and one when it ends.
    assert lines == ["  ct129: measuring the new DDTREE, %d s so far" % s for s in (7, 11, 15, 19)] + [
        "  ct129: measuring the new DDTREE done after 23 s"]


def test_a_job_that_ends_within_a_second_is_seen_done_within_a_second():
    running = {"started": 1, "finished": 0, "ansible_job_id": "9.2"}
    plugin = action({"job": running, "what": "measuring", "interval": 10},
                    [dict(running), dict(running), {"finished": 1, "rc": 0, "started": 1}])
    clock = Clock()
    with patch.object(async_progress, "time", clock), patch.object(async_progress, "display") as shown:
        got = plugin.run(task_vars={"inventory_hostname": "ct129"})
    assert clock.slept == [0.5, 1] and got["elapsed"] == 1.5 and not shown.display.called


def test_past_its_timeout_it_fails_naming_what_it_waited_for_and_cleans_up():
    running = {"started": 1, "finished": 0, "ansible_job_id": "7.1"}
    plugin = action({"job": running, "what": "draining the worker", "interval": 0.5, "timeout": 0.01},
                    [dict(running), {"erased": "x"}])
    with patch.object(async_progress.time, "sleep"), patch.object(async_progress.time, "monotonic",
                                                                  side_effect=[0.0, 5.0, 5.0, 5.0]):
        got = plugin.run(task_vars={"inventory_hostname": "ct129"})
    assert got["failed"] and got["msg"].startswith("ct129: draining the worker did not finish within 0 s (job 7.1")
    assert plugin._execute_module.call_args_list[-1].kwargs["module_args"]["mode"] == "cleanup"


def test_a_task_without_a_job_is_refused():
    with pytest.raises(Exception, match="needs job"):
        action({"job": "x"}, []).run(task_vars={})


@pytest.mark.parametrize("seconds, said", [(5, "5 s"), (59.9, "59 s"), (60, "1 min 00 s"), (131, "2 min 11 s")])
def test_minutes(seconds, said):
    assert minutes(seconds) == said
