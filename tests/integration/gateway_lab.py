"""The real SGLang Model Gateway (smg, PyPI) on the controller, in front of lab hosts on the
lab network, and a bounded load through it: shared by tests/integration/test_gateway.py and
the bench's gateway row."""
from __future__ import annotations

import http.client
import json
import math
import subprocess
import threading
import time
import urllib.request
from contextlib import contextmanager

from tests.integration.ansible_run import BIN
from tests.integration.labhost import labctl

# Below the kernel's ephemeral range (32768-60999): polling a port in it on our own address
# before smg listens can connect the socket to itself (TCP simultaneous open), and the poll
# reads its own request back as the answer.
PORT = 31000
# Each gateway of the tests listens on its own port and the next (its metrics), for the tests run
# side by side on one address: test_gateway's PORT and PORT + 6 (retries on), test_server_group's
# PORT + 2, test_watch's PORT + 4.
CONCURRENCY = 8
TOKENS = 24
LOAD_LIMIT_S = 300   # a load never outlives a stuck deploy by more than this (unless it is given longer)


def percentile(values, share):
    """The nearest-rank percentile of `values` (None without any)."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.ceil(share * len(ordered))) - 1]


class Load:
    """CONCURRENCY streaming /generate requests at a time through the gateway, until stopped;
    each request's start, latency and error are kept."""

    def __init__(self, url, settle=1.0, limit=LOAD_LIMIT_S, prompt="the incident"):
        self.url, self.settle, self.limit, self.stop = url, settle, limit, threading.Event()
        self.prompt = prompt   # (a row may change it while the load runs: the traffic turns)
        self.requests, self.lock = [], threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _number in range(CONCURRENCY)]

    @property
    def sent(self):
        return len(self.requests)

    @property
    def failed(self):
        return sum(1 for request in self.requests if request["error"])

    @property
    def errors(self):
        return [request["error"] for request in self.requests if request["error"]]

    def failed_after(self, epoch):
        """The failed requests sent after `epoch` (the time.time() of an event on a lab host)."""
        return [request["error"] for request in self.requests if request["error"] and request["began"] > epoch]

    def latencies(self):
        """p50 and p95 of the requests that completed, in seconds."""
        done = [request["latency"] for request in self.requests if not request["error"]]
        return {"p50": percentile(done, 0.50), "p95": percentile(done, 0.95)}

    def one(self):
        body = json.dumps({"text": self.prompt, "sampling_params": {"max_new_tokens": TOKENS}, "stream": True}).encode()
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
        deadline = time.monotonic() + self.limit
        while not self.stop.is_set() and time.monotonic() < deadline:
            began, started = time.time(), time.monotonic()
            try:
                self.one()
                error = None
            except Exception as exc:  # pylint: disable=broad-except
                error = str(exc) or type(exc).__name__
            with self.lock:
                self.requests.append({"began": began, "latency": time.monotonic() - started, "error": error})

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        time.sleep(self.settle)   # the load runs before the deploy starts
        return self

    def __exit__(self, *exc):
        time.sleep(self.settle)   # and after it ended
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=40)
        print("load through the gateway: sent %d, failed %d" % (self.sent, self.failed))


def workers(gateway):
    """The gateway's workers: url -> (is_healthy, status)."""
    with urllib.request.urlopen(gateway + "/workers", timeout=5) as resp:
        return dict((w["url"], (w["is_healthy"], w["status"])) for w in json.load(resp)["workers"])


def all_ready(gateway, count):
    return sorted(workers(gateway).values()) == [(True, "ready")] * count


def host_inventory(hosts, gateway=None, drain_timeout=60):
    """An inventory that puts the hosts in their class's group, on their lab addresses,
    without an API key (smg sends none), and with `gateway` behind it:
    {host: (address, class)} -> the inventory as JSON text."""
    classes = {}
    for host, (address, host_class) in hosts.items():
        entry = {"sglang_service_host": "0.0.0.0", "sglang_service_api_key": ""}
        if gateway:
            entry["sglang_gateway"] = {"url": gateway, "worker_url": "http://%s:30000" % address,
                                       "drain_timeout": drain_timeout}
        classes.setdefault(host_class, {"hosts": {}})["hosts"][host] = entry
    return json.dumps({"sglang_hosts": {"children": classes}})


def group_inventory(hosts, nodes, name, gateway=None, tp_size=16):
    """host_inventory's hosts, with `nodes` (rank 0 first) one server group `name` whose ranks
    meet at rank 0's lab address: the inventory as JSON text."""
    data = json.loads(host_inventory(hosts, gateway=gateway))
    data["sglang_hosts"]["children"][name] = {
        "hosts": dict((node, {}) for node in nodes),
        "vars": {"sglang_server_group": name, "sglang_dist_init_addr": "%s:29500" % hosts[nodes[0]][0],
                 "sglang_envelope_overrides": {"tp_size": tp_size}}}
    return json.dumps(data)


@contextmanager
def gateway(addresses, log_path, port=PORT, retries=False):
    """smg on the controller's lab address (`port`, and the next for its metrics), round robin
    over the hosts' workers, its retries off (a request a restart cuts shows as failed) unless
    `retries` (smg's default, as an operator runs it); yields its URL once it routes to all."""
    gateway_ip = labctl("address").stdout.split()[3]
    url = "http://%s:%d" % (gateway_ip, port)
    with open(log_path, "w") as log:
        smg = subprocess.Popen([str(BIN / "smg"), "launch", "--host", gateway_ip, "--port", str(port), "--policy",
                                "round_robin", *([] if retries else ["--disable-retries"]), "--log-level", "warn",
                                "--prometheus-host", gateway_ip,
                                "--prometheus-port", str(port + 1), "--worker-urls",
                                *("http://%s:30000" % a for a in addresses.values())],
                               stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and smg.poll() is None:
                try:
                    if all_ready(url, len(addresses)):
                        break
                except (OSError, http.client.HTTPException):
                    pass    # not listening yet
                time.sleep(0.5)
            else:
                raise AssertionError("smg did not route to every worker: %s" % open(log_path).read()[-2000:])
            yield url
        finally:
            smg.terminate()
            smg.wait(timeout=20)
