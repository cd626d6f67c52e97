"""A deploy run as AWX runs a job: ansible_runner.run() from a private data directory laid out
as AWX lays it out (a project of the user's that imports the collection's playbooks,
env/envvars, env/extravars, env/ssh_key, the inventory), inside the collection's execution
environment (lab/eectl.py: built by ansible-builder from lab/execution-environment/) with
process isolation, as an execution node runs it: the EE's container on the lab network
reaches the hosts over SSH at their addresses, with the job's key in its ssh-agent.

DDTree on ct129 (a6000: it rolls back, kv_pool_oom) and ct200 (Blackwell: kept). The job's event
stream has each host's health gate, read by one fork after the other, its artifacts (set_stats data, which AWX keeps and a workflow
branches on) say how each host ended, the fleet summary callback enabled by the project's
ansible.cfg printed its table, and its status is failed because the a6000 canary rolled back.
Then two job slices, each given that job's artifacts as an AWX workflow passes them on
(sglang_canary_outcomes): a second a6000 host is skipped, its class canary having rolled back,
and the Blackwell host follows its canary. Then rollback.yml as a job of its own, its artifacts
saying what each host serves."""
from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys

import ansible_runner
import pytest

from lab.labctl import ssh_key
from tests.integration.ansible_run import REPO, run_playbook
from tests.integration.deploying import reset_service
from tests.integration.labhost import ENV, PREFIX, LabHost, labctl

GATE = "Gate on health"
# Where the EE has the collection (ansible-galaxy's default path in an EE).
COLLECTION = "/usr/share/ansible/collections/ansible_collections/inferops/sglang"
# A user's AWX project: its own ansible.cfg (the collection's callbacks enabled, as on a
# controller) and playbooks that import the collection's.
PROJECT_CFG = """[defaults]
callbacks_enabled = inferops.sglang.fleet_summary, inferops.sglang.interrupt
gathering = explicit
inject_facts_as_vars = False
interpreter_python = auto_silent

[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=auto -o ControlPersist=120s
"""


@pytest.fixture(scope="module")
def ee_image():
    """The collection's EE for this checkout (built unless the cached one has the same inputs)."""
    proc = subprocess.run([sys.executable, str(REPO / "lab" / "eectl.py"), "build"], env=ENV,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["image"]


@pytest.fixture
def on_nextn(lab):
    """Both hosts serving NEXTN (a host that already does is left as it is: the deploy converges),
    and ct130, a second a6000 host with no service (a job slice's)."""
    labctl("up", "ct130:a6000")
    proc = run_playbook("playbooks/deploy_nextn.yml", limit="ct129,ct200", extra_vars={"sglang_serial": 0})
    if proc.returncode != 0:   # whatever an earlier test left: from no service at all
        for host in lab.values():
            reset_service(host)
        proc = run_playbook("playbooks/deploy_nextn.yml", limit="ct129,ct200", extra_vars={"sglang_serial": 0})
    assert proc.returncode == 0, proc.stdout[-3000:]
    yield lab
    labctl("down", "ct130")


def private_data_dir(top):
    """The job's folder as AWX prepares it: the project, the inventory (the lab's group
    variables, the hosts at their addresses), the environment, the extra vars, the key."""
    job = top / "job"
    (job / "env").mkdir(parents=True)
    (job / "project").mkdir()
    (job / "project" / "ansible.cfg").write_text(PROJECT_CFG)
    for name in ("deploy_ddtree", "rollback"):
        (job / "project" / ("%s.yml" % name)).write_text(
            "---\n- name: The collection's %s\n  ansible.builtin.import_playbook: inferops.sglang.%s\n" % (name, name))
    shutil.copytree(REPO / "inventory" / "lab" / "group_vars", job / "inventory" / "group_vars")
    (job / "inventory" / "hosts.yml").write_text(labctl("inventory", "--network").stdout)
    envvars = {"ANSIBLE_NOCOLOR": "1", "INFEROPS_WHEELHOUSE": "/wheelhouse",
               "INFEROPS_PATCH_DIR": COLLECTION + "/files/patches/sglang-0.5.23-ddtree",
               "INFEROPS_LAB_SETTLE": ENV["INFEROPS_LAB_SETTLE"]}
    (job / "env" / "envvars").write_text(json.dumps(envvars))
    # (A configuration that rolled back before on a host is retried: each run of this test gates it.)
    (job / "env" / "extravars").write_text(json.dumps({"sglang_serial": 0, "sglang_retry_rolled_back": True}))
    # (The job's machine credential: ansible-runner puts it in the EE's ssh-agent.)
    (job / "env" / "ssh_key").write_text(ssh_key().read_text())
    return job


def in_the_ee(job, image, playbook, timeout, limit="ct129,ct200", extravars=None):
    """A job in the EE, as an execution node runs it: podman, the container on the lab network
    (root runs podman here: --user=0 is what AWX's --userns=keep-id gives a rootless node)."""
    extravars = dict(json.loads((job / "env" / "extravars").read_text()), **(extravars or {}))
    return ansible_runner.run(
        private_data_dir=str(job), playbook=playbook, limit=limit, extravars=extravars, quiet=True, timeout=timeout,
        process_isolation=True, process_isolation_executable="podman", container_image=image,
        container_options=["--network=%snet" % PREFIX, "--user=0"],
        container_volume_mounts=["%s:/wheelhouse:ro" % ENV.get("INFEROPS_WHEELHOUSE", REPO / "build" / "wheelhouse")])


def test_a_deploy_run_by_ansible_runner_in_the_ee_has_its_gates_in_the_events_and_each_host_in_the_artifacts(
        on_nextn, ee_image, tmp_path):
    job = private_data_dir(tmp_path)
    run = in_the_ee(job, ee_image, "deploy_ddtree.yml", 900)
    events = list(run.events)
    said = "".join(e.get("stdout", "") + "\n" for e in events)[-4000:]
    assert (run.status, run.rc) == ("failed", 2), said

    # Each host's health gate, as the events AWX shows: ct200 healthy, ct129 failed with its cause.
    gates = dict((e["event_data"]["host"], e) for e in events if e.get("event_data", {}).get("task") == GATE
                 and e["event"].startswith("runner_on_"))
    assert sorted(gates) == ["ct129", "ct200"], said
    assert gates["ct200"]["event"] == "runner_on_ok" and gates["ct200"]["event_data"]["res"]["state"] == "healthy"
    assert gates["ct129"]["event_data"]["res"]["cause"] == "kv_pool_oom"
    # One fork read both verdicts (sglang_service_wait_forks: 1, the default): the second host's
    # wait began only after the first's had run its whole length, while both gates ran on their hosts.
    first, second = sorted((gates[h]["event_data"] for h in gates), key=lambda data: data["start"])
    gap = (datetime.datetime.fromisoformat(second["start"]) - datetime.datetime.fromisoformat(first["start"]))
    assert gap.total_seconds() >= first["res"]["elapsed"] - 0.05 > 0, (first, second)
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
    # The fleet summary callback ran in the EE (the project's ansible.cfg enables it).
    assert any(line.startswith("ct200 ") and " deployed " in line for line in said.splitlines()), said
    # ... and what ansible-runner keeps on disk for AWX: the events, the status, the exit code.
    artifacts = job / "artifacts" / run.config.ident
    assert (artifacts / "status").read_text() == "failed" and (artifacts / "rc").read_text() == "2"
    assert len(list((artifacts / "job_events").glob("*.json"))) == len(events)
    # (It ran in the EE: podman ran the image, on the lab network.)
    command = json.loads((artifacts / "command").read_text())["command"]
    assert command[:2] == ["podman", "run"] and ee_image in command, command

    # Job slices after the canaries' job, as an AWX workflow runs them: each slice sees only its
    # hosts and gets that job's artifacts (sglang_canary_outcomes). A6000's ct130 is skipped, as its
    # class canary (ct129, not in the slice) rolled back; Blackwell's ct200 follows its canary's DDTREE.
    slices = (("ct200", ("unchanged", None, "ddtree")),
              ("ct130", ("skipped", "class canary rolled back (kv_pool_oom)", None)))
    for slice_, (outcome, cause, after) in slices:
        sliced = in_the_ee(job, ee_image, "deploy_ddtree.yml", 600, limit=slice_,
                           extravars={"sglang_canary_outcomes": outcomes})
        events = list(sliced.events)
        said = "".join(e.get("stdout", "") + "\n" for e in events)[-4000:]
        assert (sliced.status, sliced.rc) == ("successful", 0), said
        row = next(e for e in events if e["event"] == "playbook_on_stats")["event_data"]["artifact_data"][
            "sglang_outcomes"][slice_]
        assert (row["outcome"], row["cause"], row["after"]) == (outcome, cause, after), row
    assert json.loads(on_nextn["ct200"].run("cat /etc/sglang/deployed.json").stdout)["variant"] == "ddtree"
    assert LabHost("ct130").run("test -e /etc/systemd/system/sglang.service", check=False).returncode != 0, "untouched"

    # rollback.yml as a job too: ct200 back on NEXTN, ct129 (serving it, healthy) left alone.
    back = in_the_ee(job, ee_image, "rollback.yml", 600)
    events = list(back.events)
    assert (back.status, back.rc) == ("successful", 0), "".join(e.get("stdout", "") + "\n" for e in events)[-4000:]
    outcomes = next(e for e in events if e["event"] == "playbook_on_stats")["event_data"]["artifact_data"][
        "sglang_outcomes"]
    assert [(h, outcomes[h]["outcome"], outcomes[h]["after"]) for h in sorted(outcomes)] == [
        ("ct129", "left_alone", "nextn"), ("ct200", "restored", "nextn")], outcomes
