"""The canary filters read what the playbook holds: the phase of each host, and the canary's
report fact or the failure this deploy kept (which wins over an earlier deploy's fact)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.filter.sglang import sglang_canary_verdict, sglang_deploy_phase

ROLLED = {"outcome": "rolled_back", "cause": "kv_pool_oom"}
KEPT = {"outcome": "deployed", "cause": None}


def test_the_phase_reads_the_class_group():
    groups = {"sglang_class_a6000": ["ct130", "ct129"]}
    got = sglang_deploy_phase("ct130", "a6000", ["ct129", "ct130"], groups, True)
    assert (got["canary"], got["class_canary"], got["group"]) == (False, "ct129", "sglang_deploy_rest")


@pytest.mark.parametrize("canary_vars, go, cause", [
    ({"ansible_facts": {"sglang_deploy": KEPT}, "__sglang_deploy_failure": {}}, True, None),
    ({"ansible_facts": {"sglang_deploy": ROLLED}, "__sglang_deploy_failure": {}}, False,
     "class canary rolled back (kv_pool_oom)"),
    ({"ansible_facts": {"sglang_deploy": KEPT},
      "__sglang_deploy_failure": {"msg": "ct129: DDTREE rolled back", "summary": ROLLED}},
     False, "class canary rolled back (kv_pool_oom)"),
    ({"ansible_facts": {"sglang_deploy": KEPT}, "__sglang_deploy_failure": {"msg": "GPU 0 is held", "summary": None}},
     False, "class canary failed (GPU 0 is held)"),
], ids=["kept", "rolled back, tolerated", "rolled back, failed (its report's row)",
        "failed before its report (an earlier deploy's fact does not count)"])
def test_the_verdict_reads_the_canary_this_deploy_ran(canary_vars, go, cause):
    phase = {"canary": False, "class_canary": "ct129"}
    got = sglang_canary_verdict("ct130", phase, {"ct129": canary_vars})
    assert (got["go"], got["cause"]) == (go, cause)


@pytest.mark.parametrize("phase", [{"canary": True, "class_canary": "ct129"}, {"canary": False, "class_canary": None}],
                         ids=["the canary itself", "canary off"])
def test_the_canary_and_a_deploy_without_canary_go_on(phase):
    assert sglang_canary_verdict("ct129", phase, {})["go"]
