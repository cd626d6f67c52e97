"""The SGLang stand-in on real lab hosts, under real systemd units: the seed deployment's
three outcomes, SGLang's endpoints and status codes over time, and each injected fault,
judged by sglang_health the way a deploy will judge them."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.sglang.plugins.module_utils.server_args import exec_start, to_argv
from tests.integration.ansible_run import run_module

REPO = Path(__file__).resolve().parents[2]
UNIT = "sglang-sim-test.service"
MODEL = "/models/Qwen3.6-27B"
DRAFT = "/models/Qwen3.6-27B-DFlash"
VARIANTS = {
    "nextn": {"speculative_algorithm": "NEXTN", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
              "speculative_num_draft_tokens": 4},
    "dflash": {"speculative_algorithm": "DFLASH", "speculative_draft_model_path": DRAFT,
               "speculative_num_draft_tokens": 16},
    "ddtree": {"speculative_algorithm": "DDTREE", "speculative_draft_model_path": DRAFT,
               "speculative_num_draft_tokens": 16, "speculative_ddtree_budget": 64},
}
FAST = {"timings": {"load_weights": 0.3, "load_draft": 0.1, "memory_pool": 0.1, "cuda_graph": 0.2, "warmup": 0.3}}


def envelope(cls: str) -> dict:
    data = yaml.safe_load((REPO / "inventory" / "production" / "group_vars" / ("%s.yml" % cls)).read_text())
    return dict(data["sglang_envelope"])


def server_argv(cls: str, variant: str, **overrides) -> list:
    args = envelope(cls)
    args.update(VARIANTS[variant])
    args.update(model_path=MODEL, port=30000, host="127.0.0.1")
    args.update(overrides)
    return to_argv(args)


def start_sim(host, argv, timings=None, then=""):
    """Start the stand-in under a unit; `then`: a command run in the host right after the
    start, in the same exec (so that podman's latency on a loaded machine does not count)."""
    host.put("/etc/inferops-lab/sim.json", json.dumps(timings or FAST))
    host.put("/etc/systemd/system/" + UNIT, (
        "[Unit]\nDescription=SGLang stand-in test\n[Service]\nType=simple\n"
        "Environment=PYTHONPATH=/opt/inferops-lab PYTHONUNBUFFERED=1\n"
        "ExecStart=/usr/bin/python3 -m sglang_sim %s\nTimeoutStopSec=20\n") % exec_start(argv))
    return host.run("systemctl stop %s; systemctl reset-failed %s 2>/dev/null; systemctl daemon-reload; "
                    "systemctl start %s %s" % (UNIT, UNIT, UNIT, ("&& " + then) if then else ""))


# /health's status every 0.3 s from inside the host until it answers 200 (0: refused).
POLL_HEALTH = ("python3 -c \"import time, urllib.request as u, urllib.error as e\n"
               "for _ in range(100):\n"
               "    try: s = u.urlopen('http://127.0.0.1:30000/health', timeout=10).status\n"
               "    except e.HTTPError as x: s = x.code\n"
               "    except OSError: s = 0\n"
               "    print(s, flush=True)\n"
               "    if s == 200: break\n"
               "    time.sleep(0.3)\n\"")


def gate(host, timeout=60, **extra):
    return run_module(host.name, "inferops.sglang.sglang_health",
                      dict({"unit": UNIT, "timeout": timeout, "fail_on_unhealthy": False}, **extra))


def http(host, path, method="GET", body=None, key=None):
    """(status, body) of a request made inside the host (the lab has no network)."""
    script = (
        "import json,sys,urllib.request as u\n"
        "r=u.Request('http://127.0.0.1:30000'+sys.argv[1],method=sys.argv[2],data=(sys.argv[3].encode() or None))\n"
        "r.add_header('Content-Type','application/json')\n"
        "sys.argv[4] and r.add_header('Authorization','Bearer '+sys.argv[4])\n"
        "try:\n  x=u.urlopen(r,timeout=30); print(x.status); print(x.read().decode())\n"
        "except u.HTTPError as e: print(e.code); print(e.read().decode())\n"
        "except OSError as e: print(0); print(e)\n")
    out = host.run(["python3", "-c", script, path, method, json.dumps(body) if body else "", key or ""]).stdout
    status, text = out.split("\n", 1) if "\n" in out else (out, "")
    return int(status), text


@pytest.fixture
def sim(lab):
    """Hosts whose port 30000 is free for the stand-in under test (a deploy test may have left
    sglang.service running)."""
    for host in lab.values():
        host.run("systemctl stop sglang.service 2>/dev/null; true")
    yield lab
    for host in lab.values():
        host.run("systemctl stop %s sim-port-holder.service 2>/dev/null; systemctl reset-failed %s sim-port-holder.service 2>/dev/null; "
                 "rm -f /etc/inferops-lab/faults.json; cp /dev/null /dev/null; true" % (UNIT, UNIT))
        host.put("/etc/inferops-lab/sim.json", Path(os.environ["INFEROPS_LAB_TIMINGS"]).read_text())


# --- validation without starting anything ---------------------------------------------

@pytest.mark.parametrize("argv, code, words", [
    (server_argv("a6000", "nextn"), 0, "accepts"),
    (server_argv("blackwell", "ddtree"), 0, "algorithm: DDTREE"),
    (["--model-path", "/nonexistent/model"], 0, "accepts"),
    (["--model-path", MODEL, "--cuda-graph-max-bs", "16"], 2, "ambiguous option: --cuda-graph-max-bs could match"),
    (["--model-path", MODEL, "--speculative-algorithm", "DFLASH"], 2,
     "DFLASH speculative decoding requires setting --speculative-draft-model-path"),
    (["--model-path", MODEL, "--no-such-flag"], 2, "unrecognized arguments: --no-such-flag"),
])
def test_validate_only(ct129, argv, code, words):
    proc = ct129.run(["env", "PYTHONPATH=/opt/inferops-lab", "python3", "-m", "sglang_sim", "--validate-only",
                      *argv], check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert words in proc.stdout + proc.stderr


# --- the seed deployment -----------------------------------------------------------

def test_seed_ct129_ddtree_production_envelope_is_kv_pool_oom(sim, ct129):
    start_sim(ct129, server_argv("a6000", "ddtree"))
    res = gate(ct129)
    assert res["state"] == "failed" and res["cause"] == "kv_pool_oom", res["tail"][-10:]
    assert res["evidence"][0]["match"].endswith(
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88")
    assert "(now 0.88)" in res["hint"] and "(now 131072)" in res["hint"] and "(now 16)" in res["hint"]
    # engine.py's launch-phase SIGQUIT handler kills the tree, the main process last (SIGKILL).
    assert res["signal"] == 9 and res["phase"] == "weights_loaded"


def test_seed_ct129_ddtree_retry_dies_in_cuda_graph_capture_far_from_the_end(sim, ct129):
    start_sim(ct129, server_argv("a6000", "ddtree", mem_fraction_static=0.95, context_length=32768,
                                 max_running_requests=4))
    res = gate(ct129, tail_lines=100)
    assert res["state"] == "failed" and res["cause"] == "cuda_graph_failed"
    assert res["phase"] == "cuda_graph"
    journal = ct129.run(["journalctl", "_SYSTEMD_INVOCATION_ID=" + res["invocation_id"], "-o", "cat",
                         "--no-pager"]).stdout.splitlines()
    for line in ("Linear attention kernel backend: decode=triton, prefill=triton",
                 "Using hybrid linear attention backend for hybrid GDN models.",
                 "GDN kernel dispatcher: decode=TritonGDNKernel, extend=TritonGDNKernel, "
                 "verify=TritonGDNKernel packed_decode=True"):
        assert any(line in j for j in journal), line
    where = next(i for i, j in enumerate(journal) if "Capture cuda graph failed" in j)
    assert len(journal) - where > 100, "the error must sit more than 100 lines before the end"
    assert not any("Capture cuda graph failed" in line for line in res["tail"])


@pytest.mark.parametrize("host, cls, variant", [
    ("ct129", "a6000", "nextn"), ("ct200", "blackwell", "ddtree"), ("ct200", "blackwell", "dflash")])
def test_production_envelopes_that_fit_become_healthy(sim, host, cls, variant):
    start_sim(sim[host], server_argv(cls, variant))
    res = gate(sim[host])
    assert res["state"] == "healthy", (res["cause"], res["tail"][-8:])
    assert res["phase"] == "ready"


# --- SGLang's endpoints over time --------------------------------------------------

def test_endpoints_status_codes_over_time_and_sigterm(sim, ct200):
    argv = server_argv("blackwell", "ddtree", api_key="lab-secret")
    started = start_sim(ct200, argv, timings={"timings": {"load_weights": 2.0, "memory_pool": 0.2, "cuda_graph": 0.5,
                                                          "warmup": 1.0}}, then=POLL_HEALTH)
    seen = [int(word) for word in started.stdout.split()]
    assert seen[0] == 0, "connection refused before the server listens"
    assert 503 in seen and seen[-1] == 200, seen
    assert http(ct200, "/health_generate")[0] == 200
    assert http(ct200, "/v1/models")[0] == 401
    status, body = http(ct200, "/v1/models", key="lab-secret")
    assert status == 200 and json.loads(body)["data"][0]["root"] == MODEL
    info = json.loads(http(ct200, "/server_info", key="lab-secret")[1])
    assert info["tp_size"] == 8 and info["speculative_algorithm"] == "DDTREE" and "api_key" not in info
    assert json.loads(http(ct200, "/model_info", key="lab-secret")[1])["model_path"] == MODEL
    status, body = http(ct200, "/generate", "POST", {"text": "hello", "sampling_params": {"max_new_tokens": 32}},
                        key="lab-secret")
    meta = json.loads(body)["meta_info"]
    assert status == 200 and meta["completion_tokens"] == 32 and meta["spec_accept_length"] > 1
    status, body = http(ct200, "/v1/chat/completions", "POST",
                        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True},
                        key="lab-secret")
    assert status == 200 and body.rstrip().endswith("data: [DONE]")
    ct200.run(["systemctl", "stop", UNIT])
    props = ct200.show(UNIT, "ActiveState", "Result", "ExecMainStatus")
    assert props == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0"}
    journal = ct200.journal(UNIT)
    assert "SIGTERM received" in journal and "Finished server process" in journal
    assert "lab-secret" not in journal


# --- injected faults -----------------------------------------------------------------

def with_faults(host, faults):
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))


def test_fault_hang_before_ready_times_out(sim, ct200):
    with_faults(ct200, {"hang_before_ready": True})
    start_sim(ct200, server_argv("blackwell", "dflash"))
    res = gate(ct200, timeout=6)
    assert res["state"] == "timeout" and res["cause"] == "timeout" and res["http_status"] == 503
    assert res["phase"] == "serving"


def test_fault_crash_when_the_test_says(sim, ct200):
    # Healthy for as long as the test wants (a loaded machine's module start takes seconds), then the crash.
    with_faults(ct200, {"crash_when_file": "/run/crash-now"})
    ct200.run("rm -f /run/crash-now")
    start_sim(ct200, server_argv("blackwell", "dflash"))
    assert gate(ct200)["state"] == "healthy"
    ct200.run("touch /run/crash-now")
    ct200.wait_for(lambda: ct200.show(UNIT, "ActiveState")["ActiveState"] == "failed", 25, what="crash")
    ct200.run("rm -f /run/crash-now")
    assert "an illegal memory access was encountered" in ct200.journal(UNIT)


def test_fault_crash_after_the_first_health_answer_is_caught_by_the_settle_window(sim, ct200):
    with_faults(ct200, {"crash_after_first_health_s": 1})
    start_sim(ct200, server_argv("blackwell", "dflash"))
    res = gate(ct200, settle=4)
    assert res["state"] == "failed" and res["cause"] == "cuda_error", res
    assert "after it first answered 200" in res["reason"] and res["healthy_at"] is not None


@pytest.mark.parametrize("target, signal", [("scheduler", None), ("launcher", 9)])
def test_fault_oom_killer_at_memory_pool(sim, ct200, target, signal):
    with_faults(ct200, {"oom_kill": "memory_pool", "oom_kill_target": target})
    start_sim(ct200, server_argv("blackwell", "dflash"))
    res = gate(ct200)
    assert res["state"] == "failed" and res["cause"] == "oom_killed"
    assert res["signal"] == signal


def test_fault_slow_start_still_becomes_healthy(sim, ct200):
    with_faults(ct200, {"slow_start_s": 4})
    start_sim(ct200, server_argv("blackwell", "nextn"))
    res = gate(ct200)
    assert res["state"] == "healthy" and res["elapsed"] >= 3


def test_missing_model_directory_is_a_startup_failure(sim, ct200):
    start_sim(ct200, server_argv("blackwell", "dflash", speculative_draft_model_path="/models/missing-draft"))
    res = gate(ct200)
    assert res["state"] == "failed" and res["cause"] == "model_not_found"
    assert "/models/missing-draft" in res["hint"]


def test_port_already_in_use(sim, ct200):
    ct200.run("systemd-run --collect --unit sim-port-holder.service python3 -m http.server --bind 127.0.0.1 30000")
    ct200.wait_for(lambda: "30000" in ct200.run("ss -ltn").stdout, 10, what="port holder")
    start_sim(ct200, server_argv("blackwell", "nextn"))
    res = gate(ct200)
    assert res["state"] == "failed" and res["cause"] == "port_in_use" and "(now 30000)" in res["hint"]
