"""Zero failed requests while a host behind the real SGLang Model Gateway (smg, PyPI) changes
variant: the deploy takes the worker out of the gateway's rotation, waits for its requests in
flight to finish (read from the worker's /v1/loads), restarts, gates, and puts it back. The
gateway runs on the controller, on the lab network, with its own retries off, in front of
ct129 and ct200; a bounded load (8 streams, through the gateway, lab addresses only) runs for
as long as each deploy takes. The control, the same switch without the gateway option, shows
that the load sees the failures a restart causes.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.request

import pytest

from tests.integration.ansible_run import BIN, LAB_INVENTORY, run_playbook
from tests.integration.deploying import report, reset_service
from tests.integration.labhost import labctl

pytestmark = pytest.mark.xdist_group("gateway")

PORT = 38000
CONCURRENCY = 8
TOKENS = 24
LOAD_LIMIT_S = 300   # a load never outlives a stuck deploy by more than this


class Load:
    """CONCURRENCY streaming /generate requests at a time through the gateway, until stopped."""

    def __init__(self, url):
        self.url, self.stop, self.sent, self.failed, self.errors = url, threading.Event(), 0, 0, []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _number in range(CONCURRENCY)]

    def one(self):
        body = json.dumps({"text": "the incident", "sampling_params": {"max_new_tokens": TOKENS}, "stream": True}).encode()
        req = urllib.request.Request(self.url + "/generate", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
        # Complete when its last event holds all the tokens asked for (the gateway ends the
        # stream without SGLang's [DONE]).
        events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
        if not events or events[-1].get("meta_info", {}).get("completion_tokens") != TOKENS:
            raise RuntimeError("stream ended early (%d events, last %r): %r" % (
                len(events), events[-1].get("meta_info", {}).get("completion_tokens") if events else None, text[:300]))

    def run(self):
        deadline = time.monotonic() + LOAD_LIMIT_S
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                self.one()
                ok, error = True, None
            except Exception as exc:  # pylint: disable=broad-except
                ok, error = False, str(exc)
            with self.lock:
                self.sent += 1
                if not ok:
                    self.failed += 1
                    self.errors.append(error)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        time.sleep(1.0)   # the load runs before the deploy starts
        return self

    def __exit__(self, *exc):
        time.sleep(1.0)   # and after it ended
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=40)
        print("load through the gateway: sent %d, failed %d" % (self.sent, self.failed))


def workers(gateway):
    with urllib.request.urlopen(gateway + "/workers", timeout=5) as resp:
        return dict((w["url"], (w["is_healthy"], w["status"])) for w in json.load(resp)["workers"])


@pytest.fixture(scope="module")
def fleet(lab, tmp_path_factory):
    """ct129 and ct200 on NEXTN, listening on their lab addresses, behind smg on the controller."""
    gateway_ip = labctl("address").stdout.split()[3]
    gateway = "http://%s:%d" % (gateway_ip, PORT)
    addresses = dict((name, labctl("address", name).stdout.strip()) for name in lab)
    folder = tmp_path_factory.mktemp("gateway")
    plain = {"sglang_service_host": "0.0.0.0", "sglang_service_api_key": ""}
    inventories = {}
    for name, with_gateway in (("plain", False), ("gateway", True)):
        hosts = {}
        for host, address in addresses.items():
            hosts[host] = dict(plain, **({"sglang_gateway": {"url": gateway, "worker_url": "http://%s:30000" % address,
                                                             "drain_timeout": 60}} if with_gateway else {}))
        inventories[name] = folder / ("%s.yml" % name)
        inventories[name].write_text(json.dumps({"sglang_hosts": {"hosts": hosts}}))
    for host in lab.values():
        reset_service(host)
        proc = run_playbook("playbooks/deploy_nextn.yml", limit=host.name, inventory=(LAB_INVENTORY, str(inventories["plain"])))
        assert proc.returncode == 0, proc.stdout[-3000:]
    log = (folder / "smg.log").open("w")
    smg = subprocess.Popen([str(BIN / "smg"), "launch", "--host", gateway_ip, "--port", str(PORT), "--policy",
                            "round_robin", "--disable-retries", "--log-level", "warn", "--prometheus-host", gateway_ip,
                            "--prometheus-port", str(PORT + 1), "--worker-urls",
                            *("http://%s:30000" % a for a in addresses.values())], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and smg.poll() is None:
            try:
                if sorted(workers(gateway).values()) == [(True, "ready")] * len(addresses):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("smg did not route to both workers: %s" % (folder / "smg.log").read_text()[-2000:])
        yield {"gateway": gateway, "addresses": addresses, "inventories": inventories, "lab": lab}
    finally:
        smg.terminate()
        smg.wait(timeout=20)
        log.close()
        for host in lab.values():
            reset_service(host)


def deploy_through(fleet, inventory, playbook, host, **extra):
    return run_playbook("playbooks/%s.yml" % playbook, limit=host,
                        inventory=(LAB_INVENTORY, str(fleet["inventories"][inventory])), extra_vars=extra or None)


def test_a_switch_and_a_rollback_behind_the_gateway_fail_no_request_and_without_the_drain_some_fail(fleet):
    """One test, so the fleet behind the gateway is set up once (under pytest-xdist a module's
    fixtures may be set up again between its tests)."""
    ct200, ct129 = fleet["lab"]["ct200"], fleet["lab"]["ct129"]
    # A variant switch, drained through the gateway: no request fails.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "deploy", "ct200", sglang_variant="dflash")
    assert proc.returncode == 0 and report(ct200)["outcome"] == "deployed", proc.stdout[-3000:]
    assert load.failed == 0 and load.sent > 20, (load.sent, load.failed, load.errors[:3])
    drained = report(ct200)["gateway"]["drained"]
    assert drained["cut"] == 0 and "out of rotation, 0 requests in flight after" in drained["msg"], drained
    assert report(ct200)["gateway"]["rejoined"]["msg"].endswith("back in rotation")
    assert sorted(workers(fleet["gateway"]).values()) == [(True, "ready")] * 2, "both hosts back behind the gateway"

    # A rollback, drained: no request fails, and the known-good goes back into rotation.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "deploy_ddtree", "ct129", gpu_preflight_check_fit=False,
                              sglang_retry_rolled_back=True)
    rep = report(ct129)
    assert proc.returncode != 0 and rep["outcome"] == "rolled_back" and rep["cause"] == "kv_pool_oom", rep["diagnosis"]
    assert load.failed == 0, (load.sent, load.failed, load.errors[:3])
    assert rep["gateway"]["rejoined"]["msg"].endswith("back in rotation"), rep["gateway"]
    assert sorted(workers(fleet["gateway"]).values()) == [(True, "ready")] * 2

    # The control, the same kind of switch without the gateway option: the load would see a
    # failure if there were one.
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "plain", "deploy_nextn", "ct200")
    assert proc.returncode == 0 and report(ct200)["outcome"] == "deployed", proc.stdout[-3000:]
    assert load.failed > 0, (load.sent, load.failed)
