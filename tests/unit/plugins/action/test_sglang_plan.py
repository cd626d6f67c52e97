"""The canary of a class, as the deploy's plan reads it (the sglang_plan action): the phase of
each host (the sglang_deploy_phases filter), and the canary's report fact of this deploy (an
earlier deploy's, in the same run, says nothing about this one)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.action.sglang_plan import ActionModule
from ansible_collections.inferops.sglang.plugins.filter.sglang import sglang_deploy_phases

ROLLED = {"outcome": "rolled_back", "cause": "kv_pool_oom", "deploy": "deploy-2"}
KEPT = {"outcome": "deployed", "cause": None, "deploy": "deploy-2"}
FAILED = {"outcome": "failed", "cause": "ct129: PID 7 holds memory on GPU 0", "deploy": "deploy-2"}


def test_the_phases_filter_takes_the_play_hosts_and_their_classes():
    got = sglang_deploy_phases(["ct129", "ct130"], ["a6000", None], True)
    assert got["ct130"] == {"canary": True, "class_canary": "ct130", "group": "sglang_deploy_canary",
                            "earlier": None}, "no class"
    assert got["ct129"]["canary"] and not sglang_deploy_phases(["ct129"], ["a6000"])["ct129"]["canary"]


@pytest.mark.parametrize("report, cause", [
    (KEPT, None),
    (ROLLED, "class canary rolled back (kv_pool_oom)"),
    (FAILED, "class canary failed (ct129: PID 7 holds memory on GPU 0)"),
    (dict(KEPT, deploy="deploy-1"), "class canary failed (it ended before its report (unreachable, or interrupted))"),
    (None, "class canary failed (it ended before its report (unreachable, or interrupted))"),
    (dict(KEPT, deploy="an earlier job"), None),
    (dict(ROLLED, deploy="an earlier job"), "class canary rolled back (kv_pool_oom)"),
], ids=["kept", "rolled back", "failed before its switch (its rescue's report)",
        "an earlier deploy's report does not count", "no report at all",
        "the canary job's row (sglang_canary_outcomes): kept", "the canary job's row: rolled back"])
def test_the_verdict_reads_the_canary_this_deploy_ran(report, cause):
    got = ActionModule.canary_verdict("ct130", {"canary": "ct129", "canary_report": report, "deploy_id": "deploy-2"})
    if cause is None:
        assert got is None
    else:
        assert got == {"cause": cause, "msg": "ct130: skipped: %s (the canary: ct129); this host was not touched"
                       % cause}


@pytest.mark.parametrize("canary", ["ct129", ""], ids=["the canary itself", "canary off"])
def test_the_canary_and_a_deploy_without_canary_go_on(canary):
    assert ActionModule.canary_verdict("ct129", {"canary": canary, "canary_report": None, "deploy_id": ""}) is None


def test_the_phases_filter_takes_an_earlier_jobs_rows():
    rows = {"ct129": {"class": "a6000", "outcome": "deployed", "variant": "ddtree"}}
    got = sglang_deploy_phases(["ct130"], ["a6000"], True, rows)["ct130"]
    assert (got["group"], got["class_canary"], got["earlier"]["ok"]) == (
        "sglang_deploy_rest", "ct129, in an earlier job", True)
    verdict = ActionModule.canary_verdict("ct130", {"canary": got["class_canary"], "canary_report": got["earlier"],
                                                    "deploy_id": "d"})
    assert verdict is None


def test_the_plan_renders_the_role_templates_as_the_template_lookup_does():
    """The plan renders over a shallow copy of the variables; the texts (and so every deployed
    host's configuration id) must stay byte for byte the lookup's."""
    from pathlib import Path
    from types import SimpleNamespace

    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader, lookup_loader
    from ansible.template import Templar

    init_plugin_loader()
    role = Path(__file__).resolve().parents[4] / "roles" / "sglang_service"
    loader = DataLoader()
    variables = {"ansible_search_path": [str(role)], "sglang_service_variant": "ddtree",
                 "sglang_service_user": "sglang", "sglang_service_group": "sglang", "sglang_service_state_dir": "/s",
                 "sglang_service_data_dir": "/d", "sglang_service_restart_sec": 10,
                 "sglang_service_timeout_start_sec": 3600, "sglang_service_timeout_stop_sec": 90,
                 "sglang_service_limit_nofile": 65536,
                 "sglang_service_environment": {"HF_HUB_OFFLINE": "1", "NCCL_DEBUG": "WARN"}}
    extra = {"__sglang_service_exec_start": "/opt/r/bin/python -m sglang.launch_server --port 30000",
             "__sglang_service_release": "/opt/sglang/releases/0.5.23-abc"}
    plan = ActionModule(task=SimpleNamespace(get_search_path=lambda: [str(role)]), connection=None,
                        play_context=None, loader=loader, templar=Templar(loader=loader, variables=variables),
                        shared_loader_obj=None)
    lookup = lookup_loader.get("ansible.builtin.template", loader=loader, templar=Templar(loader=loader))
    for name in ("sglang.service.j2", "sglang.env.j2"):
        want = lookup.run([name], variables=variables, template_vars=extra)[0]
        assert plan.render(name, variables, extra) == want
        assert "release 0.5.23-abc" in want or name == "sglang.env.j2"


@pytest.mark.parametrize("face, enabled", [(True, True), (False, False)])
def test_only_rank_0_of_a_server_group_measures_speed(face, enabled):
    """A node other than rank 0 has no API: its plan's performance gate is off."""
    gate = ActionModule.perf_gate({"server_group": {"name": "g", "node_rank": 0 if face else 1, "face": face},
                                   "perf_gate": {"enabled": True, "record": True}})
    assert (gate["enabled"], gate["record"]) == (enabled, enabled)
    assert ActionModule.perf_gate({"server_group": {}, "perf_gate": {"enabled": True}}) == {"enabled": True}
