"""The fleet_summary callback: rows from the reports' results, a failed row for a host that
wrote none, the table at the end of the playbook and its JSON copy beside the reports."""
from __future__ import annotations

import json
from unittest.mock import MagicMock

from ansible_collections.inferops.sglang.plugins.callback.fleet_summary import CallbackModule


def result(host, action, data, ignore_errors=False):
    got = MagicMock(_result=data)
    got._host.get_name.return_value = host
    got._task.action, got._task.ignore_errors = action, ignore_errors
    return got


def row(host, outcome, **more):
    return dict({"host": host, "class": "a6000", "before": "nextn", "after": "nextn", "variant": "ddtree",
                 "outcome": outcome, "cause": None, "ratio": None, "seconds": 3.0}, **more)


def callback():
    plugin = CallbackModule()
    plugin._display = MagicMock()
    return plugin


def test_rows_come_from_reports_and_a_host_without_one_shows_its_failure(tmp_path):
    plugin = callback()
    plugin.v2_runner_on_ok(result("ct200", "inferops.sglang.sglang_report",
                                  {"summary": row("ct200", "deployed"), "dir": str(tmp_path)}))
    # A rolled-back deploy's report fails its task: its row still counts, not the failure.
    plugin.v2_runner_on_failed(result("ct129", "inferops.sglang.sglang_report",
                                      {"summary": row("ct129", "rolled_back", cause="kv_pool_oom"), "msg": "x"}))
    plugin.v2_runner_on_failed(result("ct131", "inferops.sglang.gpu_facts", {"msg": "GPU 0 is held\nby 4242"}))
    plugin.v2_runner_on_failed(result("ct132", "ansible.builtin.command", {"msg": "ignored"}, ignore_errors=True),
                               ignore_errors=True)
    plugin.v2_runner_on_ok(result("ct133", "ansible.builtin.ping", {"ping": "pong"}))
    plugin.v2_playbook_on_stats(MagicMock())

    written = json.loads((tmp_path / "fleet-summary.json").read_text())
    assert [(h["host"], h["outcome"], h["cause"]) for h in written["hosts"]] == [
        ("ct129", "rolled_back", "kv_pool_oom"), ("ct131", "failed", "GPU 0 is held"), ("ct200", "deployed", None)]
    assert len(list(tmp_path.glob("fleet-2*.json"))) == 1, "a stamped copy beside it"
    printed = [call.args[0] for call in plugin._display.display.call_args_list]
    assert printed[0].split() == ["host", "class", "variant", "outcome", "cause", "speed", "time"]
    assert [line.split()[0] for line in printed[1:]] == ["ct129", "ct131", "ct200"]
    assert "3 hosts; %s" % (tmp_path / "fleet-summary.json") in plugin._display.banner.call_args.args[0]


def test_a_playbook_without_a_deploy_report_prints_and_writes_nothing(tmp_path):
    plugin = callback()
    plugin.v2_runner_on_ok(result("ct200", "inferops.sglang.sglang_report", {"report": {"outcome": "deployed"}}))
    plugin.v2_runner_on_failed(result("ct129", "ansible.builtin.fail", {"msg": "boom"}))
    plugin.v2_playbook_on_stats(MagicMock())
    assert not plugin._display.display.called and not list(tmp_path.iterdir())


def test_a_host_lost_while_its_switch_was_under_way_says_its_state_is_unknown(tmp_path):
    plugin = callback()
    pending = row("ct200", "pending", cause="state unknown; the host's guard restores the known-good at "
                                            "2026-12-03 12:18:50 UTC unless confirmed")
    plugin.v2_runner_on_ok(result("ct200", "inferops.sglang.sglang_report", {"summary": pending, "dir": str(tmp_path)}))
    plugin.v2_runner_on_unreachable(result("ct200", "inferops.sglang.sglang_health",
                                           {"msg": "lab host ct200 is down (container inferops-ct200 does not run)"}))
    plugin.v2_runner_on_ok(result("ct129", "inferops.sglang.sglang_report",
                                  {"summary": row("ct129", "pending", cause="state unknown"), "dir": str(tmp_path)}))
    plugin.v2_runner_on_failed(result("ct129", "inferops.sglang.sglang_health", {"msg": "boom"}))
    plugin.v2_playbook_on_stats(MagicMock())
    written = json.loads((tmp_path / "fleet-summary.json").read_text())
    assert [(h["host"], h["outcome"], h["cause"]) for h in written["hosts"]] == [
        ("ct129", "failed", "boom; state unknown"),
        ("ct200", "unreachable", "lab host ct200 is down (container inferops-ct200 does not run); state unknown; the "
                                 "host's guard restores the known-good at 2026-12-03 12:18:50 UTC unless confirmed")]
