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
], ids=["healthy, with the last diagnosis whole", "answers 503", "nothing deployed"])
def test_status(facts, last, expected):
    assert sglang_status(facts, "ct129", last) == expected
