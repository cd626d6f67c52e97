"""The canary of a class, as the deploy's plan reads it (the sglang_plan action): the phase of
each host (the sglang_deploy_phases filter), and the skip sglang_canary decided (the decision
itself is tests/unit/plugins/module_utils/test_canary.py's)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.action.sglang_plan import ActionModule
from ansible_collections.inferops.sglang.plugins.filter.sglang import sglang_deploy_phases


def test_the_phases_filter_takes_the_play_hosts_and_their_classes():
    got = sglang_deploy_phases(["ct129", "ct130"], ["a6000", None], True)
    assert got["ct130"] == {"canary": True, "class_canary": "ct130", "group": "sglang_deploy_canary",
                            "earlier": None}, "no class"
    assert got["ct129"]["canary"] and not sglang_deploy_phases(["ct129"], ["a6000"])["ct129"]["canary"]


@pytest.mark.parametrize("said, skip", [
    ({}, None),
    ({"go": True, "variant": "dflash", "cause": None, "msg": "ct130: class canary ct129 deployed"}, None),
    ({"go": False, "variant": "ddtree", "cause": "class canary rolled back (kv_pool_oom)", "msg": "ct130: skipped: ..."},
     {"cause": "class canary rolled back (kv_pool_oom)", "msg": "ct130: skipped: ..."}),
], ids=["no canary deploy", "its canary kept a variant", "its canary rolled back"])
def test_the_plan_skips_the_host_sglang_canary_stopped_and_decides_nothing_of_it(said, skip):
    assert ActionModule.canary_verdict({"canary_verdict": said}) == skip


@pytest.mark.parametrize("facts, before", [
    ({"deployed": {"variant": "nextn"}}, "nextn"),
    ({"deployed": {"variant": "nextn"}, "pending": {"variant": "dflash"}}, "dflash (unverified)"),
    ({}, None),
], ids=["serving its known-good", "a switch of an earlier run pending", "nothing of ours"])
def test_a_skipped_host_is_reported_untouched_with_its_canarys_cause(facts, before):
    skip = {"cause": "class canary rolled back (kv_pool_oom)", "msg": "ct130: skipped: class canary rolled back"}
    got = ActionModule.skipped({"variant": "ddtree", "unit": "sglang.service"}, facts, skip)
    assert got["ended"]["outcome"] == "skipped" and got["ended"]["cause"] == skip["cause"]
    assert got["ended"]["failure"] == skip["msg"] and got["ended"]["ok"] and not got["ended"]["rollback"]
    # (Nothing to converge and nothing earlier: the host runs what it ran, as its report says.)
    assert (got["before"], got["converged"], got["earlier"]) == (before, False, None)


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
