"""The fault matrix: one test per way a deploy goes wrong. Every row asserts that the host
ends serving a healthy server, that what ran before (unit, env, release) is byte-identical
afterwards and is the known-good, that the recorded cause is the right one, and that the
play's outcome is right (a rolled-back deploy fails the play).

The rows on a host that runs a hand-made unit are test_adoption.py (their own worker); a flag
the real SGLang parser rejects is test_real_checker.py; a switch and a rollback behind the SGLang
Model Gateway are test_gateway.py. Rows not here live beside the feature they test: a GPU
tenant (test_deploy.py::test_a_gpu_tenant_stops_the_deploy_until_it_is_released), a patch that does not apply
(test_deploy.py::test_patch_that_does_not_apply_changes_nothing), no known-good present
(test_deploy.py::test_failed_deploy_without_known_good_says_so_and_leaves_the_unit_stopped)
and the bad-input rows (test_deploy.py::test_bad_input_fails_before_anything_changes).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.ansible_run import BIN, LAB_INVENTORY, REPO, _env, run_module, run_playbook
from tests.integration.deploying import UNIT, deploy, faults, healthy, invocation, report, reset_service, rolled_back
from tests.integration.labhost import labctl

# The rows share one NEXTN deploy per host (the module's fixture): under pytest-xdist they
# run on one worker, in order.
pytestmark = pytest.mark.xdist_group("fault_matrix")

KNOWN_GOOD = "/etc/sglang/known-good/"
# Each row tries its variant again even if an earlier row rolled the same configuration back.
RETRY = {"sglang_retry_rolled_back": True}
# Several times the tests' start-up (about 1.5 s): a hung server, not a slow one.
NEVER_HEALTHY_TIMEOUT_S = 8


def fingerprint(host) -> dict:
    """What runs now: unit, env and secrets bytes, and the release's file list, sizes and times."""
    unit = host.run(["cat", UNIT]).stdout
    release = unit.split("ExecStart=", 1)[1].split("/bin/python", 1)[0]
    files = host.run("find %s -type f -printf '%%P %%s %%T@\\n' | sort | sha256sum" % release).stdout.split()[0]
    return {"unit": unit, "env": host.run(["cat", "/etc/sglang/sglang.env"]).stdout,
            "secrets": host.run(["cat", "/etc/sglang/secrets.yaml"]).stdout, "release": release, "files": files}


def assert_back_to(host, before, restarted=True):
    """The host serves what it served before, byte for byte, and that is the known-good."""
    after = fingerprint(host)
    assert after == before, "what runs now differs from what ran before the deploy"
    if restarted:
        assert host.run(["cat", KNOWN_GOOD + "sglang.service"]).stdout == before["unit"]
        assert host.run(["cat", KNOWN_GOOD + "sglang.env"]).stdout == before["env"]
    assert healthy(host)


@pytest.fixture(scope="module")
def serving(lab):
    """Both hosts serving NEXTN from a clean state (once per module: deploys are slow), in one run."""
    for host in lab.values():
        reset_service(host)
    proc = run_playbook("playbooks/deploy_nextn.yml", limit=",".join(lab), extra_vars={"sglang_serial": 0})
    assert proc.returncode == 0, proc.stdout[-3000:]
    yield lab
    for host in lab.values():
        reset_service(host)


@pytest.fixture
def nextn(serving):
    """Before each row: NEXTN healthy, no faults, no lock; afterwards the faults are gone. A
    host an earlier row left otherwise (that row failed, and says why) is deployed again, so
    that one failure is not every later row's."""
    for host in serving.values():
        host.run("rm -f /etc/inferops-lab/faults.json /run/inferops-sglang/deploy.lock")
        if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout):
            reset_service(host)
            proc = deploy("deploy_nextn", host)
            assert proc.returncode == 0, proc.stdout[-3000:]
    yield serving
    for host in serving.values():
        host.run("rm -f /etc/inferops-lab/faults.json")


# The A6000 class envelope runs mem_fraction_static 0.88 unless a row overrides it.
@pytest.mark.parametrize("variant, overrides, cause, fraction", [
    ("ddtree", {}, "kv_pool_oom", 0.88),
    ("ddtree", {"mem_fraction_static": 0.6}, "hybrid_state_oom", 0.6),
    ("ddtree", {"mem_fraction_static": 0.95, "context_length": 32768, "max_running_requests": 4}, "cuda_graph_failed",
     0.95),
], ids=["kv-pool-oom", "hybrid-state-oom", "cuda-graph-failure"])
def test_memory_failures_on_a6000(nextn, variant, overrides, cause, fraction):
    host = nextn["ct129"]
    before = fingerprint(host)
    # The preflight estimate is a lower bound; skip it so SGLang itself meets the limit.
    proc = deploy("deploy", host, sglang_variant=variant, sglang_envelope_overrides=overrides,
                  sglang_check_fit=False, **RETRY)
    rep = rolled_back(proc, host, cause)
    assert rep["health"]["state"] == "failed" and rep["health"]["evidence"], rep["health"]
    # The hint names the values to change, as they were.
    assert "(now %s)" % fraction in rep["health"]["hint"]
    assert_back_to(host, before)


def test_gpu_memory_left_behind_is_waited_for_before_the_known_good_starts(nextn):
    """The failed server's GPU memory stays used for 12 s after it is first seen gone (a driver
    still tearing down): the rollback waits for it, then starts NEXTN into free GPUs. (The
    linger starts when a reader of the GPUs first sees the process gone, the gate's evidence
    included: on two busy cores a rollback came more than 4 s after that and found the memory
    back already. 12 s leaves three times that gap.)"""
    host = nextn["ct129"]
    before = fingerprint(host)
    faults(host, gpu_release_lag_s=12, only_algorithm="DDTREE")
    proc = deploy("deploy", host, sglang_variant="ddtree", sglang_check_fit=False, **RETRY)
    rep = rolled_back(proc, host, "kv_pool_oom")
    waited = re.search(r"healthy in [0-9.]+ s \(after ([0-9.]+) s for what sglang.service left behind\)", rep["diagnosis"])
    assert waited and 1.0 <= float(waited.group(1)) < 30, rep["diagnosis"]
    assert_back_to(host, before)


def test_gpu_memory_that_never_comes_back_keeps_the_known_good_from_starting_into_full_gpus(nextn):
    """The memory never comes back (a wedged driver): after the wait (3 s here) the known-good
    files are back but NEXTN is not started, and the diagnosis says what is left and what to
    do; once the GPUs are reset, rollback.yml brings NEXTN back."""
    host = nextn["ct129"]
    before = fingerprint(host)
    faults(host, gpu_release_lag_s=3600, only_algorithm="DDTREE")
    try:
        proc = deploy("deploy", host, sglang_variant="ddtree", sglang_check_fit=False,
                      sglang_service_leftovers_timeout=3, **RETRY)
        rep = report(host)
        assert proc.returncode != 0 and rep["outcome"] == "rolled_back" and rep["cause"] == "kv_pool_oom", rep["diagnosis"]
        said = " ".join(rep["diagnosis"].split())
        assert "rolled back to NEXTN: restored but NOT STARTED - " in said and "MiB used by no process" in said, said
        assert "reset the GPUs (nvidia-smi --gpu-reset) or reboot, then run playbooks/rollback.yml" in said
        # (Stopped: "failed" when the restore stopped it between two of its crash-restarts.)
        assert host.show("sglang.service", "ActiveState")["ActiveState"] in ("inactive", "failed")
        assert not healthy(host)
        assert host.run(["cat", UNIT]).stdout == before["unit"], "the known-good files are back, ready to start"
    finally:
        labctl("release", host.name)   # the operator resets the GPUs
    again = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert again.returncode == 0 and "rolled back to NEXTN: healthy in" in again.stdout, again.stdout[-3000:]
    assert_back_to(host, before)


def test_oom_killer_signal_9(nextn):
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, oom_kill="memory_pool", oom_kill_target="launcher", only_algorithm="DFLASH")
    rep = rolled_back(deploy("deploy", host, sglang_variant="dflash", **RETRY), host, "oom_killed")
    assert rep["health"]["signal"] == 9 and "OOM killer" in rep["health"]["hint"]
    assert_back_to(host, before)


def test_crash_after_the_first_200_inside_the_settle_window(nextn):
    host = nextn["ct200"]
    before = fingerprint(host)
    # The crash's clock starts when the server first answers 200, so the gate has seen it
    # healthy however loaded the machine is; one second is well inside the settle window.
    faults(host, crash_after_first_health_s=1, only_algorithm="DFLASH")
    rep = rolled_back(deploy("deploy", host, sglang_variant="dflash", **RETRY), host, "cuda_error")
    assert "after it first answered 200" in rep["health"]["reason"], rep["health"]["reason"]
    assert rep["health"]["phase"] == "ready" and rep["health"]["healthy_at"] is not None
    assert_back_to(host, before)


def test_never_healthy_times_out(nextn):
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, hang_before_ready=True, only_algorithm="DFLASH")
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_service_health_timeout=NEVER_HEALTHY_TIMEOUT_S, **RETRY)
    rep = rolled_back(proc, host, "timeout")
    assert rep["health"]["state"] == "timeout" and rep["health"]["http_status"] == 503
    assert NEVER_HEALTHY_TIMEOUT_S <= rep["health"]["elapsed"] < NEVER_HEALTHY_TIMEOUT_S + 20
    assert_back_to(host, before)


# --- the start of a server with a process per GPU (blackwell: TP=8) -----------------------
# Quiet for this long, the start has stalled (a floor above the known-good's recorded phases,
# which take well under a second here on an idle machine; the lab's own floor is 15 s). The
# limit is STALL_FACTOR x the known-good's recorded time for the phase when that is longer (its
# eight ranks spawned on two busy cores: 2.8 s once, so a limit of 8.5 s).
STALL_S, STALL_FACTOR = 6, 3


@pytest.mark.parametrize("fault, cause, rank", [
    ({"rank_error": {"rank": 5, "error": "nccl", "phase": "init_parallel"}}, "nccl_error", "TP5"),
    ({"rank_error": {"rank": 3, "error": "capture", "phase": "cuda_graph"}}, "cuda_graph_failed", "TP3"),
], ids=["nccl-error-on-one-rank", "capture-error-on-one-rank-without-sglangs-wrapper"])
def test_a_rank_that_fails_alone_is_named_with_its_own_lines(nextn, fault, cause, rank):
    """One of eight ranks fails, its error only in its own TP lines (torch's or NCCL's text,
    no SGLang wrapper); the main process kills the tree as engine.py does."""
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, only_algorithm="DFLASH", **fault)
    rep = rolled_back(deploy("deploy", host, sglang_variant="dflash", **RETRY), host, cause)
    assert rep["health"]["rank"] == rank and rep["health"]["evidence"][0]["rank"] == rank, rep["health"]
    assert "cause:    %s on %s" % (cause, rank) in rep["diagnosis"], rep["diagnosis"]
    assert rep["health"]["signal"] == 9, "engine.py's SIGQUIT handler ends the main process with SIGKILL"
    assert_back_to(host, before)


@pytest.mark.parametrize("phase, said", [
    ("init_parallel", "parallel init"),
    ("load_weights", "weights"),
    ("cuda_graph", "graphs"),
], ids=["nccl-init", "weights", "graph-capture"])
def test_a_start_that_stalls_fails_at_the_stall_limit_not_the_timeout(nextn, phase, said):
    """Every rank stops in one phase, for longer than any test waits: the gate fails the start
    once it has been quiet for the stall limit, long before the 120 s timeout, and names the
    phase, the seconds and the last line; the known-good's recorded start sets the limit."""
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, stall=phase, only_algorithm="DFLASH")
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_service_health_stall=STALL_S,
                  sglang_service_health_stall_factor=STALL_FACTOR, **RETRY)
    rep = rolled_back(proc, host, "stalled")
    stall = rep["health"]["stall"]
    assert stall["known_good"] is not None, stall
    limit = max(STALL_S, STALL_FACTOR * stall["known_good"])
    assert abs(stall["limit"] - limit) < 0.1 and stall["seconds"] >= stall["limit"], stall
    assert "no progress for" in rep["health"]["reason"] and " in %s (limit %.0f s" % (said, stall["limit"]) in \
        rep["health"]["reason"], rep["health"]["reason"]
    assert rep["health"]["elapsed"] < 60, "stopped at the stall limit, not at the 120 s timeout"
    assert_back_to(host, before)


def test_a_rank_hung_in_the_warm_up_is_a_stall_and_one_hung_after_the_first_200_is_caught_in_the_settle(nextn):
    """Rank 6 never returns from a forward while the main process stays up. In the warm-up:
    `ready` never comes, and the start stalls there. After the health check's first 200: the
    next checks get no answer (SGLang's own gives up only after 20 s), and the gate, still
    probing in its settle window, fails the switch instead of passing it."""
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, rank_hang={"rank": 6, "after_forwards": 0}, only_algorithm="DFLASH")
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_service_health_stall=STALL_S,
                  sglang_service_health_stall_factor=STALL_FACTOR, **RETRY)
    rep = rolled_back(proc, host, "stalled")
    limit = max(STALL_S, STALL_FACTOR * (rep["health"]["stall"]["known_good"] or 0))
    assert " in warm-up (limit %.0f s" % limit in rep["health"]["reason"], rep["health"]["reason"]
    faults(host, rank_hang={"rank": 6, "after_forwards": 2}, only_algorithm="DFLASH")
    proc = deploy("deploy", host, sglang_variant="dflash", **RETRY)
    rep = rolled_back(proc, host, "health_lost")
    assert rep["health"]["healthy_at"] is not None and "then timed out 2 times in a row" in rep["health"]["reason"], \
        rep["health"]["reason"]
    assert "a rank is hung" in rep["health"]["hint"] and rep["health"]["elapsed"] < 60, rep["health"]
    assert_back_to(host, before)


# A server started by hand, outside systemd (nohup from a shell), on both of ct129's GPUs.
BY_HAND = ("cd /tmp && PYTHONPATH=/opt/inferops-lab nohup python3 -m sglang_sim --model-path /models/Qwen3.6-27B "
           "--tp-size 2 --port 30077 --mem-fraction-static 0.7 --disable-cuda-graph > /tmp/by-hand.log 2>&1 &")


def test_ranks_a_dead_server_left_behind_stop_the_deploy_before_anything_changes(nextn):
    """An operator stopped the service and tried SGLang by hand; its main process was killed
    (-9) and its two ranks, stuck in the driver where their parent-death SIGKILL cannot land,
    stayed, each holding its GPU's memory (sgl-project/sglang#23627). The preflight names each
    by PID and title and says what they are; nothing on the host changes."""
    host = nextn["ct129"]
    before = fingerprint(host)
    host.run("systemctl stop sglang.service")
    try:
        faults(host, rank_outlives_main=[0, 1], only_algorithm="NONE")   # the server by hand, not NEXTN (EAGLE)
        host.run(BY_HAND)
        host.wait_for(lambda: "fired up" in host.run("cat /tmp/by-hand.log").stdout, 60, 0.2, "the server by hand")
        host.run("pkill -9 -f '[s]glang_sim --model-path'")
        ranks = host.run("pgrep -f '^sglang::scheduler_TP' || true").stdout.split()
        assert len(ranks) == 2, "both ranks outlive their main process"
        proc = deploy("deploy_nextn", host)
        said = " ".join(proc.stdout.split())
        assert proc.returncode != 0 and "Nothing was changed" in said, said[-3000:]
        for rank, pid in enumerate(sorted(ranks, key=int)):
            assert "PID %s (sglang::scheduler_TP%d, no unit) holds memory on GPU %d" % (pid, rank, rank) in said, said
        assert "an SGLang rank outside any unit: the server it belonged to is gone" in said
        assert "Stop it (kill %s)" % sorted(ranks, key=int)[0] in said
        assert host.show("sglang.service", "ActiveState")["ActiveState"] == "inactive", "left as the operator left it"
    finally:
        host.run("pkill -9 -f '^sglang::' || true; rm -f /tmp/by-hand.log")
        host.run("systemctl start sglang.service")
        host.wait_for(lambda: healthy(host), 60, 0.2, "NEXTN healthy again")
    assert_back_to(host, before, restarted=False)


def test_unknown_flag_is_caught_before_the_service_stops(nextn):
    host = nextn["ct200"]
    before, running = fingerprint(host), invocation(host)
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_envelope_overrides={"speculative_tree_width": 4},
                  **RETRY)
    rep = report(host)
    assert proc.returncode != 0 and rep["outcome"] == "failed" and rep["cause"] == "bad_argument", rep["diagnosis"]
    assert "the running service was not touched" in rep["diagnosis"]
    assert "unrecognized arguments: --speculative-tree-width 4" in rep["diagnosis"]
    assert invocation(host) == running, "no restart at all"
    assert_back_to(host, before, restarted=False)


def test_port_held_by_another_process_is_refused_before_anything_changes(nextn):
    """A process outside the managed unit listens on the port the deploy's server would bind:
    the plan names it (PID, unit) and nothing on the host changes."""
    host = nextn["ct200"]
    before, running = fingerprint(host), invocation(host)
    host.run("systemd-run --unit squatter --collect python3 -m http.server 30010 --bind 127.0.0.1")
    try:
        host.wait_for(lambda: host.run("python3 -c \"import socket; socket.create_connection(('127.0.0.1', 30010), 1)\"",
                                       check=False).returncode == 0, 10, what="the squatter to listen")
        proc = deploy("deploy", host, sglang_variant="dflash", sglang_service_port=30010, **RETRY)
    finally:
        host.run("systemctl stop squatter", check=False)
    said = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "port 30010 is held by PID" in said and "unit squatter.service" in said, said[-2000:]
    assert "Stop it (systemctl stop squatter.service)" in said and "Nothing was changed" in said
    assert invocation(host) == running
    assert host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1
    assert_back_to(host, before, restarted=False)


IMPOSTOR = """import http.server, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        threading.Timer(1.0, lambda: __import__("os")._exit(0)).start()
http.server.HTTPServer(("127.0.0.1", 30000), H).serve_forever()
"""


def test_the_gate_counts_a_200_only_from_its_own_server(nextn):
    """While the new server still loads, another process answers 200 on its port (and leaves
    a second later): the gate calls that port_taken, not healthy, and the deploy rolls back."""
    host = nextn["ct200"]
    before, running = fingerprint(host), invocation(host)
    host.put("/opt/bench/impostor.py", IMPOSTOR)
    # (12 s: the impostor must answer while DFLASH still loads, however slow the start of each is on
    # two cores shared with the other rows; with 6 s it came once 0.1 s before DFLASH's own bind.)
    faults(host, slow_start_s=12, only_algorithm="DFLASH")
    proc = spawn_deploy(host, "deploy", sglang_variant="dflash", **RETRY)
    try:
        host.wait_for(lambda: invocation(host) not in ("", running), 240, interval=0.1, what="the restart")
        host.run("systemd-run --unit impostor --collect python3 /opt/bench/impostor.py")
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        host.run("systemctl stop impostor 2>/dev/null; true", check=False)
    rep = rolled_back(proc, host, "port_taken")
    assert "not from sglang.service" in rep["health"]["reason"] and "unit impostor.service" in rep["health"]["reason"]
    assert_back_to(host, before)


def test_a_second_server_on_gpus_in_use_fails_with_sglangs_memory_message(nextn):
    """A second SGLang beside the running one: the weights do not fit in what it left free,
    torch says so, and the classifier names the cause; the running server is untouched."""
    host = nextn["ct129"]   # 2 cards of 48 GB: the weights need half of each, NEXTN left less
    before, running = fingerprint(host), invocation(host)
    argv = ("--model-path /models/Qwen3.6-27B --tp-size 2 --mem-fraction-static 0.85 --port 30019 "
            "--context-length 32768")
    host.put("/etc/systemd/system/second-server.service", (
        "[Service]\nEnvironment=PYTHONPATH=/opt/inferops-lab\nExecStart=/usr/bin/python3 -m sglang_sim %s\n" % argv))
    host.run("systemctl daemon-reload; systemctl reset-failed second-server 2>/dev/null; systemctl start second-server")
    try:
        res = run_module(host.name, "inferops.sglang.sglang_health",
                         {"unit": "second-server.service", "url": "http://127.0.0.1:30019/health", "timeout": 60,
                          "fail_on_unhealthy": False, "progress_interval": 0})
    finally:
        host.run("systemctl stop second-server; rm -f /etc/systemd/system/second-server.service; "
                 "systemctl daemon-reload; systemctl reset-failed second-server", check=False)
    assert res["state"] != "healthy" and res["cause"] == "cuda_oom", res
    assert "CUDA out of memory" in " ".join(e["match"] for e in res["evidence"]), res["evidence"]
    assert "other processes on these GPUs" in res["hint"]
    assert invocation(host) == running
    assert_back_to(host, before, restarted=False)


def test_missing_draft_model_directory(nextn):
    host = nextn["ct200"]
    before, running = fingerprint(host), invocation(host)
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_draft_model_path="/models/not-copied-yet", **RETRY)
    assert proc.returncode != 0
    assert "no model at /models/not-copied-yet (no config.json there)" in " ".join(proc.stdout.split())
    assert "Nothing was changed" in proc.stdout and invocation(host) == running
    assert_back_to(host, before, restarted=False)


def test_install_failure_changes_nothing(nextn):
    host = nextn["ct200"]
    before, running = fingerprint(host), invocation(host)
    releases = host.run("ls /opt/sglang/releases").stdout
    # A version the wheelhouse does not have, and the hosts have no network: pip fails.
    proc = deploy("deploy", host, sglang_variant="dflash", sglang_build_version="0.5.24", **RETRY)
    assert proc.returncode != 0
    text = " ".join(proc.stdout.split())
    assert "sglang==0.5.24" in text and "No matching distribution" in text, proc.stdout[-3000:]
    assert host.run("ls /opt/sglang/releases").stdout == releases, "no half-built release left"
    assert invocation(host) == running
    assert_back_to(host, before, restarted=False)


def spawn_deploy(host, playbook, **extra_vars):
    cmd = [str(BIN / "ansible-playbook"), "-i", LAB_INVENTORY, "playbooks/%s.yml" % playbook, "-l", host.name,
           "-e", json.dumps(extra_vars)]
    return subprocess.Popen(cmd, cwd=REPO, env=_env({"ANSIBLE_STDOUT_CALLBACK": "default"}), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.fixture
def bench_clock(nextn):
    """The bench's slower start-up on ct200 for one row: the controller must die while the
    new server still loads, before its own gate could notice the failure."""
    host = nextn["ct200"]
    host.put("/etc/inferops-lab/sim.json", (REPO / "lab" / "sim_defaults.json").read_text())
    yield nextn
    host.put("/etc/inferops-lab/sim.json", Path(os.environ["INFEROPS_LAB_TIMINGS"]).read_text())


def test_controller_killed_right_after_the_restart(bench_clock):
    host = bench_clock["ct200"]
    before, running = fingerprint(host), invocation(host)
    faults(host, oom_kill="memory_pool", oom_kill_target="scheduler", only_algorithm="DFLASH")
    proc = spawn_deploy(host, "deploy", sglang_variant="dflash", **RETRY)
    try:
        host.wait_for(lambda: invocation(host) not in ("", running), 240, interval=0.2, what="the restart")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)   # the operator's laptop dies: no handler, no unlock
        proc.wait()
    assert "DFLASH" in host.run(["cat", UNIT]).stdout and host.run("test -e /run/inferops-sglang/deploy.lock",
                                                                   check=False).returncode == 0
    host.wait_for(lambda: not healthy(host), 30, what="the broken variant to fail")

    again = run_playbook("playbooks/rollback.yml", limit=host.name)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "rolled back to NEXTN: healthy in" in again.stdout
    assert host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 1, "stale lock cleared"
    assert_back_to(host, before)


def test_two_deploys_at_once_the_second_is_refused(nextn):
    host = nextn["ct200"]
    before = fingerprint(host)
    faults(host, oom_kill="memory_pool", oom_kill_target="scheduler", only_algorithm="DFLASH")
    first = spawn_deploy(host, "deploy", sglang_variant="dflash", **RETRY)
    try:
        host.wait_for(lambda: host.run("test -e /run/inferops-sglang/deploy.lock", check=False).returncode == 0,
                      120, interval=0.2, what="the first deploy's lock")
        started = time.monotonic()
        second = deploy("deploy", host, sglang_variant="dflash", **RETRY)
        assert second.returncode != 0 and time.monotonic() - started < 60
        assert "%s is locked by another deploy" % host.name in second.stdout, second.stdout[-3000:]
    finally:
        out, _err = first.communicate(timeout=600)
    assert first.returncode != 0, "the first deploy went on: rolled back for its own fault"
    assert "rolled back to NEXTN: healthy in" in out
    assert_back_to(host, before)
