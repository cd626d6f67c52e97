"""playbooks/status.yml's line (the sglang_status filter): what runs, health, known-good, the
last deploy with its whole diagnosis."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.filter.sglang import sglang_status

RUNNING = {"active_state": "active", "sub_state": "running"}
FACTS = {"healthy": True, "unit": RUNNING, "deployed": {"variant": "ddtree", "release": "/opt/sglang/releases/0.5.23-abc"},
         "known_good_record": {"variant": "nextn"}, "http_status": 200, "http_error": None}
LAST = {"outcome": "rolled_back", "time": "T", "diagnosis": "ct129: DDTREE deploy failed in 2.7 s\n  cause:    kv_pool_oom"}


@pytest.mark.parametrize("facts, last, expected", [
    (FACTS, LAST, "ct129: DDTREE from 0.5.23-abc, healthy (active/running); known-good NEXTN; last deploy: rolled_back T"
                  "\n  ct129: DDTREE deploy failed in 2.7 s\n    cause:    kv_pool_oom"),
    (dict(FACTS, healthy=False, http_status=503), None,
     "ct129: DDTREE from 0.5.23-abc, not healthy (503) (active/running); known-good NEXTN; last deploy: no report"),
    ({"healthy": False, "unit": {"active_state": "inactive", "sub_state": "dead"}, "deployed": None,
      "known_good_record": None}, None,
     "ct129: NONE from -, not running (inactive/dead); known-good NONE; last deploy: no report"),
    (dict(FACTS, deployed={"variant": "nextn", "release": "/opt/sglang/releases/0.5.23-abc"},
          pending={"variant": "ddtree", "started": 1796300000.0}), None,
     "ct129: DDTREE UNVERIFIED (a switch began at 2026-12-03 12:13:20 UTC and was never confirmed) from 0.5.23-abc, "
     "healthy (active/running); known-good NEXTN; last deploy: no report"),
    (dict(FACTS, known_good_problem="incomplete: missing sglang.env in /etc/sglang/known-good"), None,
     "ct129: DDTREE from 0.5.23-abc, healthy (active/running); known-good NEXTN incomplete: missing sglang.env in "
     "/etc/sglang/known-good; last deploy: no report"),
    (dict(FACTS, known_good_record=None, known_good_problem="corrupt: /etc/sglang/known-good/meta.json does not parse "
                                                            "as a deploy record"), None,
     "ct129: DDTREE from 0.5.23-abc, healthy (active/running); known-good corrupt: /etc/sglang/known-good/meta.json "
     "does not parse as a deploy record; last deploy: no report"),
    (dict(FACTS, deployed={"variant": "nextn", "release": "/opt/sglang/releases/0.5.23-abc"},
          guard={"why": "the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC",
                 "time": 1796300331.0, "restored": "nextn", "healthy": True, "seconds": 5.1}), None,
     "ct129: NEXTN from 0.5.23-abc, healthy (active/running); known-good NEXTN; last deploy: no report\n"
     "  the host's guard: the controller did not confirm DDTREE's gate by its deadline 2026-12-03 12:18:50 UTC at "
     "12:18:51; the host restored NEXTN by itself, healthy in 5.1 s"),
    (dict(FACTS, deployed={"variant": "ddtree", "release": "/opt/sglang/releases/0.5.23-abc",
                           "timeline": {"parallel": 2.1, "weights": 212.0, "kv_pool": 4.0, "graphs": 41.0, "ready": 12}},
          known_good_record={"variant": "nextn", "timeline": {"weights": 198.0, "graphs": 38.5}}), None,
     "ct129: DDTREE from 0.5.23-abc, healthy (active/running); known-good NEXTN; last deploy: no report\n"
     "  its start-up: parallel init 2.1 s, weights 212 s (known-good 198 s), kv pool 4 s, graphs 41 s (known-good "
     "38 s), warm-up 12 s"),
], ids=["healthy, with the last diagnosis whole", "answers 503", "nothing deployed", "a pending switch: UNVERIFIED",
        "an incomplete known-good, named", "a corrupt known-good, named", "what the guard did on its own",
        "the start-up timeline beside the known-good's"])
def test_status(facts, last, expected):
    assert sglang_status(facts, "ct129", last) == expected


def test_a_node_of_a_server_group_says_so():
    last = dict(LAST, diagnosis=None, group={"name": "grp_a", "node_rank": 1, "nodes": ["ctg0", "ctg1"]})
    assert sglang_status(FACTS, "ctg1", last).splitlines()[1] == (
        "  node 1 of server group grp_a (ctg0, ctg1); rank 0's health is the server's")
