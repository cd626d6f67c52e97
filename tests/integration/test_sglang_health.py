"""sglang_health against real systemd units, journald and HTTP in the lab.

Each test starts a unit running a scripted server process; the module must notice what
systemd and the endpoint say, read that invocation's journal and name the cause.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.ansible_run import run_module, run_playbook

FILES = Path(__file__).parent / "files"
UNIT = "gate-test.service"
SERVER_ARGS = ("server_args={'model_path': '/models/Qwen3.6-27B', 'tp_size': 2, 'mem_fraction_static': 0.88, "
               "'context_length': 131072, 'max_running_requests': 16, 'cuda_graph_max_bs_decode': 16, "
               "'port': 30000}")
LOADED = ["Load weight begin. avail mem=47.21 GB", "Load weight end. elapsed=8.02 s, avail mem=21.40 GB"]
KV_OOM = ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
          "Current value: mem_fraction_static=0.88")
# systemd marks the unit failed; the gate must say so within this many seconds.
DETECTION_BOUND_S = 2.0


def start(host, cfg: dict, restart: str = "no", name: str = UNIT) -> None:
    host.put("/opt/gate-test/server.py", (FILES / "scripted_server.py").read_text())
    host.put("/opt/gate-test/%s.json" % name, json.dumps(cfg))
    host.put("/etc/systemd/system/" + name, (
        "[Unit]\nDescription=sglang_health test server\n[Service]\nType=simple\n"
        "ExecStart=/usr/bin/python3 /opt/gate-test/server.py /opt/gate-test/%s.json\n"
        "Restart=%s\nRestartSec=1\n") % (name, restart))
    host.run("systemctl stop %s; systemctl reset-failed %s 2>/dev/null; systemctl daemon-reload; "
             "systemctl start %s" % (name, name, name))


@pytest.fixture
def gate_host(ct129):
    """ct129 with port 30000 free for the scripted server: a deploy test that ran before on this
    worker may have left sglang.service serving there (the scripted server would then die at its
    bind, "Address already in use")."""
    ct129.run("systemctl stop sglang.service 2>/dev/null; true")
    yield ct129
    ct129.run("systemctl stop %s; systemctl reset-failed %s 2>/dev/null; true" % (UNIT, UNIT))


def journal_time(host, needle: str) -> float:
    out = host.run(["journalctl", "-u", UNIT, "-o", "short-unix", "--no-pager"]).stdout
    stamps = [float(line.split()[0]) for line in out.splitlines() if needle in line]
    assert stamps, "no journal line with %r:\n%s" % (needle, out[-2000:])
    return stamps[-1]


def test_healthy_once_endpoint_answers_200(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "ready_after": 5.0})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 60})
    assert res["state"] == "healthy", res.get("msg")
    assert not res.get("failed") and res["changed"] is False
    # The server answers 503 for its first 5 s; ansible's own start-up takes about 1 s of that.
    assert 2.0 <= res["elapsed"] < 20
    assert res["phase"] == "ready" and res["cause"] is None and res["http_status"] == 200
    assert res["ansible_facts"]["sglang_health"]["state"] == "healthy"


def test_kv_pool_oom_is_named_fast_with_hint_and_evidence(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "sleep": 2, "late_lines": [
        "Traceback (most recent call last):", KV_OOM,
        "Rank 0 scheduler died during initialization (exit code: 1).",
        "Received sigquit from a child process. It usually means the child failed."], "exit": 1})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 60})
    assert res["failed"] and res["state"] == "failed"
    assert res["cause"] == "kv_pool_oom"
    assert "(now 0.88)" in res["hint"] and "(now 131072)" in res["hint"] and "(now 16)" in res["hint"]
    assert res["evidence"][0]["match"] == KV_OOM
    assert res["active_state"] == "failed" and res["result"] == "exit-code" and res["exit_status"] == 1
    assert res["phase"] == "weights_loaded"
    assert any("Failed with result 'exit-code'" in line for line in res["tail"]), "systemd's lines in the tail"
    for word in (UNIT, "failed", "kv_pool_oom", KV_OOM):
        assert word in res["msg"]
    latency = res["observed_at"] - journal_time(gate_host, "Failed with result")
    print("failure detection latency: %.3f s" % latency)
    assert -0.05 < latency < DETECTION_BOUND_S


def test_evidence_deep_in_a_long_invocation(gate_host):
    """The seed's second failure: the error sat more than 100 lines before the end."""
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED, "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=64, avail mem=3.05 GB",
                                "Exception: Capture cuda graph failed: CUDA error: an illegal memory access"]
                      + ["  frame #%d: 0x7f00 in libcuda.so" % i for i in range(300)], "exit": 1})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 60, "tail_lines": 100})
    assert res["cause"] == "cuda_graph_failed" and res["phase"] == "cuda_graph"
    assert len(res["tail"]) == 100
    assert not any("Capture cuda graph failed" in line for line in res["tail"]), "error is outside the tail"
    assert res["journal_lines"] >= 300
    assert "--cuda-graph-max-bs-decode (now 16)" in res["hint"]


def test_sigkill_is_oom_killed(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, "Load weight begin. avail mem=47.21 GB"], "sleep": 1, "signal": 9})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 60})
    assert res["state"] == "failed" and res["cause"] == "oom_killed"
    assert res["signal"] == 9 and res["result"] == "signal"


def test_auto_restart_is_a_failure_of_the_judged_invocation(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, KV_OOM], "sleep": 1, "exit": 1}, restart="always")
    first = gate_host.show(UNIT, "InvocationID")["InvocationID"]
    # systemd may restart it before ansible has started the module: judge the first run explicitly.
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 60, "since": first})
    assert res["state"] == "failed"
    assert res["invocation_id"] == first
    assert "auto-restart" in res["reason"] or "restart" in res["reason"]
    assert res["cause"] == "kv_pool_oom"


def test_restarted_since_the_given_invocation(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "ready_after": 0})
    old = gate_host.show(UNIT, "InvocationID")["InvocationID"]
    gate_host.run(["systemctl", "restart", UNIT])
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "since": old, "timeout": 30})
    assert res["state"] == "failed" and "restarted" in res["reason"] and res["invocation_id"] == old


def test_timeout_when_never_healthy(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "never_ready": True})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 4})
    assert res["state"] == "timeout" and res["cause"] == "timeout"
    assert res["http_status"] == 503 and 4 <= res["elapsed"] < 15
    assert "4 s" in res["hint"] and "last phase: serving" in res["hint"]


def test_refused_api_key_is_final(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS], "api_key": "s3cret"})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 30, "api_key": "wrong"})
    assert res["state"] == "failed" and res["cause"] == "unauthorized" and res["elapsed"] < 10
    ok = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 30, "api_key": "s3cret"})
    assert ok["state"] == "healthy"
    assert "s3cret" not in json.dumps(ok["ansible_facts"])


def test_fail_on_unhealthy_false_reports_without_failing(gate_host):
    start(gate_host, {"lines": [KV_OOM], "exit": 1})
    res = run_module("ct129", "inferops.sglang.sglang_health",
                     {"unit": UNIT, "timeout": 30, "fail_on_unhealthy": False})
    assert not res.get("failed") and res["state"] == "failed" and res["cause"] == "kv_pool_oom", (
        res["reason"], res["invocation_id"], res["tail"])


def test_check_mode_reports_without_waiting(gate_host):
    start(gate_host, {"lines": [SERVER_ARGS], "ready_after": 30})
    started = time.monotonic()
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 600}, check=True)
    assert res["state"] == "starting" and not res.get("failed")
    assert time.monotonic() - started < 15


def test_progress_is_printed_during_a_long_wait(gate_host, tmp_path):
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "ready_after": 8})
    playbook = tmp_path / "wait.yml"
    playbook.write_text(
        "- hosts: ct129\n  gather_facts: false\n  tasks:\n"
        "    - inferops.sglang.sglang_health: {unit: %s, timeout: 60, progress_interval: 1}\n" % UNIT)
    proc = run_playbook(str(playbook))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("still starting after") >= 2, proc.stdout[-3000:]
    assert "phase serving (health: 503)" in proc.stdout


def test_journal_read_is_scoped_to_the_invocation(gate_host):
    start(gate_host, {"lines": ["first run: " + KV_OOM], "exit": 1})
    gate_host.wait_for(lambda: gate_host.show(UNIT, "ActiveState")["ActiveState"] == "failed", 10, what="fail")
    start(gate_host, {"lines": [SERVER_ARGS, *LOADED], "ready_after": 0})
    res = run_module("ct129", "inferops.sglang.sglang_health", {"unit": UNIT, "timeout": 30})
    assert res["state"] == "healthy"
    assert not any("first run" in line for line in res["tail"])
