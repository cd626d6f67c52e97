"""A server group's decisions as data: which node a host is, its arguments, and when a run
that would split the group is refused."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import server_group as sg

NODES = ("gpu-a", "gpu-b")
ADDR = "198.18.0.11:50000"


def group(host="gpu-a", nodes=NODES):
    return sg.membership("ds_r1_a", nodes, host, ADDR)


@pytest.mark.parametrize("host, rank, face", [("gpu-a", 0, True), ("gpu-b", 1, False)])
def test_rank_is_the_place_in_the_inventory_group(host, rank, face):
    node = group(host)
    assert (node["node_rank"], node["face"], node["nnodes"], node["rank0"]) == (rank, face, 2, "gpu-a")
    assert sg.server_args(node) == {"nnodes": 2, "node_rank": rank, "dist_init_addr": ADDR}


def test_a_host_on_its_own_gets_no_arguments():
    assert sg.server_args({}) == {}
    assert sg.parallel_problem({}, {"tp_size": 3}) is None
    assert sg.whole_problem({}, [], [], []) is None


@pytest.mark.parametrize("nodes, host, addr, says", [
    ([], "gpu-a", ADDR, "no inventory group of that name lists its nodes"),
    (NODES, "gpu-c", ADDR, "gpu-c is not one of its nodes (gpu-a, gpu-b)"),
    (["gpu-a"], "gpu-a", ADDR, "has one node (gpu-a): a server on one host needs no group"),
    (NODES, "gpu-a", "", "sglang_dist_init_addr '' is not HOST:PORT"),
    (NODES, "gpu-a", "198.18.0.11", "'198.18.0.11' is not HOST:PORT"),
    (NODES, "gpu-a", "198.18.0.11:0", "is not HOST:PORT"),
    (NODES, "gpu-a", "198.18.0.11:70000", "is not HOST:PORT"),
])
def test_a_group_the_inventory_cannot_make_is_refused_with_what_to_change(nodes, host, addr, says):
    with pytest.raises(sg.GroupError) as info:
        sg.membership("ds_r1_a", nodes, host, addr)
    assert says in str(info.value) and str(info.value).endswith("Nothing was changed.")


@pytest.mark.parametrize("addr", ["gpu-a.lab:50000", "[2001:db8::1]:50000", ADDR])
def test_addresses_sglang_parses(addr):
    assert sg.membership("g", NODES, "gpu-a", addr)["dist_init_addr"] == addr


@pytest.mark.parametrize("args, says", [
    ({"tp_size": 16}, None),
    ({"tp_size": 8, "pp_size": 2}, None),
    ({"tp_size": 3}, "tp_size 3 (times pp_size) is not a multiple of its 2 nodes"),
    ({}, "tp_size 1 (times pp_size) is not a multiple of its 2 nodes"),
])
def test_tp_size_must_divide_over_the_nodes(args, says):
    problem = sg.parallel_problem(group(), args)
    assert (problem is None) if says is None else (says in problem)


ALL = list(NODES) + ["ct129"]


@pytest.mark.parametrize("in_play, batch, active, says", [
    (ALL, ALL, ALL, None),
    (NODES, NODES, NODES, None),
    (["gpu-a", "ct129"], ["gpu-a", "ct129"], ["gpu-a", "ct129"],
     "server group ds_r1_a: gpu-b (rank 1) not in this run (the limit or the play's hosts leave it out); "
     "a group changes as one: run it whole (--limit ds_r1_a)."),
    (["gpu-b"], ["gpu-b"], ["gpu-b"], "gpu-a (rank 0) not in this run"),
    (ALL, ["gpu-a"], ["gpu-a"], "gpu-b (rank 1) in another batch of `serial` (or of the class canary's phase); "
                                "a group changes as one: deploy it in one batch (playbooks/deploy.yml batches each "
                                "group whole"),
    (ALL, ALL, ["gpu-b", "ct129"], "gpu-a (rank 0) failed or was unreachable earlier in this run"),
])
def test_a_run_that_splits_the_group_is_refused_naming_the_nodes(in_play, batch, active, says):
    problem = sg.whole_problem(group(), in_play, batch, active)
    if says is None:
        assert problem is None
    else:
        assert says in problem and problem.endswith("Nothing was changed.")


@pytest.mark.parametrize("host, rank", [("gpu-a", "0"), ("gpu-b", "1")])
def test_each_node_runs_the_same_command_line_but_its_rank(host, rank):
    """service_config puts the node's arguments after the host's overrides: an override cannot
    make two nodes claim one rank."""
    from ansible_collections.inferops.sglang.plugins.module_utils import service_config
    inputs = {"envelope": {"tp_size": 16}, "overrides": {"node_rank": 5}, "variant": "nextn",
              "variants": {"nextn": {"speculative_algorithm": "NEXTN"}}, "model_path": "/models/m",
              "host": "127.0.0.1", "port": 30000, "version": "0.5.23", "flags_by_version": {},
              "server_group": group(host)}
    args = service_config.server_args(inputs)
    argv, _exec_start = service_config.command_line({"release": "/opt/r"}, args,
                                                    service_config.paths("sglang.service", "/etc/sglang"))
    pairs = dict(zip(argv[::2], argv[1::2]))
    assert {k: pairs[k] for k in ("--nnodes", "--node-rank", "--dist-init-addr", "--tp-size")} == {
        "--nnodes": "2", "--node-rank": rank, "--dist-init-addr": ADDR, "--tp-size": "16"}


# --- the nodes judged together (deploy_plan.group_failure, the outcome) -------------------------
from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan as dp  # noqa: E402

SINCE = 1000.0


def word(host, rank, outcome="deployed", cause=None, phase=None, last="", variant="dflash", at=SINCE + 60):
    return {"host": host, "node_rank": rank, "variant": variant, "at": at, "outcome": outcome,
            "rollback": outcome == "rolled_back", "cause": cause, "failure": "", "phase": phase, "last_line": last}


OK0, OK1 = word("gpu-a", 0), word("gpu-b", 1)
OOM1 = word("gpu-b", 1, "rolled_back", "kv_pool_oom")
STALL0 = word("gpu-a", 0, "rolled_back", "stalled", "kv_pool", "[TP0] Load weight end. ...")
WAITED1 = word("gpu-b", 1, "rolled_back", "stalled", "parallel", "[TP8] Init parallel begin.")
NEVER1 = word("gpu-b", 1, "rolled_back", "stalled", "parallel", "server_args=ServerArgs(...)")
CUT1 = dict(word("gpu-b", 1, "rolled_back", dp.LINK_LOST), link="[Errno 101] Network is unreachable")
LOST0 = word("gpu-a", 0, "rolled_back", "health_lost")


@pytest.mark.parametrize("host, said, says, first", [
    ("gpu-a", [OK0, OK1], None, None),
    ("gpu-a", [OK0, OOM1], "server group ds_r1_a: gpu-b (rank 1) rolled back (kv_pool_oom); the group rolls back "
                           "as one", True),
    ("gpu-b", [STALL0, OK1], "gpu-a (rank 0) rolled back (stalled)", False),
    ("gpu-a", [STALL0, NEVER1], "gpu-b (rank 1) did not join distributed init (its start stalled before it; last "
                                "line: server_args=ServerArgs(...))", True),
    ("gpu-a", [STALL0, WAITED1], "gpu-b (rank 1) rolled back (stalled)", False),
    ("gpu-a", [OK0, None], "gpu-b (rank 1) did not say how its switch ended (unreachable or interrupted)", True),
    ("gpu-a", [OK0, word("gpu-b", 1, at=SINCE - 5)], "gpu-b (rank 1) did not say how its switch ended", True),
    ("gpu-a", [OK0, word("gpu-b", 1, variant="nextn")], "gpu-b (rank 1) did not say how its switch ended", True),
    ("gpu-a", [OK0, word("gpu-b", 1, "failed")], "gpu-b (rank 1) failed (?)", True),
    # a link cut after the start: rank 0 lost its health, node 1 its link; the link is the cause
    ("gpu-a", [LOST0, CUT1], "gpu-b (rank 1) lost its link to rank 0 at 198.18.0.11:50000 ([Errno 101] Network is "
                             "unreachable)", True),
    ("gpu-b", [LOST0, CUT1], "gpu-a (rank 0) rolled back (health_lost)", False),
])
def test_the_node_that_fell_first_is_named(host, said, says, first):
    found = dp.group_failure(group(host), said, "dflash", SINCE)
    if says is None:
        assert found is None
    else:
        assert says in found["text"] and found["first"] is first


def decide(gate_state="healthy", cause=None, said=(OK0, OK1), host="gpu-a", link=None, fired=None):
    gate = {"state": gate_state, "cause": cause}
    run = {"variant": "dflash", "version": "0.5.23", "release": "/r", "restarted": True, "gate": gate,
           "perf_gate": {}, "group": group(host), "group_said": list(said), "since": SINCE, "link": link,
           "guard_fired": fired}
    return dp.outcome({"config_id": "c"}, run)


# What rank 0's guard did when node 1's guard said its new server failed (guard.act's result).
FOR_THE_GROUP = {"reason": "group", "why": "gpu-b (rank 1) restores (DFLASH failed ...)", "time": SINCE + 30,
                 "restored": "nextn", "healthy": True, "seconds": 18.3}


BROKEN = {"ok": False, "msg": "server group ds_r1_a: gpu-b (rank 1) cannot reach rank 0 (gpu-a) at ..."}


@pytest.mark.parametrize("kwargs, outcome, cause, failure", [
    ({}, "deployed", None, ""),
    ({"said": (OK0, OOM1)}, "rolled_back", dp.GROUP_NODE_FAILED, "gpu-b (rank 1) rolled back (kv_pool_oom)"),
    # rank 0 only waited for the node that fell: the cause is that node's
    ({"gate_state": "failed", "cause": "stalled", "said": (STALL0, OOM1)}, "rolled_back", dp.GROUP_NODE_FAILED,
     "gpu-b (rank 1) rolled back (kv_pool_oom)"),
    # rank 0's ranks saw node 1's connections close (gloo's text): the cause is node 1's
    ({"gate_state": "failed", "cause": "peer_died", "said": (word("gpu-a", 0, "rolled_back", "peer_died"), OOM1)},
     "rolled_back", dp.GROUP_NODE_FAILED, "gpu-b (rank 1) rolled back (kv_pool_oom)"),
    # its own failure stays its own
    ({"gate_state": "failed", "cause": "kv_pool_oom", "said": (STALL0, OOM1)}, "rolled_back", "kv_pool_oom", ""),
    # every node stalled in distributed init: no node to blame beyond its own stall
    ({"gate_state": "failed", "cause": "stalled", "said": (STALL0, WAITED1)}, "rolled_back", "stalled", ""),
    # rank 0 lost its health because node 1's link broke: the cause is node 1's link
    ({"gate_state": "failed", "cause": "health_lost", "said": (LOST0, CUT1)}, "rolled_back", dp.GROUP_NODE_FAILED,
     "gpu-b (rank 1) lost its link to rank 0"),
    # node 1's own gate passed (its stand-in health answers), but its link is broken
    ({"host": "gpu-b", "said": (LOST0, CUT1), "link": BROKEN}, "rolled_back", dp.LINK_LOST,
     "gpu-b (rank 1) cannot reach rank 0 (gpu-a)"),
    # a link that holds says nothing
    ({"link": {"ok": True, "msg": "gpu-a (rank 0) reaches rank 0"}}, "deployed", None, ""),
    # the group's guards restored it before the controller read node 1's verdict: node 1's
    # failure all the same (its rollback only says so), not "the guard acted first"
    ({"gate_state": "failed", "cause": "unit_failed", "said": (STALL0, OOM1), "fired": FOR_THE_GROUP}, "rolled_back",
     dp.GROUP_NODE_FAILED, "gpu-b (rank 1) rolled back (kv_pool_oom)"),
    # the deadline, with no node that fell: the guard acted first
    ({"fired": dict(FOR_THE_GROUP, reason="deadline")}, "rolled_back", dp.GUARD_ACTED, "the host's guard restored"),
])
def test_a_node_rolls_back_with_its_group(kwargs, outcome, cause, failure):
    ended = decide(**kwargs)
    assert (ended["outcome"], ended["cause"]) == (outcome, cause) and failure in ended["failure"]
    assert ended["rollback"] == (outcome == "rolled_back" and cause != dp.GUARD_ACTED)


@pytest.mark.parametrize("kwargs, remembered", [
    ({"said": (OK0, OOM1)}, True),
    ({"gate_state": "failed", "cause": "health_lost", "said": (LOST0, CUT1)}, False),
    ({"host": "gpu-b", "said": (LOST0, CUT1), "link": BROKEN}, False),
])
def test_a_broken_link_is_not_the_configurations_fault(kwargs, remembered):
    """A re-run once the network is mended tries the same configuration again."""
    ended = decide(**kwargs)
    assert ended["remember"] is remembered and "blameless" not in ended


def test_a_node_says_why_its_link_broke():
    ended = decide(host="gpu-b", said=(LOST0, CUT1), link=dict(BROKEN, error="[Errno 113] No route to host"))
    said = dp.node_word(group("gpu-b"), ended, "dflash", SINCE + 60, dict(BROKEN, error="[Errno 113] No route to host"))
    assert (said["cause"], said["link"]) == (dp.LINK_LOST, "[Errno 113] No route to host")
    assert dp.node_word(group("gpu-a"), decide(), "dflash", SINCE + 60, {"ok": True})["link"] is None


def test_a_group_rollback_is_remembered_on_every_node_and_said_first():
    from ansible_collections.inferops.sglang.plugins.module_utils import diagnosis
    ended = dp.outcome({"config_id": "c"}, {"variant": "dflash", "version": "0.5.23", "release": "/r",
                                            "restarted": True, "gate": {"state": "healthy"}, "perf_gate": {},
                                            "group": group(), "group_said": [OK0, OOM1], "since": SINCE})
    assert ended["remember"] and ended["record"]["rolled_back"]["cause"] == dp.GROUP_NODE_FAILED
    text = diagnosis.deploy_diagnosis(ended, "gpu-a")
    assert text.startswith("gpu-a: DFLASH deploy rolled back with its server group: server group ds_r1_a: gpu-b "
                           "(rank 1) rolled back (kv_pool_oom)")


RUN = "ctl:4242:889123"
PLAN = {"restart": True, "variant": "dflash", "run": RUN, "release": "0.5.23-4f1c2ab90d3e"}


@pytest.mark.parametrize("plans, says", [
    (None, None),
    ([PLAN, PLAN], None),
    ([dict(PLAN, restart=False), dict(PLAN, restart=False)], None),
    ([dict(PLAN, restart=False), PLAN], "gpu-b (rank 1) would restart but gpu-a (rank 0) would not"),
    ([PLAN, None], "gpu-b (rank 1) is not ready to switch in this deploy"),
    ([PLAN, dict(PLAN, variant="nextn")], "gpu-b (rank 1) is not ready to switch in this deploy"),
    ([PLAN, dict(PLAN, run="ctl:4242:771002")], "gpu-b (rank 1) is not ready to switch in this deploy"),
    ([PLAN, dict(PLAN, release="0.5.23-9d0e1f2a3b4c")],
     "its nodes would run different releases (gpu-a (rank 0): 0.5.23-4f1c2ab90d3e, gpu-b (rank 1): 0.5.23-9d0e1f2a3b4c)"),
])
def test_the_nodes_restart_together_or_none_does(plans, says):
    problem = sg.restart_problem(group(), plans, "dflash", RUN)
    assert (problem is None) if says is None else (says in problem and problem.endswith("Nothing was changed."))


# --- the link to rank 0 (sglang_link's probe, judged) --------------------------------------------
@pytest.mark.parametrize("host, probe, says", [
    ("gpu-b", {"reached": True, "listening": True, "local": None}, None),
    ("gpu-b", {"reached": True, "listening": False, "local": None}, None),   # refused: the host answered
    ("gpu-a", {"reached": True, "listening": False, "local": True}, None),
    ("gpu-b", {"reached": False, "error": "[Errno 101] Network is unreachable"},
     "gpu-b (rank 1) cannot reach rank 0 (gpu-a) at 198.18.0.11:50000: [Errno 101] Network is unreachable"),
    ("gpu-b", {"reached": False, "error": "no answer within 5 s"}, "at 198.18.0.11:50000: no answer within 5 s"),
    ("gpu-a", {"reached": True, "local": False}, "gpu-a (rank 0) does not hold 198.18.0.11:50000's address now"),
    ("gpu-a", {"reached": False, "local": None, "error": "x"}, "gpu-a (rank 0) cannot reach rank 0 (gpu-a)"),
])
def test_a_link_that_cannot_carry_the_ranks_is_named(host, probe, says):
    problem = sg.link_problem(group(host), probe)
    assert (problem is None) if says is None else (says in problem and "sglang_dist_init_addr" in problem)


def test_a_host_on_its_own_has_no_link_to_probe():
    assert sg.link_problem({}, {"reached": False}) is None


# --- batches of `serial` that keep a group whole (deploy.yml's rest play) ------------------------
@pytest.mark.parametrize("hosts, groups, serial, order, sizes", [
    # no group: the play's own order and batches
    (["a", "b", "c"], ["", "", ""], 1, ["a", "b", "c"], [1, 1, 1]),
    (["a", "b", "c"], [], 2, ["a", "b", "c"], [2, 1]),
    # a group counts as one host, in one batch, where its first node is
    (["a", "g1", "b", "g2"], ["", "ds", "", "ds"], 1, ["a", "g1", "g2", "b"], [1, 2, 1]),
    (["g1", "g2"], ["ds", "ds"], 1, ["g1", "g2"], [2]),
    (["a", "g1", "b", "g2", "c"], ["", "ds", "", "ds", ""], 2, ["a", "g1", "g2", "b", "c"], [3, 2]),
    # two groups, each whole
    (["g1", "h1", "g2", "h2"], ["x", "y", "x", "y"], 1, ["g1", "g2", "h1", "h2"], [2, 2]),
    # 0: everything in one batch; a percentage counts units; a list as a play's serial (its last repeats)
    (["a", "g1", "g2"], ["", "ds", "ds"], 0, ["a", "g1", "g2"], [3]),
    (["a", "g1", "g2"], ["", "ds", "ds"], "0", ["a", "g1", "g2"], [3]),
    (["a", "b", "c", "g1", "g2"], ["", "", "", "ds", "ds"], "50%", ["a", "b", "c", "g1", "g2"], [2, 3]),
    (["a", "b", "c", "g1", "g2"], ["", "", "", "ds", "ds"], [1, "100%"], ["a", "b", "c", "g1", "g2"], [1, 4]),
    (["a", "b", "c", "d"], [], [1, 2], ["a", "b", "c", "d"], [1, 2, 1]),
    ([], [], 1, [], []),
])
def test_each_group_is_one_unit_of_serial(hosts, groups, serial, order, sizes):
    assert sg.batches(hosts, groups, serial) == {"order": order, "serial": sizes}
