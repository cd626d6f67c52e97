"""The lab's fake nvidia-smi answers as each class's real cards would."""
from __future__ import annotations

import json

import pytest

CARDS = {
    # host: (count, name, memory.total MiB, compute capability, power limit W)
    "ct129": (2, "NVIDIA RTX A6000", 49140, "8.6", "300.00"),
    "ct200": (8, "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "12.0", "600.00"),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_query_with_header_and_units(lab, name):
    count, model, mib, cap, watts = CARDS[name]
    out = lab[name].run("nvidia-smi --query-gpu=index,name,memory.total,compute_cap,power.limit "
                        "--format=csv").stdout.splitlines()
    assert out[0] == "index, name, memory.total [MiB], compute_cap, power.limit [W]"
    assert len(out) == count + 1
    assert out[1] == "0, %s, %d MiB, %s, %s W" % (model, mib, cap, watts)


@pytest.mark.parametrize("name", sorted(CARDS))
def test_query_fields_in_any_order_noheader_nounits(lab, name):
    count, model, mib, cap = CARDS[name][:4]
    out = lab[name].run("nvidia-smi --query-gpu=compute_cap,memory.free,memory.used,memory.total,"
                        "uuid,pci.bus_id,driver_version,name,index --format=csv,noheader,nounits").stdout
    rows = [r.split(", ") for r in out.splitlines()]
    assert len(rows) == count
    for i, row in enumerate(rows):
        assert row[0] == cap
        assert int(row[1]) + int(row[2]) == int(row[3]) == mib
        assert row[4].startswith("GPU-") and len(row[4]) == 40
        assert row[5].startswith("00000000:")
        assert row[6] == "580.105.08"
        assert row[7] == model and row[8] == str(i)
    assert len({r[4] for r in rows}) == count, "UUIDs must be unique"


@pytest.mark.parametrize("name", sorted(CARDS))
def test_list_and_table(lab, name):
    count, model, mib = CARDS[name][:3]
    listing = lab[name].run("nvidia-smi -L").stdout.splitlines()
    assert len(listing) == count
    assert listing[0].startswith("GPU 0: %s (UUID: GPU-" % model)
    table = lab[name].run("nvidia-smi").stdout
    assert "Driver Version: 580.105.08" in table and "CUDA Version: 13.0" in table
    assert table.count("%dMiB" % mib) == count
    widths = {len(line) for line in table.splitlines()[1:] if line}
    assert widths == {91}, "every table line is as wide as the real tool's"


def test_unknown_field_is_rejected_like_nvidia_smi(ct129):
    proc = ct129.run("nvidia-smi --query-gpu=name,clocks.bogus --format=csv", check=False)
    assert proc.returncode == 2
    assert proc.stdout.startswith('Field "clocks.bogus" is not a valid field to query.')


def test_gpu_file_changes_what_the_host_has(ct129, restore_gpus):
    gpus = ct129.gpus()
    gpus["gpus"] = gpus["gpus"][:1]
    ct129.put("/etc/inferops-lab/gpus.json", json.dumps(gpus))
    assert ct129.run("nvidia-smi -L").stdout.count("GPU ") == 1


@pytest.mark.parametrize("change, code, text", [
    ({"driver_error": True}, 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
    ({"gpus": []}, 6, "No devices were found"),
])
def test_driver_failures(ct129, restore_gpus, change, code, text):
    gpus = ct129.gpus()
    gpus.update(change)
    ct129.put("/etc/inferops-lab/gpus.json", json.dumps(gpus))
    proc = ct129.run("nvidia-smi --query-gpu=name --format=csv", check=False)
    assert proc.returncode == code
    assert proc.stdout.startswith(text)
