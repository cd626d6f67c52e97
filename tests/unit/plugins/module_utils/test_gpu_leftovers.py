"""What a stopped unit left behind on the GPUs (module_utils/gpu_leftovers.py) as data tables."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.gpu_leftovers import (
    describe_leftovers, leftovers, unlisted_memory,
)

UNIT = "sglang.service"


def card(index, used):
    return {"index": index, "memory_used_mib": used, "memory_total_mib": 49140}


def proc(pid, index, mib, unit, title=None):
    return {"pid": pid, "name": "python3", "gpu_index": index, "used_memory_mib": mib, "unit": unit, "title": title}


CASES = [
    # (id, remaining in the unit, devices, GPU processes, tolerance, released, processes' PIDs, GPUs held)
    ("nothing left: the driver's own few MiB", [], [card(0, 4), card(1, 4)], [], 1024, True, [], []),
    ("another tenant's memory is listed: not ours", [], [card(0, 60004)], [proc(9, 0, 60000, "other.service")], 1024,
     True, [], []),
    ("memory used by no process: a teardown not finished", [], [card(0, 44036), card(1, 4)], [], 1024, False, [],
     [{"index": 0, "unlisted_mib": 44036}]),
    ("a display server's memory under the tolerance", [], [card(0, 700)], [], 1024, True, [], []),
    ("a process still in the unit", [{"pid": 812, "name": "python3"}], [card(0, 4)], [], 1024, False, [812], []),
    ("a GPU process nvidia-smi names in the unit", [], [card(0, 40004)], [proc(813, 0, 40000, UNIT)], 1024, False,
     [813], []),
    ("each rank of the unit, on its own GPU", [], [card(0, 40004), card(1, 40004)],
     [proc(820, 0, 40000, UNIT, "sglang::scheduler_TP0"), proc(821, 1, 40000, UNIT, "sglang::scheduler_TP1")], 1024,
     False, [820, 821], []),
    ("an SGLang rank outside any unit (its server is gone)", [], [card(1, 40004)],
     [proc(830, 1, 40000, None, "sglang::scheduler_TP1")], 1024, False, [830], []),
    ("another unit's SGLang rank is a tenant, not a leftover", [], [card(1, 40004)],
     [proc(840, 1, 40000, "other.service", "sglang::scheduler_TP1")], 1024, True, [], []),
]


@pytest.mark.parametrize("remaining, devices, processes, tolerance, released, pids, gpus", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_leftovers(remaining, devices, processes, tolerance, released, pids, gpus):
    found = leftovers(UNIT, remaining, devices, processes, tolerance)
    assert found["released"] is released
    assert [p["pid"] for p in found["processes"]] == pids and found["gpus"] == gpus


def test_a_rank_left_outside_the_unit_is_named_by_pid_and_title_with_what_to_do():
    found = leftovers(UNIT, [], [card(1, 40004)], [proc(830, 1, 40000, None, "sglang::scheduler_TP1")], 1024)
    said = describe_leftovers(UNIT, found, 60)
    assert ("PID 830 (sglang::scheduler_TP1, no unit), an SGLang rank outside sglang.service whose server is gone, "
            "still holds GPU memory") in said
    assert "kill -9 830, then run playbooks/rollback.yml" in said


def test_unlisted_memory_never_goes_below_zero():
    assert unlisted_memory([card(0, 10)], [proc(1, 0, 50, "x.service")]) == {0: 0}


def test_the_diagnosis_says_what_is_left_and_what_to_do():
    found = leftovers(UNIT, [{"pid": 812, "name": "python3"}], [card(0, 44036)], [], 1024)
    said = describe_leftovers(UNIT, found, 60.2)
    assert said.startswith("60 s after sglang.service stopped, PID 812 (python3, unit sglang.service) still runs in "
                           "it; GPU 0 has 44036 MiB used by no process.")
    assert "not started into GPUs that are not free: kill -9 812, then run playbooks/rollback.yml" in said
    memory_only = describe_leftovers(UNIT, leftovers(UNIT, [], [card(0, 44036)], [], 1024), 60)
    assert "reset the GPUs (nvidia-smi --gpu-reset) or reboot, then run playbooks/rollback.yml" in memory_only
    assert describe_leftovers(UNIT, leftovers(UNIT, [], [card(0, 4)], [], 1024), 0.1) == \
        "sglang.service left nothing behind"
