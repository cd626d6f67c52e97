"""async_progress's action plugin: a job that did not run async is its own answer; a running
one is polled with async_status until it ends, with a status line per poll, and its result
(failed included) is the task's; past `timeout` it fails naming what it waited for."""
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
