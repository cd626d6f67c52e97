"""Parsing nvidia-smi csv output, recorded from the two host classes' cards."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError, QUERY_FIELDS, check_failure, cuda_version, gpu_facts, parse_csv,
)

A6000 = """index, name, uuid, memory.total [MiB], memory.used [MiB], compute_cap, pci.bus_id, driver_version
0, NVIDIA RTX A6000, GPU-5b1d2c4e-a6a6-4c1e-0000-1d2e3f4a5b60, 49140, 4, 8.6, 00000000:01:00.0, 580.105.08
1, NVIDIA RTX A6000, GPU-5b1d2c4e-a6a6-4c1e-0001-1d2e3f4a5b61, 49140, 4, 8.6, 00000000:02:00.0, 580.105.08
"""
WITH_UNITS_ANY_ORDER = """memory.total [MiB], compute_cap, name, index
97887 MiB, 12.0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 0
"""
NOHEADER = "0, NVIDIA RTX A6000, 49140\n"


def test_header_with_units_in_header():
    devices = parse_csv(A6000)
    assert devices[1] == {"index": 1, "name": "NVIDIA RTX A6000", "uuid": "GPU-5b1d2c4e-a6a6-4c1e-0001-1d2e3f4a5b61",
                          "memory_total_mib": 49140, "memory_used_mib": 4, "compute_capability": "8.6",
                          "pci_bus_id": "00000000:02:00.0", "driver_version": "580.105.08"}


def test_fields_in_any_order_with_units_on_values():
    assert parse_csv(WITH_UNITS_ANY_ORDER) == [{"memory_total_mib": 97887, "compute_capability": "12.0",
                                                "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                                "index": 0}]


def test_noheader_needs_the_field_list():
    assert parse_csv(NOHEADER, fields=["index", "name", "memory.total"])[0]["memory_total_mib"] == 49140


def test_facts():
    facts = gpu_facts(parse_csv(A6000), cuda="13.0")
    assert facts["count"] == 2 and facts["model"] == "NVIDIA RTX A6000"
    assert facts["total_memory_mib"] == 98280 and facts["driver_version"] == "580.105.08"
    assert facts["cuda_version"] == "13.0" and "driver_version" not in facts["devices"][0]


def test_mixed_models_have_no_single_model():
    mixed = A6000 + "2, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-x, 97887, 5, 12.0, 00000000:18:00.0, 580.105.08\n"
    assert gpu_facts(parse_csv(mixed))["model"] is None


def test_query_asks_for_every_field_it_parses():
    assert parse_csv(", ".join(QUERY_FIELDS) + "\n") == []


@pytest.mark.parametrize("rc, out, words", [
    (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
        "latest NVIDIA driver is installed and running.\n", "could not talk to the NVIDIA driver"),
    (6, "No devices were found\n", "found no GPUs"),
    (2, 'Field "bogus" is not a valid field to query.\n', "exited 2"),
])
def test_failures(rc, out, words):
    with pytest.raises(NvidiaSmiError, match=words):
        check_failure(rc, out)


@pytest.mark.parametrize("text", ["", "index, name\n0, a, b\n", "index, bogus.field\n0, 1\n"])
def test_bad_output(text):
    with pytest.raises(NvidiaSmiError):
        parse_csv(text)


def test_cuda_version_from_table():
    assert cuda_version("| NVIDIA-SMI 580.105.08   Driver Version: 580.105.08     CUDA Version: 13.0     |") == "13.0"
    assert cuda_version("nothing") is None
