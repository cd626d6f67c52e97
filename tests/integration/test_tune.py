"""playbooks/tune.yml on the lab: each class's canary, out of the real gateway's rotation,
tries DDTree then DFlash from the top of the class's bounds down, each next envelope chosen
from what the last start said, and serves its known-good again at the end; the other host of
the a6000 class is never touched, and a bounded load through the gateway sees no failure.
What fits is the stand-in's memory model's (lab/sglang_sim/memory.py) and the speeds its
table's (lab/sglang_sim/server.py TOKEN_RATES): on the a6000, DDTree and DFlash fit only with
fewer running requests and DFlash wins; on the Blackwell, DDTree wins at about 1.24x DFlash."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.integration.ansible_run import LAB_INVENTORY, run_playbook
from tests.integration.deploying import invocation, report
from tests.integration.gateway_lab import Load, all_ready
from tests.integration.labhost import REPORTS
from tests.integration.test_gateway import deploy_through, fleet  # noqa: F401  pylint: disable=unused-import

pytestmark = pytest.mark.xdist_group("gateway")   # (one gateway port on the controller)

UNIT = "/etc/systemd/system/sglang.service"


def test_a_tune_finds_each_class_winner_on_its_canary_and_leaves_every_host_serving_its_known_good(fleet, tmp_path):
    ct129, ct130, ct200 = (fleet["hosts"][name] for name in ("ct129", "ct130", "ct200"))
    before = dict((h.name, (invocation(h), h.run(["cat", UNIT]).stdout)) for h in (ct129, ct130, ct200))
    results = tmp_path / "tuned"

    # Check mode says where each search starts and touches nothing.
    proc = run_playbook("playbooks/tune.yml", limit="ct129,ct130,ct200", check_diff=True,
                        inventory=(LAB_INVENTORY, str(fleet["inventories"]["gateway"])),
                        extra_vars={"sglang_tune_result_dir": str(results)})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "a6000 ddtree: ctx 131072, req 16, graphs 16, mem 0.88" in proc.stdout, proc.stdout[-3000:]
    assert "blackwell dflash: ctx 131072, req 64, graphs 64, mem 0.85" in proc.stdout
    assert not results.exists() and all(invocation(h) == before[h.name][0] for h in (ct129, ct130, ct200))

    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "tune", "ct129,ct130,ct200", sglang_tune_result_dir=str(results))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert load.failed == 0 and load.sent > 20, (load.sent, load.failed, load.errors[:3])

    a6000 = json.loads((results / "a6000.json").read_text())
    tries = [(a["variant"], a["envelope"]["max_running_requests"], a["outcome"], a["cause"]) for a in a6000["attempts"]]
    assert tries == [("ddtree", 16, "rolled_back", "kv_pool_oom"), ("ddtree", 8, "rolled_back", "kv_pool_oom"),
                     ("ddtree", 4, "deployed", None), ("dflash", 16, "rolled_back", "kv_pool_oom"),
                     ("dflash", 8, "rolled_back", "kv_pool_oom"), ("dflash", 4, "deployed", None)], tries
    assert "halving max_running_requests" in a6000["attempts"][1]["why"]
    assert a6000["winner"]["variant"] == "dflash" and a6000["winner"]["ratio"] > 1.2, a6000["winner"]
    ddtree = next(r for r in a6000["rows"] if r["variant"] == "ddtree")
    assert ddtree["status"] == "fits" and ddtree["ratio"] < 1.0, ddtree   # fits reduced, slower than NEXTN

    blackwell = json.loads((results / "blackwell.json").read_text())
    assert [(a["variant"], a["outcome"]) for a in blackwell["attempts"]] == [("ddtree", "deployed"), ("dflash", "deployed")]
    assert blackwell["winner"]["variant"] == "ddtree", blackwell["winner"]
    speed = dict((r["variant"], r["tok_s"]) for r in blackwell["rows"])
    # The stand-in's table says 186/150 = 1.24; each figure is a measurement on busy cores, which
    # the speed gate holds to 10 % (test_perf_gate: two measurements agree within ten percent), so
    # their ratio is 1.24 within x 1.1/0.9 either way (1.338 was measured under make test).
    assert 1.24 * 0.9 / 1.1 < speed["ddtree"] / speed["dflash"] < 1.24 * 1.1 / 0.9, speed
    assert "blackwell  ddtree   ctx 131072, req 64, graphs 64, mem 0.85" in proc.stdout

    # Every host serves what it served before: the canaries their known-good (the same unit,
    # healthy, back in rotation), ct130 never restarted; a failed try's report names its cause.
    assert invocation(ct130) == before["ct130"][0], "the rest of the class is not touched"
    for host in (ct129, ct200):
        assert host.run(["cat", UNIT]).stdout == before[host.name][1], host.name
    assert all_ready(fleet["gateway"], 3)
    summary = json.loads((REPORTS / "fleet-summary.json").read_text())["hosts"]
    assert [(h["host"], h["after"], h["outcome"], h["cause"]) for h in summary] == [
        ("ct129", "nextn", "tuned", "winner dflash"), ("ct200", "nextn", "tuned", "winner ddtree")], summary
    # The canary's last deploy report is its last try's; its deploy record is the known-good's again.
    assert (report(ct129)["variant"], report(ct129)["outcome"]) == ("dflash", "deployed"), report(ct129)
    assert json.loads(ct129.run(["cat", "/etc/sglang/deployed.json"]).stdout)["variant"] == "nextn"

    # A deploy from what was learned: a class without a result stops the run before any host
    # is touched; with both, each class runs its winner with its envelope, canary first.
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "a6000.json").write_text((results / "a6000.json").read_text())
    running = dict((h.name, invocation(h)) for h in (ct129, ct130, ct200))
    proc = deploy_through(fleet, "gateway", "deploy", "ct129,ct130,ct200", sglang_envelope_from="tuned",
                          sglang_tune_result_dir=str(partial), sglang_canary=True)
    assert proc.returncode != 0 and "class blackwell has no tune result in %s (blackwell.json)" % partial in proc.stdout
    assert dict((h.name, invocation(h)) for h in (ct129, ct130, ct200)) == running, "nothing was touched"

    # (sglang_serial=0: the two classes' canaries in one batch, then ct130; ct130 serves meanwhile.)
    with Load(fleet["gateway"]) as load:
        proc = deploy_through(fleet, "gateway", "deploy", "ct129,ct130,ct200", sglang_envelope_from="tuned",
                              sglang_tune_result_dir=str(results), sglang_canary=True, sglang_serial=0)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert load.failed == 0, (load.sent, load.failed, load.errors[:3])
    for host, variant, requests in ((ct129, "dflash", 4), (ct130, "dflash", 4), (ct200, "ddtree", 64)):
        unit = host.run(["cat", UNIT]).stdout
        assert (report(host)["outcome"], report(host)["variant"]) == ("deployed", variant), report(host)["diagnosis"]
        assert "--max-running-requests %d " % requests in unit, unit
    # Canaries on different variants switch side by side, not one after the other.
    spans = [deploy_span(report(host)) for host in (ct129, ct200)]
    overlap = min(span[1] for span in spans) - max(span[0] for span in spans)
    assert overlap > min(end - start for start, end in spans) / 2, spans

    # A variant ladder: on the a6000 canary DDTree at the class envelope is not retried (it
    # rolled back there in the tune's first try), so the canary goes down to NEXTN, the next
    # rung, before the rest of its class moves, to NEXTN too; the Blackwell canary keeps DDTree
    # (it runs it already). The summary says why the a6000 class ended there.
    proc = deploy_through(fleet, "gateway", "deploy", "ct129,ct130,ct200", sglang_canary=True,
                          sglang_variant_ladder=["ddtree", "nextn"])
    assert proc.returncode == 0, proc.stdout[-4000:]
    summary = json.loads((REPORTS / "fleet-summary.json").read_text())["hosts"]
    assert [(h["host"], h["before"], h["after"], h["outcome"], h["cause"]) for h in summary] == [
        ("ct129", "dflash", "nextn", "deployed", "after ddtree not retried (kv_pool_oom)"),
        ("ct130", "dflash", "nextn", "deployed", None), ("ct200", "ddtree", "ddtree", "unchanged", None)], summary
    assert "after ddtree not retried (kv_pool_oom)" in proc.stdout
    assert all_ready(fleet["gateway"], 3)


def deploy_span(said):
    """(start, end) of a deploy in seconds since the epoch, from its report (`time` is its end)."""
    end = datetime.strptime(said["time"], "%Y-%m-%dT%H:%M:%SZ").timestamp()
    return end - said["seconds"], end
