"""gpu_facts against the lab's nvidia-smi: facts per class, and the driver's failures."""
from __future__ import annotations

import json

import pytest

from tests.integration.ansible_run import run_module
from tests.integration.labhost import labctl


@pytest.mark.parametrize("host, count, model, mib, cap", [
    ("ct129", 2, "NVIDIA RTX A6000", 49140, "8.6"),
    ("ct200", 8, "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "12.0"),
])
def test_facts_per_class(lab, host, count, model, mib, cap):
    res = run_module(host, "inferops.sglang.gpu_facts", {})
    assert not res.get("failed"), res.get("msg")
    gpu = res["ansible_facts"]["gpu"]
    assert gpu["count"] == count and gpu["model"] == model
    assert gpu["total_memory_mib"] == count * mib
    assert gpu["driver_version"] == "580.105.08" and gpu["cuda_version"] == "13.0"
    assert [d["index"] for d in gpu["devices"]] == list(range(count))
    assert {d["compute_capability"] for d in gpu["devices"]} == {cap}
    assert all(d["uuid"].startswith("GPU-") for d in gpu["devices"])
    assert "elapsed" in res and res["changed"] is False


@pytest.mark.parametrize("change, words", [
    ({"driver_error": True}, "could not talk to the NVIDIA driver"),
    ({"gpus": []}, "found no GPUs"),
])
def test_driver_failures_fail_clearly(ct129, restore_gpus, change, words):
    gpus = ct129.gpus()
    gpus.update(change)
    ct129.put("/etc/inferops-lab/gpus.json", json.dumps(gpus))
    res = run_module("ct129", "inferops.sglang.gpu_facts", {})
    assert res.get("failed") and words in res["msg"]


def test_missing_nvidia_smi(ct129):
    res = run_module("ct129", "inferops.sglang.gpu_facts", {"nvidia_smi": "nvidia-smi-not-installed"})
    assert res.get("failed") and "nvidia-smi not found" in res["msg"]


def test_check_mode_reads_too(ct200):
    res = run_module("ct200", "inferops.sglang.gpu_facts", {}, check=True)
    assert res["ansible_facts"]["gpu"]["count"] == 8


def test_the_processes_holding_gpu_memory_are_named_with_their_unit(ct129, tenants):
    """A tenant under a transient unit and one under none, each on its own card: gpu_facts
    names both (PID, memory, card, unit or null) and each card's free memory drops by theirs."""
    before = {d["index"]: d["memory_free_mib"] for d in run_module("ct129", "inferops.sglang.gpu_facts", {})[
        "ansible_facts"]["gpu"]["devices"]}
    in_unit, no_unit = tenants(ct129, "0", 1000), tenants(ct129, "1", 2000, unit=False)
    gpu = run_module("ct129", "inferops.sglang.gpu_facts", {})["ansible_facts"]["gpu"]
    procs = {p["pid"]: p for p in gpu["processes"]}
    assert procs[in_unit]["gpu_index"] == 0 and procs[in_unit]["used_memory_mib"] == 1000
    assert procs[in_unit]["unit"].startswith("inferops-tenant-") and procs[in_unit]["unit"].endswith(".service")
    assert procs[no_unit]["gpu_index"] == 1 and procs[no_unit]["used_memory_mib"] == 2000
    assert procs[no_unit]["unit"] is None and procs[no_unit]["name"].endswith("python3")
    assert {d["index"]: d["memory_free_mib"] for d in gpu["devices"]} == {0: before[0] - 1000, 1: before[1] - 2000}
    ct129.run(["kill", "-KILL", str(no_unit)])   # however a process exits, its memory comes back
    gpu = run_module("ct129", "inferops.sglang.gpu_facts", {})["ansible_facts"]["gpu"]
    assert no_unit not in {p["pid"] for p in gpu["processes"]} and gpu["devices"][1]["memory_free_mib"] == before[1]


def test_a_tenant_that_does_not_fit_fails_as_cuda_does(ct129, tenants):
    free = run_module("ct129", "inferops.sglang.gpu_facts", {})["ansible_facts"]["gpu"]["devices"][0]["memory_free_mib"]
    proc = labctl("occupy", "ct129", "--gpus", "0", "--mib", str(free + 1), check=False)
    assert proc.returncode != 0 and "CUDA error: out of memory" in proc.stderr, proc.stderr
