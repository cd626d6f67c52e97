"""Zero failed requests while hosts behind the real SGLang Model Gateway (smg, PyPI) change
variant: the deploy takes each worker out of the gateway's rotation, waits for its requests
in flight to finish (read from the worker's /v1/loads), restarts, gates, and puts it back.
The gateway runs on the controller, on the lab network, with its own retries off, in front
of ct129 and ct130 (a6000) and ct200 (blackwell); a bounded load (8 streams, through the
gateway, lab addresses only) runs for as long as each deploy takes. DDTree with its canary
per class rolls back on ct129, leaves ct130 untouched and in rotation, and is kept on ct200.
The control, the same kind of switch without the gateway option, shows that the load sees
the failures a restart causes. An operator's rollback (playbooks/rollback.yml) drains too.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
import time

import pytest

from tests.integration.ansible_run import (
    BIN, LAB_INVENTORY, REPO, _env, kill_run, run_module, run_playbook, ssh_vars_inventory,
)
from tests.integration.deploying import (
    CRASH_FILE, crash_after_the_kill, invocation, main_process_exited, report, reset_service, wait_for_the_guard,
    watch_restored)
from tests.integration.gateway_lab import PORT, Load, all_ready, gateway, host_inventory
from tests.integration.labhost import REPORTS, LabHost, labctl

pytestmark = pytest.mark.xdist_group("gateway")

CLASSES = {"ct129": "a6000", "ct130": "a6000", "ct200": "blackwell"}


@pytest.fixture(scope="module")
def fleet(lab, tmp_path_factory):
    """ct129, ct130 and ct200 on NEXTN, listening on their lab addresses, behind smg on the controller."""
    labctl("up", "ct130:a6000")
    hosts = dict(lab, ct130=LabHost("ct130"))
    addresses = dict((name, labctl("address", name).stdout.strip()) for name in CLASSES)
    folder = tmp_path_factory.mktemp("gateway")
    placed = dict((name, (addresses[name], CLASSES[name])) for name in CLASSES)
    inventories = {"plain": folder / "plain.yml", "gateway": folder / "gateway.yml"}
    inventories["plain"].write_text(host_inventory(placed))
    for host in hosts.values():
        reset_service(host)
    proc = run_playbook("playbooks/deploy_nextn.yml", limit=",".join(CLASSES), extra_vars={"sglang_serial": 0},
                        inventory=(LAB_INVENTORY, str(inventories["plain"])))
    assert proc.returncode == 0, proc.stdout[-3000:]
    try:
        with gateway(addresses, folder / "smg.log") as url:
            inventories["gateway"].write_text(host_inventory(placed, gateway=url))
            yield {"gateway": url, "inventories": inventories, "hosts": hosts, "addresses": addresses,
                   "placed": placed, "folder": folder}
    finally:
        for host in hosts.values():
            reset_service(host)
        labctl("down", "ct130")


class Background:
    """A playbook run in the background whose output can be read as it comes, and killed as the
    death of its machine would (ansible-playbook and every process it started)."""

    def __init__(self, cmd):
        self.out = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=_env({"ANSIBLE_STDOUT_CALLBACK": "default"}), stdout=self.out,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def lines(self):
        self.out.seek(0)
        return self.out.read()

    def kill(self):
        kill_run(self.proc.pid)
        self.proc.wait()


def start_through(fleet, inventory, playbook, limit, **extra):
    sources = (LAB_INVENTORY, str(fleet["inventories"][inventory]), ssh_vars_inventory())
    return Background([str(BIN / "ansible-playbook"), *(a for src in sources for a in ("-i", src)),
                       "playbooks/%s.yml" % playbook, "-l", limit, "-e", json.dumps(extra)])


def deploy_through(fleet, inventory, playbook, limit, **extra):
    return run_playbook("playbooks/%s.yml" % playbook, limit=limit,
                        inventory=(LAB_INVENTORY, str(fleet["inventories"][inventory])), extra_vars=extra or None)


def test_a_switch_and_a_canary_rollout_behind_the_gateway_fail_no_request_and_without_the_drain_some_fail(fleet):
    """One test, so the fleet behind the gateway is set up once (under pytest-xdist a module's
    fixtures may be set up again between its tests)."""
    ct129, ct130, ct200 = (fleet["hosts"][name] for name in ("ct129", "ct130", "ct200"))
    # A variant switch, drained through the gateway: no request fails.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "deploy", "ct200", sglang_variant="dflash")
    assert proc.returncode == 0 and report(ct200)["outcome"] == "deployed", proc.stdout[-3000:]
    assert load.failed == 0 and load.sent > 20, (load.sent, load.failed, load.errors[:3])
    drained = report(ct200)["gateway"]["drained"]
    assert drained["cut"] == 0 and "out of rotation, 0 requests in flight after" in drained["msg"], drained
    assert report(ct200)["gateway"]["rejoined"]["msg"].endswith("back in rotation")
    assert all_ready(fleet["gateway"], 3), "every host back behind the gateway"

    # DDTree with a canary per class, drained: the a6000 canary rolls back (its known-good
    # goes back into rotation), the other a6000 is not touched, blackwell keeps DDTree.
    untouched = invocation(ct130)
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "deploy_ddtree", "ct129,ct130,ct200", sglang_check_fit=False)
    assert load.failed == 0, (load.sent, load.failed, load.errors[:3])
    back, skipped, kept = report(ct129), report(ct130), report(ct200)
    assert back["outcome"] == "rolled_back" and back["cause"] == "kv_pool_oom", back["diagnosis"]
    assert proc.returncode != 0, "the canary's rollback fails the run once the other classes are done"
    # (Put back by the host's guard, whose restore the rollback is.)
    assert "back in rotation" in back["gateway"]["rejoined"]["msg"], back["gateway"]
    assert (skipped["outcome"], skipped["cause"]) == ("skipped", "class canary rolled back (kv_pool_oom)"), skipped
    assert invocation(ct130) == untouched and "gateway" not in skipped, "never drained, never restarted"
    assert kept["outcome"] == "deployed" and kept["perf"]["ratio"] >= 1.0, kept["diagnosis"]
    assert all_ready(fleet["gateway"], 3)
    summary = json.loads((REPORTS / "fleet-summary.json").read_text())["hosts"]
    assert [(h["host"], h["class"], h["before"], h["after"], h["outcome"]) for h in summary] == [
        ("ct129", "a6000", "nextn", "nextn", "rolled_back"), ("ct130", "a6000", "nextn", "nextn", "skipped"),
        ("ct200", "blackwell", "dflash", "ddtree", "deployed")], summary
    assert "class canary rolled back (kv_pool_oom)" in proc.stdout and "SGLANG FLEET SUMMARY (3 hosts" in proc.stdout

    # An operator's rollback (playbooks/rollback.yml) drains the same way; ct200's known-good
    # is the DFLASH it ran before DDTree.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "rollback", "ct200")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert load.failed == 0, (load.sent, load.failed, load.errors[:3])
    assert "# variant dflash," in ct200.run(["cat", "/etc/systemd/system/sglang.service"]).stdout
    assert all_ready(fleet["gateway"], 3)

    # A worker that does not say what it has in flight (a path where it answers 404, as an SGLang
    # without /v1/loads does): the drain waits the whole drain_timeout, and says why; nothing is
    # claimed drained.
    blind = run_module("localhost", "inferops.sglang.sglang_gateway", {
        "url": fleet["gateway"], "worker_url": "http://%s:30000/older" % fleet["addresses"]["ct200"],
        "state": "absent", "drain_timeout": 2})
    assert blind["in_flight"] is None and blind["cut"] is None and blind["drained_in"] >= 2, blind
    assert "did not say what it has in flight" in blind["msg"] and "HTTP 404" in blind["msg"], blind["msg"]
    assert all_ready(fleet["gateway"], 3), "a worker the gateway does not list was not taken out"

    # The control, the same kind of switch without the gateway option: the load would see a
    # failure if there were one.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "plain", "deploy_nextn", "ct200")
    assert proc.returncode == 0 and report(ct200)["outcome"] == "deployed", proc.stdout[-3000:]
    assert load.failed > 0, (load.sent, load.failed)

    # The controller killed while the gate waits (a 12 s settle window) on a DDTREE that crashes
    # once it is dead, the worker drained: the host restores NEXTN by itself and puts the worker
    # back behind the gateway.
    ct200.put("/etc/inferops-lab/faults.json", json.dumps({"crash_when_file": CRASH_FILE, "only_algorithm": "DDTREE"}))
    killed = start_through(fleet, "gateway", "deploy_ddtree", "ct200", sglang_service_health_timeout=1800,
                           sglang_service_health_settle=12,
                           sglang_retry_rolled_back=True)
    try:
        ct200.wait_for(lambda: "TASK [inferops.sglang.sglang_service : Gate on health]" in killed.lines(), 300, 0.2,
                       "the health gate")
        killed.kill()
        crash_after_the_kill(ct200)
        result = wait_for_the_guard(ct200, 120)
    finally:
        killed.kill()
        ct200.run("rm -f /etc/inferops-lab/faults.json " + CRASH_FILE)
    assert result["healthy"] and result["rejoined"] == "http://%s:30000" % fleet["addresses"]["ct200"], result
    ct200.wait_for(lambda: all_ready(fleet["gateway"], 3), 60, 0.5, "the worker back in rotation")

    # The host's watch behind a gateway run as an operator runs it (smg's own retries on): DDTREE,
    # watched, crashes minutes into serving under the load. The watch takes the worker out of
    # rotation, restores NEXTN and puts it back; no request fails but those in flight on the dying
    # server (sent before its main process exited).
    watched_behind_a_retrying_gateway(fleet, ct200)


def watched_behind_a_retrying_gateway(fleet, host):
    with gateway(fleet["addresses"], fleet["folder"] / "smg-retries.log", port=PORT + 6, retries=True) as url:
        fleet["inventories"]["retries"] = fleet["folder"] / "retries.yml"
        fleet["inventories"]["retries"].write_text(host_inventory(fleet["placed"], gateway=url))
        host.put("/etc/inferops-lab/faults.json", json.dumps({"crash_when_file": CRASH_FILE, "only_algorithm": "DDTREE"}))
        try:
            with Load(url) as load:
                proc = deploy_through(fleet, "retries", "deploy_ddtree", host.name, sglang_retry_rolled_back=True,
                                      sglang_watch_duration=600, sglang_watch_interval=2)
                assert proc.returncode == 0 and report(host)["watching_until"], proc.stdout[-3000:]
                crashed_at = time.time()
                host.put(CRASH_FILE, "")
                result = host.wait_for(lambda: watch_restored(host), 120, 0.5, "the watch's restore")
                host.wait_for(lambda: all_ready(url, 3), 60, 0.5, "the worker back in rotation")
        finally:
            host.run("rm -f /etc/inferops-lab/faults.json " + CRASH_FILE)
    assert result["healthy"] and result["restored"] == "nextn" and result["rejoined"], result
    died = main_process_exited(host, crashed_at - 1)
    assert died, "the journal says when DDTREE's main process exited"
    late = load.failed_after(died)
    print("\nthe watch behind smg (retries on): sent %d, failed %d, of them after the server died %d; "
          "named in %.1f s, NEXTN back in rotation in %.1f s" % (
              load.sent, load.failed, len(late), result["time"] - crashed_at,
              result["time"] + result["seconds"] - crashed_at))
    with open(REPO / "build" / "watch-rows.tsv", "a") as table:
        table.write("a crash behind smg (retries on): sent %d, failed %d, after the death %d\t%s\t%.1f\t%.1f\n" % (
            load.sent, load.failed, len(late), result["breach"]["cause"], result["time"] - crashed_at,
            result["time"] + result["seconds"] - crashed_at))
    assert not late and load.sent > 20, (load.sent, load.failed, late[:3])
