"""sglang_bench's action plugin reads a workload_file on the controller: its requests go to the
module, and a file that does not parse fails the task before the module runs, naming the line and
field and never a line of the user's traffic."""
from __future__ import annotations

import json
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.inferops.sglang.plugins.action import sglang_bench
from ansible_collections.inferops.sglang.plugins.action.sglang_bench import ActionModule

SECRET = "the user's private prompt"


def action(args):
    task = MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    module = ActionModule(task, MagicMock(has_native_async=False), MagicMock(check_mode=False), loader=None,
                          templar=None, shared_loader_obj=None)
    module._find_needle = lambda folder, name: name
    module._execute_module = MagicMock(return_value={"completed": 2})
    module._remove_tmp_path = MagicMock()
    return module


def test_the_files_requests_go_to_the_module(tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("\n".join(json.dumps(line) for line in (
        {"prompt": SECRET, "max_new_tokens": 8, "kind": "code"}, {"input_len": 300, "output_len": 32})))
    plugin = action({"workload_file": str(traffic), "rate": 2.0})
    assert plugin.run(task_vars={})["completed"] == 2
    sent = plugin._execute_module.call_args.kwargs["module_args"]
    assert sent == {"rate": 2.0, "workload": [{"prompt": SECRET, "max_new_tokens": 8, "kind": "code"},
                                              {"input_len": 300, "max_new_tokens": 32}]}


@pytest.mark.parametrize("text, said", [
    (SECRET, "workload_file {path} cannot be read: line 1: not JSON (Expecting value at column 1)"),
    ("", "workload_file {path} holds no request"),
])
def test_a_file_that_does_not_parse_fails_before_the_module_runs(tmp_path, text, said):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text(text)
    plugin = action({"workload_file": str(traffic)})
    with pytest.raises(AnsibleActionFail) as caught:
        plugin.run(task_vars={})
    assert said.format(path=traffic) in str(caught.value) and SECRET not in str(caught.value)
    plugin._execute_module.assert_not_called()


def test_a_file_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(sglang_bench.workload, "LIMIT_BYTES", 10)
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text(json.dumps({"prompt": SECRET, "max_new_tokens": 8}))
    with pytest.raises(AnsibleActionFail, match="is 60 bytes, above the limit of 10: sample it"):
        action({"workload_file": str(traffic)}).run(task_vars={})


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(AnsibleActionFail, match="workload_file .*gone.jsonl cannot be read: No such file"):
        action({"workload_file": str(tmp_path / "gone.jsonl")}).run(task_vars={})
