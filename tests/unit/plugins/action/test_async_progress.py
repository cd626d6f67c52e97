"""async_progress's action plugin: a job that did not run async is its own answer; a running
one is waited for on the host (async_wait), an `interval` a run at most, with a status line
each `interval`, and its result (failed included) is the task's, read when it ends; past
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


class Clock:
    """time.monotonic of a clock that moves only while the host waits (a module run)."""

    def __init__(self):
        self.now = 100.0

    def monotonic(self):
        return self.now


def host(clock, answers):
    """async_wait on the host: each run waits its `wait` (the clock moves), unless the answer
    says when the job ended (`ends_after`: the run returns then)."""
    answers = list(answers)

    def run(module_name, module_args, task_vars):
        answer = dict(answers.pop(0))
        clock.now += answer.pop("ends_after", module_args.get("wait", 0))
        return answer
    return run


RUNNING = {"started": 1, "finished": 0, "ansible_job_id": "42.1"}


@pytest.mark.parametrize("final, failed", [
    ({"finished": 1, "rc": 0, "stdout": "Successfully installed sglang", "changed": True}, False),
    ({"finished": 1, "rc": 1, "failed": True, "msg": "non-zero return code", "stderr": "No matching distribution"}, True),
], ids=["succeeds", "fails with the job's own result"])
def test_the_host_waits_an_interval_a_run_with_a_line_each_until_the_job_ends(final, failed):
    plugin = action({"job": dict(RUNNING), "what": "installing sglang==0.5.23", "interval": 4}, [])
    clock = Clock()
    plugin._execute_module = MagicMock(side_effect=host(clock, [RUNNING, RUNNING, RUNNING, dict(final, ends_after=1.5)]))
    with patch.object(async_progress, "time", clock), patch.object(async_progress, "display") as shown:
        got = plugin.run(task_vars={"inventory_hostname": "ct200"})
    assert bool(got.get("failed")) is failed and got.get("rc") == final["rc"]
    assert "ansible_job_id" not in got and "finished" not in got and got["elapsed"] == 13.5
    calls = plugin._execute_module.call_args_list
    assert [c.kwargs["module_name"] for c in calls] == ["inferops.sglang.async_wait"] * 4
    assert [c.kwargs["module_args"] for c in calls][0] == {"jid": "42.1", "async_dir": "~/.ansible_async", "wait": 4}
    lines = [line.args[0] for line in shown.display.call_args_list]
    assert lines == ["  ct200: installing sglang==0.5.23, %d s so far" % s for s in (4, 8, 12)] + [
        "  ct200: installing sglang==0.5.23 %s after 13 s" % ("failed" if failed else "done")]


def test_a_job_that_ends_within_the_interval_is_read_in_one_run_when_it_ends():
    plugin = action({"job": dict(RUNNING), "what": "measuring", "interval": 10}, [])
    clock = Clock()
    plugin._execute_module = MagicMock(side_effect=host(clock, [{"finished": 1, "rc": 0, "ends_after": 1.3}]))
    with patch.object(async_progress, "time", clock), patch.object(async_progress, "display") as shown:
        got = plugin.run(task_vars={"inventory_hostname": "ct129"})
    assert plugin._execute_module.call_count == 1 and got["elapsed"] == 1.3 and not shown.display.called


def test_the_host_waits_no_longer_than_the_timeout_left():
    plugin = action({"job": dict(RUNNING), "what": "draining the worker", "interval": 10, "timeout": 25}, [])
    clock = Clock()
    plugin._execute_module = MagicMock(side_effect=host(clock, [RUNNING, RUNNING, RUNNING, {"erased": "x"}]))
    with patch.object(async_progress, "time", clock), patch.object(async_progress, "display"):
        got = plugin.run(task_vars={"inventory_hostname": "ct129"})
    waits = [c.kwargs["module_args"].get("wait") for c in plugin._execute_module.call_args_list]
    assert waits == [10, 10, 5, None]
    assert got["failed"] and got["msg"].startswith("ct129: draining the worker did not finish within 25 s (job 42.1")
    assert plugin._execute_module.call_args_list[-1].kwargs["module_args"] == {
        "jid": "42.1", "mode": "cleanup", "_async_dir": "~/.ansible_async"}


def test_a_task_without_a_job_is_refused():
    with pytest.raises(Exception, match="needs job"):
        action({"job": "x"}, []).run(task_vars={})


@pytest.mark.parametrize("seconds, said", [(5, "5 s"), (59.9, "59 s"), (60, "1 min 00 s"), (131, "2 min 11 s")])
def test_minutes(seconds, said):
    assert minutes(seconds) == said
