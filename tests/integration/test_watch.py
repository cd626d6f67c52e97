"""The watch after the gates: a DDTREE switch on ct200 passes its gates and is confirmed, and the
host goes on watching it by itself (sglang_watch_duration). When the server fails later - a crash,
a hung scheduler, a health request that hangs, a rank that dies, traffic on which it is slower
than NEXTN - the host names it and restores NEXTN, the known-good the switch kept, with no
controller; status.yml says what the watch does and what it did, and the configuration is on
the record as rolled back.

Each row runs behind the real smg (its own retries on, as operators run it), in front of ct200
and ct129 (NEXTN) on their lab addresses, under a bounded load through it: the watch takes ct200
out of rotation before its restore and puts it back after; no request fails but those in flight
on the failing server (sent before it died, or before it left the rotation)."""
from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.ansible_run import LAB_INVENTORY, REPO, run_playbook
from tests.integration.deploying import (
    CRASH_FILE, OTHER_LANGUAGE_PROMPT, STATE, UNIT, healthy, main_process_exited, report, reset_service, watch_record,
    watch_restored, watching)
from tests.integration.gateway_lab import PORT, Load, all_ready, gateway, host_inventory, workers
from tests.integration.labhost import labctl

pytestmark = pytest.mark.xdist_group("watch")

INTERVAL_S = 2
WATCHED = {"sglang_watch_duration": 600, "sglang_watch_interval": INTERVAL_S}
# A hang guard: two probes, the restore of the known-good and its settle, on two busy cores.
RESTORED_WITHIN_S = 120


CLASSES = {"ct200": "blackwell", "ct129": "a6000"}
# The inventory of the module's hosts behind its gateway (written by `serving`).
BEHIND = {}


def deploy(playbook, host, **extra_vars):
    """A playbook on `host`, as the inventory behind the gateway places it."""
    return run_playbook("playbooks/%s.yml" % playbook, limit=host.name, extra_vars=extra_vars or None,
                        inventory=(LAB_INVENTORY, BEHIND["inventory"]))


@pytest.fixture(scope="module")
def serving(lab, tmp_path_factory):
    """ct200 and ct129 on NEXTN on their lab addresses, behind smg with its retries on."""
    hosts = [lab[name] for name in CLASSES]
    addresses = dict((name, labctl("address", name).stdout.strip()) for name in CLASSES)
    placed = dict((name, (addresses[name], CLASSES[name])) for name in CLASSES)
    folder = tmp_path_factory.mktemp("watch")
    for host in hosts:
        reset_service(host)
    plain = folder / "plain.yml"
    plain.write_text(host_inventory(placed))
    proc = run_playbook("playbooks/deploy_nextn.yml", limit=",".join(CLASSES), extra_vars={"sglang_serial": 0},
                        inventory=(LAB_INVENTORY, str(plain)))
    assert proc.returncode == 0, proc.stdout[-3000:]
    try:
        with gateway(addresses, folder / "smg.log", port=PORT + 4, retries=True) as url:
            BEHIND["inventory"] = str(folder / "gateway.yml")
            (folder / "gateway.yml").write_text(host_inventory(placed, gateway=url))
            yield {"host": lab["ct200"], "gateway": url}
    finally:
        for host in hosts:
            reset_service(host)


@pytest.fixture
def nextn(serving):
    """NEXTN serving on ct200, healthy and in rotation, no fault, and the guard's last word of an
    earlier row gone."""
    host = serving["host"]
    host.run("rm -f /etc/inferops-lab/faults.json %s %sguard.json" % (CRASH_FILE, STATE))
    if not (healthy(host) and "NEXTN" in host.run(["cat", UNIT]).stdout):
        assert deploy("deploy_nextn", host).returncode == 0
    assert all_ready(serving["gateway"], 2)
    return serving


def status(host):
    proc = run_playbook("playbooks/status.yml", limit=host.name)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return " ".join(proc.stdout.split())


def watching_ddtree(host):
    return watching(host, "ddtree")


def watched_then_failed(serving, faults, extra, name, wait=False, trigger=None):
    """DDTREE deployed with the watch on and confirmed under the load through the gateway, its late
    failure set off (the row's file, or `trigger(load)`): the watch's result once its restore ended,
    checked to have brought NEXTN back, intact, true and in rotation, with no request failed but
    those in flight on the failing server. With `wait` the play waits for the watch
    (sglang_watch_wait): the failure is set off while it waits, and its report says how it ended."""
    host = serving["host"]
    kg_unit = host.run(["cat", UNIT]).stdout
    host.put("/etc/inferops-lab/faults.json", json.dumps(dict(faults, only_algorithm="DDTREE")))
    with Load(serving["gateway"]) as load:
        result, failed_at = failed_and_restored(host, load, extra, wait, trigger)
        in_rotation(host, serving["gateway"])
    # Out of the rotation from the moment it died (a crash), or the watch drained it (a server
    # that lives on): what failed was sent before.
    died = main_process_exited(host, failed_at - 1) or float("inf")
    gone = min(died, result["pending"]["gateway"]["drained_at"])
    late = load.failed_after(gone)
    named_in, back_in = result["time"] - failed_at, result["time"] + result["seconds"] - failed_at
    print("\n%s -> named by the watch: %.1f s; the known-good healthy again: %.1f s; through smg: sent %d, failed %d, "
          "sent after the server failed and failed %d" % (name, named_in, back_in, load.sent, load.failed, len(late)))
    with open(REPO / "build" / "watch-rows.tsv", "a") as table:
        table.write("%s\t%s\t%.1f\t%.1f\t%d/%d\n" % (
            name, result["breach"]["cause"], named_in, back_in, load.failed, load.sent))
    assert not late and load.sent > 20, (load.sent, load.failed, late[:3])
    assert result["healthy"] and result["restored"] == "nextn" and result["rejoined"], result
    # NEXTN serves from the known-good the switch kept, which is intact; the watch ended with its restore.
    assert "NEXTN" in host.run(["cat", UNIT]).stdout and healthy(host) and serves_nextn(host)
    assert host.run(["cat", STATE + "known-good/sglang.service"]).stdout == kg_unit
    assert json.loads(host.run(["cat", STATE + "deployed.json"]).stdout)["variant"] == "nextn"
    assert watch_record(host)["outcome"] == "restored"
    return result


def in_rotation(host, url):
    """Both workers back behind the gateway, ready; else what the gateway says of them."""
    try:
        host.wait_for(lambda: all_ready(url, 2), 60, 0.5, "ct200 back in rotation")
    except AssertionError as exc:
        raise AssertionError("%s: the gateway's workers %s" % (exc, workers(url))) from None


def serves_nextn(host):
    """The server that runs is NEXTN's (its process's command line), not only its files."""
    main = host.show("sglang.service", "MainPID")["MainPID"]
    return "--speculative-algorithm NEXTN" in host.run(["cat", "/proc/%s/cmdline" % main]).stdout.replace("\0", " ")


def failed_and_restored(host, load, extra, wait, trigger):
    """The watched deploy, the failure set off once the watch runs, and the watch's restore:
    (guard.json's result, when the failure was set off)."""
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
            trigger(load)
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
    return host.wait_for(lambda: watch_restored(host), RESTORED_WITHIN_S, 0.5, "the watch's restore"), failed_at


def test_a_server_that_crashes_after_its_gates_is_named_and_replaced_by_the_hosts_watch(nextn):
    # DDTREE serves healthy until the row says, then crashes (an illegal memory access on rank 0).
    result = watched_then_failed(nextn, {"crash_when_file": CRASH_FILE}, {}, "a crash after the settle window")
    assert result["breach"]["cause"] == "cuda_error" and result["breach"]["rank"] == "TP0", result["breach"]
    assert "an illegal memory access was encountered" in result["breach"]["evidence"]
    said = status(nextn["host"])
    assert "the watch restored NEXTN at " in said and ": cuda_error on TP0 (" in said, said[-2000:]
    # On the record as rolled back: a re-run of exactly this DDTREE is not retried.
    again = deploy("deploy_ddtree", nextn["host"], **WATCHED)
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


def test_a_health_request_that_hangs_is_a_failed_generation_and_the_server_is_replaced(nextn):
    # The main process's event loop stops turning minutes into serving (a synchronous call blocks
    # it, sglang#30770, #40809): every request is accepted and none is answered, nothing is
    # logged, the schedulers run on. The watch's generation waits SGLang's own health timeout (3 s
    # here) and its margin, then calls it failed; three in a row restore NEXTN. (uvicorn's SIGTERM
    # handler runs on the stopped loop; the stop's SIGTERM to the control group ends the schedulers,
    # and SGLang's subprocess watchdog, a thread of its own, the rest.)
    # (The crash row recorded this DDTREE as rolled back: it is retried on purpose.)
    result = watched_then_failed(nextn, {"tokenizer_hang": {"when_file": CRASH_FILE}},
                                 dict(QUICK_HEALTH, sglang_retry_rolled_back=True), "a health request that hangs")
    breach = result["breach"]
    assert breach["cause"] == "generation_failed" and breach["why"].startswith("3 generations in a row failed "), breach
    assert re.match(r"GET /health_generate: no answer in 8\.\d s ", breach["evidence"]), breach


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
    journal = nextn["host"].run(["journalctl", "-u", "sglang.service", "--no-pager", "-o", "cat"]).stdout
    assert "Subprocess scheduler_3 (pid=" in journal and "crashed with exit code -6" in journal


def test_an_accept_length_that_falls_with_the_traffic_is_named_from_the_metrics_and_replaced(nextn):
    # DDTREE passes its gates on the gate's English prompts (about 1.7x NEXTN on Blackwell), then
    # the traffic through the gateway turns to another language, where its drafter - trained apart
    # from the model - accepts little, while NEXTN's own MTP layer would keep most
    # (lab/sglang_sim/speculative.py). SGLang's /metrics (--enable-metrics) carry the accept
    # length; the watch projects the speed from it and restores NEXTN once it stays under 0.9x
    # NEXTN's for the row's 6 s window. The server lives on: no request may fail at all.
    result = watched_then_failed(
        nextn, {}, {"sglang_retry_rolled_back": True, "sglang_service_extra_args": {"enable_metrics": True},
                    "sglang_watch_limits": {"speed_window": 6}},
        "an accept length that falls with the traffic (another language)",
        trigger=lambda load: setattr(load, "prompt", OTHER_LANGUAGE_PROMPT))
    breach = result["breach"]
    assert breach["cause"] == "slower_than_known_good", breach
    accept = float(re.match(r"accept length ([\d.]+) ", breach["evidence"]).group(1))
    assert accept < 3.0 and breach["why"].startswith("slower than the known-good for "), breach
