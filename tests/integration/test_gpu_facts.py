"""gpu_facts against the lab's nvidia-smi: facts per class, and the driver's failures."""
from __future__ import annotations

import json

import pytest

from tests.integration.ansible_run import run_module


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
