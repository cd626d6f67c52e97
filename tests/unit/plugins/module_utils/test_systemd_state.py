"""Judging one invocation of a unit from `systemctl show`, as a data table."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import (
    FAILED, RUNNING, STARTING, exec_start_argv, judge, parse_show, unit_status,
)

INV = "0d9a06bb2d5c4f468ad0238c790c858f"
OTHER = "43f22f274eef48ffa3a12df1df6b24bf"


def show(**over):
    props = {"LoadState": "loaded", "ActiveState": "active", "SubState": "running", "Result": "success",
             "ExecMainCode": "0", "ExecMainStatus": "0", "InvocationID": INV, "NRestarts": "0",
             "MainPID": "123"}
    props.update(over)
    return "\n".join("%s=%s" % kv for kv in props.items())


CASES = [
    ("running", {}, 0, RUNNING, "active/running"),
    ("activating", {"ActiveState": "activating", "SubState": "start"}, 0, STARTING, "activating"),
    ("failed-exit-code", {"ActiveState": "failed", "SubState": "failed", "Result": "exit-code",
                          "ExecMainCode": "1", "ExecMainStatus": "1"}, 0, FAILED, "exit-code"),
    ("inactive-dead", {"ActiveState": "inactive", "SubState": "dead"}, 0, FAILED, "inactive/dead"),
    ("auto-restart", {"ActiveState": "activating", "SubState": "auto-restart"}, 0, FAILED, "auto-restart"),
    ("new-invocation", {"InvocationID": OTHER}, 0, FAILED, "restarted"),
    ("more-restarts", {"NRestarts": "2"}, 1, FAILED, "NRestarts 2, was 1"),
    ("same-restarts", {"NRestarts": "1"}, 1, RUNNING, "active"),
    ("not-found", {"LoadState": "not-found", "ActiveState": "inactive"}, 0, FAILED, "not-found"),
]


@pytest.mark.parametrize("over, baseline, verdict, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_judge(over, baseline, verdict, words):
    got, reason = judge(unit_status(parse_show(show(**over))), INV, baseline)
    assert got == verdict
    assert words in reason


def test_signal_is_reported_for_killed_processes():
    status = unit_status(parse_show(show(ActiveState="failed", Result="signal", ExecMainCode="2",
                                         ExecMainStatus="9")))
    assert status["signal"] == 9 and status["exit_code"] == "killed"
    assert unit_status(parse_show(show(ExecMainCode="1", ExecMainStatus="1")))["signal"] is None


def test_values_may_contain_equals():
    props = parse_show("ExecStart={ path=/x ; argv[]=/x --a=1 --b 2 ; ignore_errors=no }\nId=a.service")
    assert exec_start_argv(props["ExecStart"]) == ["/x", "--a=1", "--b", "2"]
    assert exec_start_argv("") == []
