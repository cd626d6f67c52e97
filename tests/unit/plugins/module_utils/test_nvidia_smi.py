"""Parsing nvidia-smi csv output, recorded from the two host classes' cards."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.nvidia_smi import (
    APP_FIELDS, NvidiaSmiError, QUERY_FIELDS, apps_command, attach_processes, check_failure, cuda_version,
    gpu_facts, parse_compute_apps, parse_csv,
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


UUID0, UUID1 = "GPU-5b1d2c4e-a6a6-4c1e-0000-1d2e3f4a5b60", "GPU-5b1d2c4e-a6a6-4c1e-0001-1d2e3f4a5b61"
APPS = [
    # (id, nvidia-smi --query-compute-apps output, fields when noheader, expected rows)
    ("header only: no process", "pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id\n", None, []),
    ("nothing at all (noheader, no process)", "", list(APP_FIELDS), []),
    ("header with units, values with units",
     "pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id\n"
     "3386, /usr/bin/python3, 45000 MiB, %s, 00000000:01:00.0\n" % UUID0, None,
     [{"pid": 3386, "name": "/usr/bin/python3", "used_memory_mib": 45000, "gpu_uuid": UUID0,
       "gpu_bus_id": "00000000:01:00.0"}]),
    ("fields in another order, nounits, two cards",
     "used_gpu_memory [MiB], pid\n45000, 3386\n1000, 3386\n", None,
     [{"used_memory_mib": 45000, "pid": 3386}, {"used_memory_mib": 1000, "pid": 3386}]),
    ("noheader with the asked fields (aliases)", "12, python, 300, %s\n" % UUID1, list(APP_FIELDS),
     [{"pid": 12, "name": "python", "used_memory_mib": 300, "gpu_uuid": UUID1}]),
    ("memory not available is None", "pid, used_gpu_memory [MiB]\n77, [N/A]\n", None,
     [{"pid": 77, "used_memory_mib": None}]),
    ("a name with ', ' in it stays whole", "pid, process_name, used_gpu_memory [MiB]\n5, my, tenant, 10\n", None,
     [{"pid": 5, "name": "my, tenant", "used_memory_mib": 10}]),
]


@pytest.mark.parametrize("text, fields, expected", [c[1:] for c in APPS], ids=[c[0] for c in APPS])
def test_parse_compute_apps(text, fields, expected):
    assert parse_compute_apps(text, fields) == expected


@pytest.mark.parametrize("text", ["pid, colour\n1, red\n", "pid, used_gpu_memory [MiB]\n1\n"],
                         ids=["unknown field", "too few values"])
def test_bad_compute_apps_output(text):
    with pytest.raises(NvidiaSmiError):
        parse_compute_apps(text)


def test_apps_command_asks_for_what_the_parser_reads():
    assert apps_command("nvidia-smi")[1] == "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
    assert parse_compute_apps(", ".join(APP_FIELDS) + "\n") == []


def test_processes_carry_their_card_unit_and_title():
    facts = gpu_facts([{"index": 0, "uuid": UUID0}, {"index": 1, "uuid": UUID1}])
    rows = [{"pid": 9, "gpu_uuid": UUID1, "used_memory_mib": 60000}, {"pid": 10, "gpu_uuid": "GPU-gone"}]
    got = attach_processes(facts, rows, {9: "run-u3.service"}, {9: "sglang::scheduler_TP1", 10: ""})["processes"]
    assert got == [{"pid": 9, "gpu_uuid": UUID1, "used_memory_mib": 60000, "gpu_index": 1, "unit": "run-u3.service",
                    "title": "sglang::scheduler_TP1"},
                   {"pid": 10, "gpu_uuid": "GPU-gone", "gpu_index": None, "unit": None, "title": None}]
