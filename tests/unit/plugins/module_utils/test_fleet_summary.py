"""The fleet summary's rows and lines (module_utils/fleet_summary.py) as data tables."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import diagnosis, fleet_summary
from ansible_collections.inferops.sglang.plugins.module_utils.fleet_summary import after, failed_row, lines, row

KEPT = {"host": "ct200", "class": "blackwell", "before": "nextn", "variant": "ddtree", "outcome": "deployed",
        "cause": None, "perf": {"ratio": 1.243, "verdict": "faster"}, "seconds": 41.26, "known_good": None}
BACK = dict(KEPT, host="ct129", **{"class": "a6000"}, outcome="rolled_back", cause="kv_pool_oom", perf=None,
            known_good="NEXTN", seconds=26.0)
SKIP = dict(BACK, host="ct130", outcome="skipped", cause="class canary rolled back (kv_pool_oom)",
            known_good="nextn", seconds=0.1)


@pytest.mark.parametrize("report, serves", [
    (KEPT, "ddtree"), (dict(KEPT, outcome="unchanged"), "ddtree"), (BACK, "nextn"), (SKIP, "nextn"),
    (dict(BACK, known_good=None), "nextn"), (dict(BACK, known_good=None, before=None), None),
    (dict(KEPT, outcome="check"), "nextn"),
], ids=["kept", "already ran it", "rolled back to the known-good", "skipped", "no known-good: what ran before",
        "nothing ran before", "check mode changes nothing"])
def test_after_is_what_the_host_serves_once_the_deploy_ended(report, serves):
    assert after(report) == serves


def test_a_row_holds_what_the_summary_prints():
    assert row(KEPT) == {"host": "ct200", "class": "blackwell", "before": "nextn", "after": "ddtree",
                         "variant": "ddtree", "outcome": "deployed", "cause": None, "ratio": 1.243, "seconds": 41.26}
    assert row({"host": "ct1", "class": ""})["class"] is None


@pytest.mark.parametrize("watch, after_, cause, end", [
    (None, "ddtree", None, None),
    ({"outcome": None, "until": 1.0}, "ddtree", None, None),
    ({"outcome": "clean"}, "ddtree", None, {"outcome": "clean", "cause": None, "restored": None}),
    ({"outcome": "restored", "restored": "nextn", "breach": {"cause": "cuda_error"}}, "nextn",
     "the watch restored nextn: cuda_error", {"outcome": "restored", "cause": "cuda_error", "restored": "nextn"}),
], ids=["not waited for", "still running", "ended clean", "restored the known-good"])
def test_a_row_says_how_the_watch_the_play_waited_for_ended(watch, after_, cause, end):
    got = row(dict(KEPT, watch=watch))
    assert (got["after"], got["cause"], got.get("watch")) == (after_, cause, end)


RESTORED = {"config_id": "c2", "outcome": "restored", "restored": "nextn", "breach": {"cause": "cuda_error"},
            "said": "the watch restored NEXTN at 14:11:02: cuda_error on TP0"}


@pytest.mark.parametrize("watched, config_id, taken", [
    (RESTORED, "c2", True), (RESTORED, "c1", False), (RESTORED, None, False), (None, "c2", False),
    ({}, "c2", False),
], ids=["this deploy's switch", "an earlier deploy's wait in the same run", "no switch (a plan that ended early)",
        "not waited for", "a skipped wait"])
def test_only_the_watch_of_this_deploys_switch_is_its_reports(watched, config_id, taken):
    assert fleet_summary.this_deploys_watch(watched, config_id) == (watched if taken else None)


@pytest.mark.parametrize("watched, until, line", [
    (RESTORED, "14:32 UTC", RESTORED["said"]),
    ({"outcome": "clean", "said": "watch ended clean at 14:32"}, None, "watch ended clean at 14:32"),
    (None, "14:32 UTC", "the host watches it until 14:32 UTC"),
    (None, None, None),
], ids=["restored: what the watch said", "ended clean", "still watching", "no watch"])
def test_the_reports_line_about_the_watch(watched, until, line):
    assert fleet_summary.watch_line(watched, until) == line


@pytest.mark.parametrize("watched, fail_on_rollback, fails", [
    (RESTORED, True, True), (RESTORED, False, False), ({"outcome": "clean"}, True, False),
    ({"outcome": "superseded"}, True, False), (None, True, False),
], ids=["restored", "restored, rollbacks do not fail", "clean", "superseded", "none"])
def test_a_watch_that_restored_the_known_good_fails_the_host_as_a_rollback_does(watched, fail_on_rollback, fails):
    assert fleet_summary.watch_fails_the_host(watched, fail_on_rollback) is fails


def test_a_host_without_a_report_shows_its_failure():
    got = failed_row("ct131", "GPU 0 is held by PID 4242\nsecond line")
    assert (got["outcome"], got["cause"], got["after"]) == ("failed", "GPU 0 is held by PID 4242", None)
    assert failed_row("ct131", "")["cause"] == "no message"


def test_lines_are_aligned_sorted_by_host_with_a_header():
    got = lines([row(KEPT), row(SKIP), row(BACK), failed_row("ct131", "unreachable")])
    assert got == [
        "host   class      variant          outcome      cause                                   speed  time",
        "ct129  a6000      nextn -> nextn   rolled_back  kv_pool_oom                             -      26 s",
        "ct130  a6000      nextn -> nextn   skipped      class canary rolled back (kv_pool_oom)  -      0 s",
        "ct131  -          - -> -           failed       unreachable                             -      -",
        "ct200  blackwell  nextn -> ddtree  deployed     -                                       1.24x  41 s",
    ]


def test_a_canary_down_its_variant_ladder_says_why_in_the_cause():
    kept = {"host": "ct129", "outcome": "deployed", "variant": "nextn", "cause": None,
            "ladder": "ddtree rolled back (kv_pool_oom); dflash not retried (kv_pool_oom)"}
    assert row(kept)["cause"] == "after ddtree rolled back (kv_pool_oom); dflash not retried (kv_pool_oom)"
    failed = dict(kept, outcome="rolled_back", cause="cuda_graph_failed", ladder="ddtree rolled back (kv_pool_oom)")
    assert row(failed)["cause"] == "cuda_graph_failed; after ddtree rolled back (kv_pool_oom)"
    assert row(dict(kept, ladder=""))["cause"] is None


@pytest.mark.parametrize("rollback, restored, expected", [
    ({"gate": {"state": "healthy", "elapsed": 5.7}, "known_good": "NEXTN", "leftovers": {}}, True,
     ("restored", "nextn", None, 5.7)),
    ({"gate": {}, "known_good": "NEXTN", "leftovers": {"released": False, "msg": "PID 7 holds 20000 MiB on GPU 0"}},
     True, ("failed", None, "ct129: rolled back to NEXTN: restored but NOT STARTED - PID 7 holds 20000 MiB on GPU 0",
            None)),
    ({"known_good": "NEXTN"}, False, ("left_alone", "nextn", None, None)),
], ids=["restored", "not started: failed, with the line that says so", "left alone"])
def test_a_rollback_row_for_the_jobs_artifacts(rollback, restored, expected):
    # (What the sglang_rollback_result filter returns as its row; a module_utils test cannot import a filter.)
    said = diagnosis.rollback_result(rollback, "ct129", "sglang.service", restored)
    row = fleet_summary.rollback_row("ct129", "a6000", rollback, restored, said)
    assert (row["outcome"], row["after"], row["cause"], row["seconds"]) == expected
    assert (row["host"], row["class"], said["ok"]) == ("ct129", "a6000", expected[0] != "failed")
    wanted = {"data": {"sglang_outcomes": {"ct129": row}}, "per_host": False, "aggregate": True}
    assert fleet_summary.artifact(row) == wanted


def test_a_server_group_is_one_line_with_its_nodes():
    node = dict(KEPT, host="ctg1", group={"name": "grp_a", "node_rank": 1, "nodes": ["ctg0", "ctg1"]},
                perf=None, seconds=52.0)
    face = dict(KEPT, host="ctg0", group={"name": "grp_a", "node_rank": 0, "nodes": ["ctg0", "ctg1"]})
    rows = [row(node), row(KEPT), row(face)]
    assert row(face)["group"] == "grp_a" and row(face)["node_rank"] == 0
    got = lines(rows)
    assert got[1:] == [
        "ct200               blackwell  nextn -> ddtree  deployed  -      1.24x  41 s",
        "grp_a (ctg0, ctg1)  blackwell  nextn -> ddtree  deployed  -      1.24x  52 s",
    ], got
    back = dict(face, outcome="rolled_back", cause="group_node_failed")
    mixed = lines([row(node), row(back)])[1]
    assert "rolled_back/deployed  group_node_failed" in mixed, mixed   # by rank: rank 0's first
