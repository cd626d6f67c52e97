"""A canary per host class (module_utils/canary.py) as data tables: who deploys first, whether
the rest of a class goes on after its canary and with which variant, and a canary's ladder."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.canary import (
    CANARIES, EARLIER, NO_CANARY, REST, earlier_report, follow, phases, rung, verdict,
)

PLAY = ["ct129", "ct130", "ct200", "ct201", "ct300"]
CLASSES = {"ct129": "a6000", "ct130": "a6000", "ct200": "blackwell", "ct201": "blackwell", "ct300": ""}


@pytest.mark.parametrize("host, enabled, group", [
    ("ct129", True, CANARIES), ("ct130", True, REST), ("ct200", True, CANARIES), ("ct201", True, REST),
    ("ct300", True, CANARIES), ("ct129", False, REST),
], ids=["first a6000 in play order", "second a6000", "first blackwell", "second blackwell",
        "a host without a class is its own class's canary", "canary off: every host in the rest"])
def test_phases_pick_the_first_host_of_each_class_in_play_order(host, enabled, group):
    got = phases(PLAY, [CLASSES[h] for h in PLAY], enabled)[host]
    assert (got["group"], got["canary"]) == (group, group == CANARIES)
    first = {"a6000": "ct129", "blackwell": "ct200", "": "ct300"}[CLASSES[host]]
    assert got["class_canary"] == (first if enabled else None), "every host knows its class's canary"


def test_the_play_order_picks_the_canary_whatever_the_inventory_order():
    got = phases(["ct130", "ct129"], ["a6000", "a6000"], True)
    assert (got["ct130"]["canary"], got["ct129"]["class_canary"]) == (True, "ct130")


@pytest.mark.parametrize("canary, report, failure, go, cause", [
    (None, None, None, True, None),
    ("ct129", {"outcome": "deployed"}, None, True, None),
    ("ct129", {"outcome": "unchanged"}, None, True, None),
    ("ct129", {"outcome": "check"}, None, True, None),
    ("ct129", {"outcome": "rolled_back", "cause": "kv_pool_oom"}, None, False, "class canary rolled back (kv_pool_oom)"),
    ("ct129", {"outcome": "rolled_back", "cause": "slower"}, "ct129: DDTREE slower", False,
     "class canary rolled back (slower)"),
    ("ct129", {"outcome": "not_retried", "cause": "cuda_graph_oom"}, None, False,
     "class canary not retried: its configuration rolled back before (cuda_graph_oom)"),
    ("ct129", {"outcome": "failed", "cause": "bad_argument"}, "rejected", False, "class canary failed (bad_argument)"),
    ("ct129", None, "GPU 0 is held by PID 4242 (another tenant)\nmore", False,
     "class canary failed (GPU 0 is held by PID 4242 (another tenant))"),
    ("ct129", None, None, False, "class canary failed (no message)"),
], ids=["no canary ran", "canary deployed", "canary already ran it", "check mode", "canary failed its health gate",
        "canary was slower (fail_on_rollback)", "canary's configuration rolled back before", "canary's argv rejected",
        "canary failed before its report", "canary wrote nothing and kept no failure"])
def test_verdict_lets_the_class_go_on_only_after_a_kept_variant(canary, report, failure, go, cause):
    got = verdict(canary, report, failure)
    assert (got["go"], got["cause"]) == (go, cause)
    if not go:
        assert got["msg"] == "skipped: %s (the canary: %s); this host was not touched" % (cause, canary)


# A canary job's artifacts (sglang_outcomes): a6000's canary rolled back, blackwell's deployed,
# their rests skipped / deployed as that job's rows say.
CANARY_JOB = {
    "ct129": {"host": "ct129", "class": "a6000", "outcome": "rolled_back", "cause": "kv_pool_oom", "variant": "ddtree"},
    "ct130": {"host": "ct130", "class": "a6000", "outcome": "skipped", "cause": "class canary rolled back (kv_pool_oom)",
              "variant": "ddtree"},
    "ct200": {"host": "ct200", "class": "blackwell", "outcome": "deployed", "cause": None, "variant": "dflash"},
}


@pytest.mark.parametrize("slice_, host, go, cause, canary", [
    (["ct131", "ct201"], "ct131", False, "class canary rolled back (kv_pool_oom)", "ct129"),
    (["ct131", "ct201"], "ct201", True, None, "ct200"),
    (["ct130", "ct202"], "ct130", False, "class canary rolled back (kv_pool_oom)", "ct129"),
    (["ct200", "ct202"], "ct200", True, None, "ct200"),
    (["ct300"], "ct300", False, "no canary of class h100 in the earlier job", NO_CANARY),
], ids=["a6000 host of a slice: its canary rolled back in the canary job", "blackwell host follows its canary",
        "a host the canary job skipped stays skipped", "the canary itself in a slice is of the rest (it converges)",
        "a class the canary job had no canary for is skipped"])
def test_a_slice_follows_the_canaries_of_an_earlier_job(slice_, host, go, cause, canary):
    classes = {"ct130": "a6000", "ct131": "a6000", "ct200": "blackwell", "ct201": "blackwell", "ct202": "blackwell",
               "ct300": "h100"}
    got = phases(slice_, [classes[h] for h in slice_], True, CANARY_JOB)[host]
    named = canary if canary == NO_CANARY else "%s, in an earlier job" % canary
    assert (got["group"], got["canary"], got["class_canary"]) == (REST, False, named), "no canary in a slice"
    assert got["class_canary"] != host, "not this run's canary (the role would leave the rest's phase)"
    said = verdict(got["class_canary"], got["earlier"])
    assert (said["go"], said["cause"]) == (go, cause), said
    if go:   # the rest deploys the variant the canary kept (a ladder's rung, here DFlash)
        assert got["earlier"]["ok"] and got["earlier"]["variant"] == "dflash"


def test_without_an_earlier_job_nothing_changes():
    assert all(p["earlier"] is None for p in phases(PLAY, [CLASSES[h] for h in PLAY], True).values())


@pytest.mark.parametrize("groups, host, canary, class_canary", [
    # ct200 and ct201 are one server: ct200 is not blackwell's canary; no other blackwell host
    (["", "", "grp", "grp", ""], "ct200", False, None),
    (["", "", "grp", "grp", ""], "ct201", False, None),
    # a single host of the class after the group is its canary; the group follows it
    (["", "", "grp", "", ""], "ct201", True, "ct201"),
    (["", "", "grp", "", ""], "ct200", False, "ct201"),
    (None, "ct200", True, "ct200"),
])
def test_a_node_of_a_server_group_is_never_a_canary(groups, host, canary, class_canary):
    got = phases(PLAY, [CLASSES[h] for h in PLAY], True, server_groups=groups)[host]
    assert (got["canary"], got["class_canary"], got["group"]) == (canary, class_canary,
                                                                  CANARIES if canary else REST)


# The rest of a class follows its canary's report of this deploy (deploy-2): `follow()` is the one
# decision of which variant it deploys and whether it goes at all.
KEPT_DFLASH = {"outcome": "deployed", "cause": None, "variant": "dflash", "deploy": "deploy-2", "ok": True}
ROLLED = {"outcome": "rolled_back", "cause": "kv_pool_oom", "variant": "ddtree", "deploy": "deploy-2", "ok": False}
NOT_SKIPPED = "(goes on)"


@pytest.mark.parametrize("class_canary, report, go, variant, cause", [
    ("ct129", KEPT_DFLASH, True, "dflash", None),
    ("ct129", dict(KEPT_DFLASH, outcome="unchanged"), True, "dflash", None),
    ("ct129", ROLLED, False, "ddtree", "class canary rolled back (kv_pool_oom)"),
    ("ct129", dict(ROLLED, ok=True), False, "ddtree", "class canary rolled back (kv_pool_oom)"),
    ("ct129", dict(ROLLED, outcome="not_retried"), False, "ddtree",
     "class canary not retried: its configuration rolled back before (kv_pool_oom)"),
    ("ct129", {"outcome": "failed", "cause": "bad_argument", "variant": "ddtree", "deploy": "deploy-2"}, False, "ddtree",
     "class canary failed (bad_argument)"),
    ("ct129", dict(KEPT_DFLASH, deploy="deploy-1"), False, "ddtree",
     "class canary failed (it ended before its report (unreachable, or interrupted))"),
    ("ct129", {}, False, "ddtree", "class canary failed (it ended before its report (unreachable, or interrupted))"),
    ("ct129, in an earlier job", earlier_report({"outcome": "deployed", "variant": "dflash"}), True, "dflash", None),
    ("ct129, in an earlier job", earlier_report({"outcome": "rolled_back", "cause": "slower", "variant": "dflash"}),
     False, "ddtree", "class canary rolled back (slower)"),
    (NO_CANARY, {"outcome": None, "cause": "no canary of class h100 in the earlier job", "ok": False, "deploy": EARLIER},
     False, "ddtree", "no canary of class h100 in the earlier job"),
    ("", {}, True, "ddtree", None),
    ("ct130", KEPT_DFLASH, True, "ddtree", None),
], ids=["kept its ladder's second variant: the rest deploys it", "already ran it", "rolled back",
        "rolled back, reported ok (sglang_fail_on_rollback false): still skipped", "not retried",
        "failed before its switch", "an earlier deploy's report of the same run does not count", "no report at all",
        "an earlier job's canary kept dflash", "an earlier job's canary rolled back", "no canary in the earlier job",
        "canary off: the host's own variant", "the host is its own class canary"])
def test_the_rest_follows_the_variant_its_canary_kept_or_is_skipped(class_canary, report, go, variant, cause):
    got = follow("ct130", class_canary, report, "deploy-2", "ddtree")
    assert (got["go"], got["variant"], got["cause"]) == (go, variant, cause), got
    assert got["msg"].startswith("ct130: "), "the skipped host's report names it"
    if not go:
        assert got["msg"] == "ct130: skipped: %s (the canary: %s); this host was not touched" % (cause, class_canary) \
            or class_canary == NO_CANARY


@pytest.mark.parametrize("index, report, go, preceded_by", [
    (0, None, True, ""),
    (0, ROLLED, True, ""),
    (1, ROLLED, True, "ddtree rolled back (kv_pool_oom)"),
    (1, dict(ROLLED, outcome="not_retried"), True, "ddtree not retried (kv_pool_oom)"),
    (2, {"outcome": "rolled_back", "cause": "slower", "variant": "dflash", "deploy": "deploy-2",
         "ladder": "ddtree rolled back (kv_pool_oom)"}, True, "ddtree rolled back (kv_pool_oom); dflash rolled back (slower)"),
    (1, KEPT_DFLASH, False, ""),
    (2, dict(KEPT_DFLASH, ladder="ddtree rolled back (kv_pool_oom)"), False, "ddtree rolled back (kv_pool_oom)"),
    (1, dict(ROLLED, outcome="failed"), False, ""),
    (1, dict(ROLLED, deploy="deploy-1"), False, ""),
    (1, None, False, ""),
], ids=["the first variant always", "the first, whatever an earlier deploy said", "the one before rolled back",
        "the one before was not retried", "the third after two failures: both said, in order",
        "the one before was kept: the ladder ends", "kept on the second: the third does not deploy",
        "the one before failed otherwise (its preflight): the ladder ends", "a report of an earlier deploy",
        "no report (the rung before ended before it)"])
def test_a_ladders_next_variant_deploys_only_after_the_one_before_failed_in_this_deploy(index, report, go, preceded_by):
    got = rung(index, report, "deploy-2")
    assert (got["go"], got["preceded_by"]) == (go, preceded_by), got
