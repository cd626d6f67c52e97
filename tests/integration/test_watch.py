"""The watch after the gates: a DDTREE switch on ct200 passes its gates and is confirmed, and the
host goes on watching it by itself (sglang_watch_duration). When the server fails later - here a
crash minutes into serving, an illegal memory access on rank 0 - the host names it and restores
NEXTN, the known-good the switch kept, with no controller; status.yml says what the watch does and
what it did, and the configuration is on the record as rolled back."""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.ansible_run import REPO, run_playbook
from tests.integration.deploying import (
    CRASH_FILE, STATE, TRAFFIC_LOG, UNIT, deploy, healthy, report, reset_service, start_other_language_traffic,
    stop_traffic, watch_restored)

pytestmark = pytest.mark.xdist_group("watch")

INTERVAL_S = 2
WATCHED = {"sglang_watch_duration": 600, "sglang_watch_interval": INTERVAL_S}
# A hang guard: two probes, the restore of the known-good and its settle, on two busy cores.
RESTORED_WITHIN_S = 120


@pytest.fixture(scope="module")
def serving(lab):
    host = lab["ct200"]
    reset_service(host)
    host.run("rm -f /etc/inferops-lab/faults.json " + CRASH_FILE)
    assert deploy("deploy_nextn", host).returncode == 0
    yield host
    host.run("rm -f /etc/inferops-lab/faults.json " + CRASH_FILE)
    reset_service(host)


@pytest.fixture
def nextn(serving):
    """NEXTN serving, healthy, no fault, and the guard's last word of an earlier row gone."""
    host = serving
    host.run("rm -f /etc/inferops-lab/faults.json %s %sguard.json" % (CRASH_FILE, STATE))
    if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout):
        assert deploy("deploy_nextn", host).returncode == 0
    return host


def status(host):
    proc = run_playbook("playbooks/status.yml", limit=host.name)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return " ".join(proc.stdout.split())


def watch_record(host):
    out = host.run(["cat", STATE + "watch.json"], check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def watching_ddtree(host):
    record = watch_record(host)
    return record if record and not record.get("ended") and record["variant"] == "ddtree" else None


def watched_then_failed(host, faults, extra, name, wait=False, trigger=None):
    """DDTREE deployed with the watch on and confirmed, its late failure set off (the row's file):
    the watch's result once its restore ended, checked to have brought NEXTN back, intact and true.
    With `wait` the play waits for the watch (sglang_watch_wait): the failure is set off while it
    waits, and its report says how the watch ended. `trigger` sets the failure off instead of the
    crash file."""
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps(dict(faults, only_algorithm="DDTREE")))
    with ThreadPoolExecutor(1) as pool:
        deploying = pool.submit(deploy, "deploy_ddtree", host, **dict(WATCHED, sglang_watch_wait=wait, **extra))
        if wait:
            host.wait_for(lambda: deploying.done() or watching_ddtree(host), 300, 0.5, "the watch to begin")
            assert not deploying.done(), deploying.result().stdout[-3000:]
        else:
            proc = deploying.result()
            assert proc.returncode == 0, proc.stdout[-3000:]
            assert watching_ddtree(host), watch_record(host)
            assert report(host)["watching_until"].endswith(" UTC"), report(host)
        assert "the host's watch: watching DDTREE until " in status(host)
        failed_at = time.time()
        if trigger:
            trigger()
        else:
            host.put(CRASH_FILE, "")
        proc = deploying.result()
    if wait:
        # The play waited: the watch's restore fails the host as a rollback does, and its report and
        # the job's artifacts say how the watch ended.
        said = " ".join(proc.stdout.split())
        assert proc.returncode != 0 and "the watch restored NEXTN at " in said, said[-3000:]
        ended = report(host)["watch"]
        assert (ended["outcome"], ended["restored"]) == ("restored", "nextn"), ended
    result = host.wait_for(lambda: watch_restored(host), RESTORED_WITHIN_S, 0.5, "the watch's restore")
    named_in, back_in = result["time"] - failed_at, result["time"] + result["seconds"] - failed_at
    print("\n%s -> named by the watch: %.1f s; the known-good healthy again: %.1f s" % (name, named_in, back_in))
    with open(REPO / "build" / "watch-rows.tsv", "a") as table:
        table.write("%s\t%s\t%.1f\t%.1f\n" % (name, result["breach"]["cause"], named_in, back_in))
    assert result["healthy"] and result["restored"] == "nextn", result
    # NEXTN serves from the known-good the switch kept, which is intact; the watch ended with its restore.
    assert "NEXTN" in host.run(["cat", UNIT]).stdout and healthy(host)
    assert host.run(["cat", STATE + "known-good/sglang.service"]).stdout == kg_unit
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn"
    assert watch_record(host)["outcome"] == "restored"
    return result


def test_a_server_that_crashes_after_its_gates_is_named_and_replaced_by_the_hosts_watch(nextn):
    # DDTREE serves healthy until the row says, then crashes (an illegal memory access on rank 0).
    result = watched_then_failed(nextn, {"crash_when_file": CRASH_FILE}, {}, "a crash after the settle window")
    assert result["breach"]["cause"] == "cuda_error" and result["breach"]["rank"] == "TP0", result["breach"]
    assert "an illegal memory access was encountered" in result["breach"]["evidence"]
    said = status(nextn)
    assert "the watch restored NEXTN at " in said and ": cuda_error on TP0 (" in said, said[-2000:]
    # On the record as rolled back: a re-run of exactly this DDTREE is not retried.
    again = deploy("deploy_ddtree", nextn, **WATCHED)
    assert again.returncode != 0 and "configuration was rolled back on" in " ".join(again.stdout.split())


# The service's environment of the next row: SGLang's own health timeout short, so that a hung
# scheduler's /health_generate answers 503 within seconds (the lab's default 20 s would do too,
# slowly); and a stop that gives up on the hung server after 10 s (systemd's cgroup kill).
QUICK_HEALTH = {"sglang_service_timeout_stop_sec": 10, "sglang_service_environment": {
    "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "SGLANG_HEALTH_CHECK_TIMEOUT": "3"}}


def test_a_scheduler_that_hangs_behind_a_live_http_server_is_replaced_after_its_failed_generations(nextn):
    # Rank 0's scheduler stops answering minutes into serving; the HTTP server lives on (sglang#6624).
    # The play waits for the watch (sglang_watch_wait): the scheduler hangs while it waits.
    result = watched_then_failed(nextn, {"rank_hang": {"rank": 0, "when_file": CRASH_FILE}}, QUICK_HEALTH,
                                 "a dead scheduler behind a live HTTP server", wait=True)
    breach = result["breach"]
    assert breach["cause"] == "generation_failed" and "GET /health_generate answered 503" in breach["evidence"], breach
    assert breach["why"].startswith("3 generations in a row failed since "), breach


def test_a_rank_that_dies_late_is_named_with_torchs_rank_and_replaced(nextn):
    # Rank 3's GPU faults minutes into serving: torch's NCCL watchdog on that rank logs it under its
    # `[rank3]:` prefix and aborts the process; SGLang's subprocess watchdog then ends the server.
    # (The crash row recorded this DDTREE as rolled back: it is retried on purpose.)
    result = watched_then_failed(nextn, {"rank_dies": {"rank": 3, "when_file": CRASH_FILE}},
                                 {"sglang_retry_rolled_back": True}, "a rank that dies late (torch's NCCL watchdog on rank 3)")
    breach = result["breach"]
    assert (breach["cause"], breach["rank"]) == ("cuda_error", "TP3"), breach
    assert breach["evidence"].startswith("[rank3]:[E") and "Process group watchdog thread terminated" in \
        breach["evidence"], breach
    journal = nextn.run(["journalctl", "-u", "sglang.service", "--no-pager", "-o", "cat"]).stdout
    assert "Subprocess scheduler_3 (pid=" in journal and "crashed with exit code -6" in journal


def test_an_accept_length_that_falls_with_the_traffic_is_named_from_the_metrics_and_replaced(nextn):
    # DDTREE passes its gates on the gate's English prompts (about 1.7x NEXTN on Blackwell), then
    # its traffic turns to another language, where its drafter - trained apart from the model -
    # accepts little, while NEXTN's own MTP layer would keep most (lab/sglang_sim/speculative.py).
    # SGLang's /metrics (--enable-metrics) carry the accept length; the watch projects the speed
    # from it and restores NEXTN once it stays under 0.9x NEXTN's for the row's 6 s window.
    try:
        result = watched_then_failed(
            nextn, {}, {"sglang_retry_rolled_back": True, "sglang_service_extra_args": {"enable_metrics": True},
                        "sglang_watch_limits": {"speed_window": 6}},
            "an accept length that falls with the traffic (another language)",
            trigger=lambda: start_other_language_traffic(nextn))
    finally:
        stop_traffic(nextn)
    breach = result["breach"]
    assert breach["cause"] == "slower_than_known_good" and breach["evidence"].startswith("accept length 1."), breach
    assert breach["why"].startswith("slower than the known-good for "), breach
    said = nextn.run(["cat", TRAFFIC_LOG]).stdout.split()
    assert said and "error" not in said[:4], said[:20]
