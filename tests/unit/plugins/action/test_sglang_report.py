"""sglang_report's action plugin on the controller: the four files, the diagnosis as the
task's message, and `fail` failing the task only once the report is written."""
from __future__ import annotations

import json
from unittest.mock import MagicMock

import pytest

from ansible_collections.inferops.sglang.plugins.action.sglang_report import ActionModule


def run(args, host="ct200"):
    task = MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    action = ActionModule(task, MagicMock(), MagicMock(check_mode=False), loader=None, templar=None,
                          shared_loader_obj=None)
    return action.run(task_vars={"inventory_hostname": host})


@pytest.mark.parametrize("fail, failed", [(False, False), (True, True), ("false", False), ("true", True)],
                         ids=["ok", "fail", "ok as text", "fail as text"])
def test_the_report_is_written_and_fail_fails_after_it(tmp_path, fail, failed):
    got = run({"dir": str(tmp_path), "name": "ddtree", "report": {"outcome": "x"}, "text": "ct200: DDTREE x\n",
               "fail": fail})
    assert bool(got.get("failed")) is failed and got["msg"] == "ct200: DDTREE x\n" and not got["changed"]
    assert json.loads((tmp_path / "ct200" / "latest.json").read_text()) == {"outcome": "x"}
    assert (tmp_path / "ct200" / "latest.txt").read_text() == "ct200: DDTREE x\n"
    assert len(got["paths"]) == 4


def test_reading_returns_the_last_report(tmp_path):
    run({"dir": str(tmp_path), "name": "nextn", "report": {"outcome": "deployed"}, "text": "t"})
    assert run({"dir": str(tmp_path), "read": True})["report"] == {"outcome": "deployed"}


def test_a_written_report_returns_the_fleet_row_as_result_and_fact(tmp_path):
    got = run({"dir": str(tmp_path), "name": "ddtree", "text": "t", "started": 0, "deploy": "deploy-1",
               "report": {"host": "ct200", "class": "blackwell", "before": "nextn", "variant": "ddtree",
                          "outcome": "deployed", "cause": None, "perf": {"ratio": 1.2}}})
    written = json.loads((tmp_path / "ct200" / "latest.json").read_text())
    assert written["seconds"] > 1e9, "seconds since the start (0 is the epoch)"
    assert got["summary"]["after"] == "ddtree" and got["summary"]["ratio"] == 1.2
    # The fact also says which deploy wrote it and whether it ended well (a class's rest reads its canary's).
    assert got["ansible_facts"] == {"sglang_deploy": dict(got["summary"], deploy="deploy-1", ok=True, msg="t")}
    assert got["dir"] == str(tmp_path)
    # The job's artifacts (set_stats data): the host's row, merged over the run's hosts.
    assert got["ansible_stats"] == {"data": {"sglang_outcomes": {"ct200": got["summary"]}}, "per_host": False,
                                    "aggregate": True}


def test_a_report_without_its_host_is_the_inventory_hosts(tmp_path):
    got = run({"dir": str(tmp_path), "name": "ddtree", "report": {"outcome": "deployed"}, "text": "t"}, host="ct129")
    assert got["summary"]["host"] == "ct129" and list(got["ansible_stats"]["data"]["sglang_outcomes"]) == ["ct129"]


def test_a_deploy_under_way_is_the_latest_report_but_not_history_and_its_own_report_replaces_it(tmp_path):
    run({"dir": str(tmp_path), "name": "ddtree", "report": {"outcome": "pending"}, "text": "under way",
         "in_progress": True})
    assert sorted(p.name for p in (tmp_path / "ct200").iterdir()) == ["latest.json", "latest.txt"]
    run({"dir": str(tmp_path), "name": "ddtree", "report": {"outcome": "deployed"}, "text": "done"})
    assert json.loads((tmp_path / "ct200" / "latest.json").read_text()) == {"outcome": "deployed"}
    history = sorted(p.name for p in (tmp_path / "ct200").iterdir() if not p.name.startswith("latest"))
    assert len(history) == 2 and all("-ddtree." in name for name in history), history


WATCHED = {"config_id": "c2", "outcome": "restored", "restored": "nextn", "breach": {"cause": "cuda_error"},
           "said": "the watch restored NEXTN at 14:11:02: cuda_error on TP0 (...)"}


@pytest.mark.parametrize("extra, ok, line, kept", [
    ({"watch": WATCHED, "config_id": "c2"}, False, WATCHED["said"], True),
    ({"watch": WATCHED, "config_id": "c2", "fail_on_rollback": False}, True, WATCHED["said"], True),
    ({"watch": WATCHED, "config_id": "c1"}, True, "the host watches it until 14:32 UTC", False),
    ({"watch": None, "config_id": "c2"}, True, "the host watches it until 14:32 UTC", False),
], ids=["restored: the host fails", "restored, rollbacks do not fail the host", "an earlier deploy's watch",
        "not waited for: still watching"])
def test_the_watch_the_play_waited_for_goes_into_the_report_and_its_outcome(tmp_path, extra, ok, line, kept):
    got = run(dict({"dir": str(tmp_path), "name": "ddtree", "text": "ct200: DDTREE deployed\n", "ok": True,
                    "report": {"host": "ct200", "outcome": "deployed", "variant": "ddtree",
                               "watching_until": "14:32 UTC"}}, **extra))
    fact = got["ansible_facts"]["sglang_deploy"]
    assert fact["ok"] is ok and got["msg"] == "ct200: DDTREE deployed\n" + line == fact["msg"]
    written = json.loads((tmp_path / "ct200" / "latest.json").read_text())
    assert written["watch"] == (WATCHED if kept else None)
    assert (tmp_path / "ct200" / "latest.txt").read_text() == got["msg"] + "\n"
    assert (got["summary"]["after"], "watch" in got["summary"]) == (("nextn", True) if kept else ("ddtree", False))
