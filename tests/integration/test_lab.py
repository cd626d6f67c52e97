"""The lab itself: hosts boot real systemd, lab-up is idempotent, lab-down is selective,
and a unit that dies after start shows exactly the failure shape the collection exists for."""
from __future__ import annotations

import ipaddress
import json
import subprocess
import time
from datetime import datetime

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.journal import journal_command
from tests.integration.ansible_run import BIN, LAB_INVENTORY, REPO, _env, run_playbook
from tests.integration.conftest import container_ids
from tests.integration.labhost import ENV, LABCTL, PREFIX, WORKER, LabHost, labctl, podman

# A lab host must reach "running" (or "degraded") within this after `podman run`: a guard
# against a hung boot, not a speed goal (beside molecule on two cores one more container's
# systemd can take tens of seconds).
BOOT_BOUND_S = 60.0

DIES_UNIT = """[Unit]
Description=stand-in for an SGLang server that dies while sizing its memory pool
[Service]
Type=simple
ExecStart=/bin/sh -c 'echo Load weight end.; sleep 2; echo "Not enough memory. Please try to increase --mem-fraction-static." >&2; exit 1'
"""


@pytest.mark.parametrize("name", ["ct129", "ct200"])
def test_hosts_run_systemd_as_pid1(lab, name):
    host = lab[name]
    state = host.run(["systemctl", "is-system-running"], check=False).stdout.strip()
    assert state in ("running", "degraded"), host.run("systemctl --failed --no-pager").stdout
    assert host.run(["cat", "/proc/1/comm"]).stdout.strip() == "systemd"
    assert host.run(["hostname"]).stdout.strip() == name


def test_each_host_has_its_own_machine_id(lab):
    ids = {lab[n].run(["cat", "/etc/machine-id"]).stdout.strip() for n in lab}
    assert len(ids) == len(lab)


def test_extra_host_boots_within_bound_and_lab_up_is_idempotent(lab):
    extra = LabHost("ctx901")
    started = time.monotonic()
    labctl("up", "ct129:a6000", "ct200:blackwell", "ctx901:blackwell")
    boot_s = time.monotonic() - started
    try:
        assert boot_s < BOOT_BOUND_S, "booting one more host took %.1fs" % boot_s
        assert extra.run(["systemctl", "is-system-running"], check=False).stdout.strip() in (
            "running", "degraded")
        assert extra.gpus()["host_class"] == "blackwell"
        before = container_ids()
        labctl("up", "ct129:a6000", "ct200:blackwell", "ctx901:blackwell")
        assert container_ids() == before, "a second lab-up must keep the same containers"
    finally:
        podman("rm", "-f", "-t", "0", extra.container, check=False)


@pytest.mark.parametrize("down", [["down"], ["down", "--matching", PREFIX + "down-"]],
                         ids=["its own set", "the sets matching a prefix (make integration's)"])
def test_lab_down_removes_only_its_own_sets_lab_containers(lab, down):
    """`down` in a set of its own (so this worker's hosts, and their releases, are kept), and
    `down --matching` a prefix only that set has: either removes that set's hosts, and neither
    a container without the lab's label nor another set's hosts (this worker's, standing for
    a person's demo hosts)."""
    image = podman("inspect", "--format", "{{.ImageName}}", lab["ct129"].container).stdout.strip()
    bystander = "not-inferops-bystander" + WORKER
    other = dict(ENV, INFEROPS_LAB_PREFIX=PREFIX + "down-")
    podman("rm", "-f", "-t", "0", bystander, check=False)
    podman("run", "-d", "--name", bystander, "--network=none", image, "sleep", "300")
    try:
        subprocess.run([*LABCTL, "up", "ct901:a6000"], env=other, check=True, capture_output=True)
        ours = container_ids()
        assert set(ours) == {host.container for host in lab.values()}
        out = subprocess.run([*LABCTL, *down], env=other, check=True, capture_output=True, text=True).stdout
        assert out.strip() == "lab: removed 1 container(s): %sdown-ct901" % PREFIX, out
        everything = container_ids(label_only=False)
        assert bystander in everything and PREFIX + "down-ct901" not in everything
        assert container_ids() == ours, "this worker's hosts are untouched"
        assert podman("network", "exists", PREFIX + "down-net", check=False).returncode == 1, "its network went too"
        assert podman("network", "exists", PREFIX + "net", check=False).returncode == 0
    finally:
        # --ignore: without it podman 4.3 removes none of the names when one is already gone.
        podman("rm", "-f", "--ignore", "-t", "0", bystander, PREFIX + "down-ct901", check=False)


def test_the_lab_network_is_internal_in_the_benchmarking_range_and_joins_hosts_and_controller(lab):
    """Its hosts reach each other over the set's network, the controller (its gateway)
    reaches them, and nothing else: --internal, on a /24 of 198.18.0.0/15."""
    net = json.loads(podman("network", "inspect", PREFIX + "net").stdout)[0]
    subnet = ipaddress.ip_network(net["subnets"][0]["subnet"])
    assert net["internal"] is True and subnet.subnet_of(ipaddress.ip_network("198.18.0.0/15")), net
    addresses = dict((name, labctl("address", name).stdout.strip()) for name in lab)
    assert all(ipaddress.ip_address(a) in subnet for a in addresses.values()), addresses
    assert labctl("address").stdout.split() == [PREFIX + "net", str(subnet), "controller", net["subnets"][0]["gateway"]]
    server = lab["ct129"]
    server.run("systemd-run --unit lab-net-probe --collect python3 -m http.server 38090 --bind %s" % addresses["ct129"])
    try:
        url = "http://%s:38090/" % addresses["ct129"]
        fetch = ["python3", "-c", "import urllib.request as u; print(u.urlopen(%r, timeout=5).status)" % url]
        server.wait_for(lambda: lab["ct200"].run(fetch, check=False).stdout.strip() == "200", 20,
                        what="ct200 to reach ct129 over the lab network")
        assert subprocess.run(fetch, capture_output=True, text=True, check=False).stdout.strip() == "200", \
            "the controller reaches the host"
        outside = ["python3", "-c", "import socket; socket.create_connection(('192.0.2.1', 80), 2)"]
        assert lab["ct200"].run(outside, check=False).returncode != 0, "no way out"
    finally:
        server.run("systemctl stop lab-net-probe", check=False)


def test_hosts_are_reached_over_ssh_one_connection_per_host(lab, tmp_path):
    """`labctl inventory --ssh`: production's connection (ssh, ControlPersist); every task after
    the first rides the same connection, so two raw tasks share one sshd session process."""
    inventory = tmp_path / "ssh.yml"
    inventory.write_text(labctl("inventory", "--ssh").stdout)
    playbook = tmp_path / "twice.yml"
    playbook.write_text("- hosts: ct129,ct200\n  gather_facts: false\n  tasks:\n"
                        "    - {ansible.builtin.raw: 'echo $(hostname) $PPID', changed_when: false}\n"
                        "    - {ansible.builtin.raw: 'echo $(hostname) $PPID', changed_when: false}\n")
    proc = run_playbook(str(playbook), json_output=True, inventory=(LAB_INVENTORY, str(inventory)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    first, second = (task["hosts"] for task in json.loads(proc.stdout)["plays"][0]["tasks"])
    for name in ("ct129", "ct200"):
        host1, ppid1 = first[name]["stdout"].split()
        host2, ppid2 = second[name]["stdout"].split()
        assert host1 == host2 == name
        assert ppid1 == ppid2, "the second task opened a new connection to %s: %s, %s" % (name, ppid1, ppid2)
        assert "sshd" in LabHost(name).run(["ps", "-o", "args=", "-p", ppid1]).stdout


def test_unit_that_dies_after_start_looks_active_then_failed(ct129):
    """`systemctl start` says active; two seconds later the unit is failed and the
    journal holds the line: what an operator sees on a real host today."""
    ct129.put("/etc/systemd/system/lab-dies.service", DIES_UNIT)
    ct129.run("systemctl daemon-reload && systemctl reset-failed lab-dies.service 2>/dev/null; true")
    ct129.run(["systemctl", "start", "lab-dies.service"])
    assert ct129.run(["systemctl", "is-active", "lab-dies.service"], check=False).stdout.strip() == "active"

    def failed():
        props = ct129.show("lab-dies.service", "ActiveState", "SubState", "Result", "ExecMainStatus",
                           "InvocationID")
        return props if props["ActiveState"] == "failed" else None

    props = ct129.wait_for(failed, timeout=10, what="lab-dies.service to fail")
    assert props["Result"] == "exit-code" and props["ExecMainStatus"] == "1"
    assert props["InvocationID"]
    journal = ct129.journal("lab-dies.service")
    assert "Not enough memory. Please try to increase --mem-fraction-static." in journal
    assert "Failed with result 'exit-code'" in journal
    started = _stamp(journal, "Started lab-dies.service")
    failed_at = _stamp(journal, "Failed with result")
    # It died after systemd said active; the upper bound only keeps it the same invocation's death.
    assert 1.5 < (failed_at - started).total_seconds() < 15


def _stamp(journal: str, needle: str) -> datetime:
    line = next(line for line in journal.splitlines() if needle in line)
    return datetime.strptime(" ".join(line.split()[:3]), "%b %d %H:%M:%S.%f")


def test_fast_dying_process_lines_are_read_for_its_invocation(ct129):
    """journald sometimes cannot tag a process that died within milliseconds with its
    invocation; the reader's command must still return that invocation's lines."""
    ct129.put("/etc/systemd/system/lab-fastdie.service",
              '[Service]\nExecStart=/bin/sh -c "echo FASTLINE $$$$; exit 1"\n')
    ct129.run("systemctl daemon-reload")
    untagged = 0
    for attempt in range(40):
        ct129.run("systemctl reset-failed lab-fastdie 2>/dev/null; systemctl start lab-fastdie; sleep 0.2")
        props = ct129.show("lab-fastdie.service", "InvocationID", "ExecMainPID")
        tagged = ct129.run(["journalctl", "_SYSTEMD_INVOCATION_ID=" + props["InvocationID"], "-o", "cat"]).stdout
        untagged += "FASTLINE" not in tagged
        ours = ct129.run(journal_command(props["InvocationID"], unit="lab-fastdie.service",
                                         main_pid=int(props["ExecMainPID"]))).stdout
        assert ours.count("FASTLINE") == 1, "start %d: %s" % (attempt, ours)
    print("lines journald left untagged: %d/40" % untagged)


def test_a_stopped_lab_host_is_unreachable_over_podman_and_over_ssh(tmp_path):
    """As a production host that is down: UNREACHABLE, whether the lab reaches it with its podman
    connection or over SSH (`labctl inventory --ssh`), never a module output that does not parse."""
    prefix = PREFIX + "gone-"
    other = dict(ENV, INFEROPS_LAB_PREFIX=prefix)
    subprocess.run([*LABCTL, "up", "ct129:a6000"], env=other, check=True, capture_output=True)
    try:
        ssh = tmp_path / "ssh.yml"
        ssh.write_text(subprocess.run([*LABCTL, "inventory", "--ssh"], env=other, check=True, capture_output=True,
                                      text=True).stdout)
        podman("stop", "-t", "1", prefix + "ct129")
        for sources in ([LAB_INVENTORY], [LAB_INVENTORY, str(ssh)]):
            cmd = [str(BIN / "ansible"), "ct129", *(a for src in sources for a in ("-i", src)), "-m", "ansible.builtin.ping"]
            proc = subprocess.run(cmd, cwd=REPO, env=_env({"INFEROPS_LAB_PREFIX": prefix}), capture_output=True,
                                  text=True, check=False)
            said = proc.stdout + proc.stderr
            result = json.loads(proc.stdout)
            host = result["plays"][0]["tasks"][0]["hosts"]["ct129"]
            assert proc.returncode == 4 and result["stats"]["ct129"]["unreachable"] == 1, (sources, said[-2000:])
            assert host.get("unreachable") is True and "deserialization" not in said, host
    finally:
        subprocess.run([*LABCTL, "down"], env=other, check=False, capture_output=True)
