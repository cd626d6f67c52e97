"""A deploy run as AWX runs a job: ansible_runner.run() from a private data directory laid out
as AWX lays it out (the project, env/envvars, env/extravars, the inventory), DDTree on ct129
(a6000: it rolls back, kv_pool_oom) and ct200 (Blackwell: kept). The job's event stream has each
host's health gate, its artifacts (set_stats data, which AWX keeps and a workflow branches on)
say how each host ended, and its status is failed because the a6000 canary rolled back; then
rollback.yml as a job of its own, its artifacts saying what each host serves."""
from __future__ import annotations

import json
import os

import ansible_runner
import pytest

from tests.integration.ansible_run import BIN, LAB_INVENTORY, REPO, run_playbook
from tests.integration.deploying import reset_service
from tests.integration.labhost import REPORTS

GATE = "Gate on health"


@pytest.fixture
def on_nextn(lab):
    """Both hosts serving NEXTN (a host that already does is left as it is: the deploy converges)."""
    proc = run_playbook("playbooks/deploy_nextn.yml", limit="ct129,ct200", extra_vars={"sglang_serial": 0})
    if proc.returncode != 0:   # whatever an earlier test left: from no service at all
        for host in lab.values():
            reset_service(host)
        proc = run_playbook("playbooks/deploy_nextn.yml", limit="ct129,ct200", extra_vars={"sglang_serial": 0})
    assert proc.returncode == 0, proc.stdout[-3000:]
    return lab


def private_data_dir(top):
    """The job's folder as AWX prepares it: the project checkout, the environment, the extra vars."""
    job = top / "job"
    (job / "env").mkdir(parents=True)
    (job / "project").symlink_to(REPO, target_is_directory=True)
    # (PATH: this checkout's ansible-playbook first, as the EE's own is on an execution node.)
    envvars = {"PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
               "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "INFEROPS_REPORT_DIR": str(REPORTS),
               "CONTAINERS_CONF": str(REPO / "lab" / "containers.conf"), "ANSIBLE_NOCOLOR": "1",
               "INFEROPS_WHEELHOUSE": os.environ.get("INFEROPS_WHEELHOUSE", str(REPO / "build" / "wheelhouse"))}
    (job / "env" / "envvars").write_text(json.dumps(envvars))
    # (A configuration that rolled back before on a host is retried: each run of this test gates it.)
    (job / "env" / "extravars").write_text(json.dumps({"sglang_serial": 0, "sglang_retry_rolled_back": True}))
    return job


def test_a_deploy_run_by_ansible_runner_has_its_gates_in_the_events_and_each_host_in_the_artifacts(on_nextn, tmp_path):
    job = private_data_dir(tmp_path)
    run = ansible_runner.run(private_data_dir=str(job), playbook="playbooks/deploy_ddtree.yml",
                             inventory=LAB_INVENTORY, limit="ct129,ct200",
                             quiet=True, timeout=900)
    events = list(run.events)
    said = "".join(e.get("stdout", "") + "\n" for e in events)[-4000:]
    assert (run.status, run.rc) == ("failed", 2), said

    # Each host's health gate, as the events AWX shows: ct200 healthy, ct129 failed with its cause.
    gates = dict((e["event_data"]["host"], e) for e in events if e.get("event_data", {}).get("task") == GATE
                 and e["event"].startswith("runner_on_"))
    assert sorted(gates) == ["ct129", "ct200"], said
    assert gates["ct200"]["event"] == "runner_on_ok" and gates["ct200"]["event_data"]["res"]["state"] == "healthy"
    assert gates["ct129"]["event_data"]["res"]["cause"] == "kv_pool_oom"
    failed = [e["event_data"]["host"] for e in events
              if e["event"] == "runner_on_failed" and not e["event_data"].get("ignore_errors")]
    assert failed == ["ct129"], said

    # The job's artifacts: every host's row of the fleet summary.
    stats = next(e for e in events if e["event"] == "playbook_on_stats")["event_data"]
    outcomes = stats["artifact_data"]["sglang_outcomes"]
    assert [(h, outcomes[h]["outcome"], outcomes[h]["cause"], outcomes[h]["after"]) for h in sorted(outcomes)] == [
        ("ct129", "rolled_back", "kv_pool_oom", "nextn"), ("ct200", "deployed", None, "ddtree")], outcomes
    assert outcomes["ct200"]["ratio"] > 1.0 and outcomes["ct200"]["class"] == "blackwell", outcomes["ct200"]
    assert sorted(stats["failures"]) == ["ct129"] and not stats["dark"], stats
    # ... and what ansible-runner keeps on disk for AWX: the events, the status, the exit code.
    artifacts = job / "artifacts" / run.config.ident
    assert (artifacts / "status").read_text() == "failed" and (artifacts / "rc").read_text() == "2"
    assert len(list((artifacts / "job_events").glob("*.json"))) == len(events)

    # rollback.yml as a job too: ct200 back on NEXTN, ct129 (serving it, healthy) left alone.
    back = ansible_runner.run(private_data_dir=str(job), playbook="playbooks/rollback.yml", inventory=LAB_INVENTORY,
                              limit="ct129,ct200", quiet=True, timeout=600)
    events = list(back.events)
    assert (back.status, back.rc) == ("successful", 0), "".join(e.get("stdout", "") + "\n" for e in events)[-4000:]
    outcomes = next(e for e in events if e["event"] == "playbook_on_stats")["event_data"]["artifact_data"][
        "sglang_outcomes"]
    assert [(h, outcomes[h]["outcome"], outcomes[h]["after"]) for h in sorted(outcomes)] == [
        ("ct129", "left_alone", "nextn"), ("ct200", "restored", "nextn")], outcomes
