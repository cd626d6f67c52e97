"""What stops a deploy before the host changes (module_utils/preflight.py: the sglang_preflight
action's verdict), as a data table:
every problem is named at once, in the words an operator acts on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.preflight import preflight

REPO = Path(__file__).resolve().parents[4]
MODELS = REPO / "lab" / "image" / "rootfs" / "models"
MODEL = "/models/Qwen3.6-27B"
DRAFT = "/models/Qwen3.6-27B-DFlash"
CONFIGS = {MODEL: json.loads((MODELS / "Qwen3.6-27B" / "config.json").read_text()),
           DRAFT: json.loads((MODELS / "Qwen3.6-27B-DFlash" / "config.json").read_text())}
BLACKWELL = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
SM = {"fa3": ["8.0", "8.6", "8.7", "8.9", "9.0"], "trtllm_mha": ["9.0", "10.0", "12.0"]}


def gpus(count, name=BLACKWELL, mib=97887, cc="12.0", processes=()):
    return {"count": count, "devices": [{"name": name, "memory_total_mib": mib, "compute_capability": cc}] * count,
            "processes": list(processes)}


def tenant(pid, index, mib=60000, unit=None, name="/usr/bin/python3"):
    return {"pid": pid, "name": name, "used_memory_mib": mib, "gpu_index": index, "unit": unit}


ENVELOPE = {"tp_size": 8, "mem_fraction_static": 0.85, "context_length": 131072, "max_running_requests": 64,
            "attention_backend": "triton"}

CASES = [
    # (id, gpus, envelope overrides, models, draft path, expected problems (substrings, in order))
    ("fits", gpus(8), {}, CONFIGS, DRAFT, []),
    ("too few cards", gpus(4), {}, CONFIGS, DRAFT,
     ["ct200 (class blackwell) has 4x %s; the class needs %s, at least tp_size=8 of them." % (BLACKWELL, BLACKWELL)]),
    ("another card", gpus(8, name="NVIDIA RTX A6000"), {}, CONFIGS, DRAFT,
     ["has 8x NVIDIA RTX A6000; the class needs %s" % BLACKWELL]),
    ("fa3 on Blackwell", gpus(8), {"attention_backend": "fa3"}, CONFIGS, DRAFT,
     ["ct200: attention_backend=fa3 needs compute capability 8.0, 8.6, 8.7, 8.9, 9.0; these GPUs are 12.0. "
      "Choose another attention_backend."]),
    ("draft model not copied", gpus(8), {}, {MODEL: CONFIGS[MODEL], DRAFT: None}, DRAFT,
     ["ct200: no model at %s (no config.json there)." % DRAFT]),
    ("fraction too small to fit", gpus(8), {"mem_fraction_static": 0.05}, CONFIGS, DRAFT,
     ["ct200: the envelope cannot fit: needs at least"]),
    ("two problems at once", gpus(4), {"attention_backend": "fa3"}, CONFIGS, DRAFT,
     ["at least tp_size=8 of them", "attention_backend=fa3 needs compute capability"]),
    ("nextn needs no draft model", gpus(8), {}, {MODEL: CONFIGS[MODEL]}, "", []),
    ("the managed unit's own memory is no obstacle",
     gpus(8, processes=[tenant(7, i, unit="sglang.service") for i in range(8)]), {}, CONFIGS, DRAFT, []),
    ("a tenant with no unit on two cards: named once, with its PID and memory",
     gpus(8, processes=[tenant(4242, 0), tenant(4242, 1)]), {}, CONFIGS, DRAFT,
     ["ct200: PID 4242 (/usr/bin/python3, no unit) holds memory on GPU 0 (60000 MiB), GPU 1 (60000 MiB), which this "
      "deploy needs and sglang.service does not own. Stop it (kill 4242), or deploy where those GPUs are free."]),
    ("a hand-made unit's server", gpus(8, processes=[tenant(99, 3, 41000, "sglang-qwen.service")]), {}, CONFIGS,
     DRAFT, ["PID 99 (/usr/bin/python3, unit sglang-qwen.service) holds memory on GPU 3 (41000 MiB), which this "
             "deploy needs and sglang.service does not own. Stop it (systemctl stop sglang-qwen.service)"]),
    ("a tenant on a card past tp_size is no obstacle", gpus(8, processes=[tenant(5, 4)]), {"tp_size": 4}, CONFIGS,
     DRAFT, []),
]


@pytest.mark.parametrize("cards, overrides, models, draft, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_preflight(cards, overrides, models, draft, expected):
    verdict = preflight(cards, "ct200", "blackwell", BLACKWELL, dict(ENVELOPE, **overrides), models, MODEL,
                               draft, SM)
    assert len(verdict["problems"]) == len(expected), verdict["problems"]
    for problem, words in zip(verdict["problems"], expected):
        assert words in problem


def test_a_hand_made_unit_being_adopted_is_no_obstacle_but_another_one_is():
    cards = gpus(8, processes=[tenant(99, 3, 41000, "sglang-qwen.service"), tenant(12, 5, 900, "other.service")])
    verdict = preflight(cards, "ct200", "blackwell", BLACKWELL, ENVELOPE, CONFIGS, MODEL, DRAFT, SM,
                               adopt="sglang-qwen.service")
    assert len(verdict["problems"]) == 1 and "PID 12 (/usr/bin/python3, unit other.service)" in verdict["problems"][0]
    assert "adopt it (sglang_service_adopt: other.service)" in verdict["problems"][0]


def test_the_managed_units_ranks_are_its_own_and_an_orphaned_rank_is_a_named_tenant():
    ranks = [dict(tenant(700 + i, i, 80000, "sglang.service"), title="sglang::scheduler_TP%d" % i) for i in range(8)]
    orphan = dict(tenant(650, 2, 30000, None), title="sglang::scheduler_TP2")
    assert preflight(gpus(8, processes=ranks), "ct200", "blackwell", BLACKWELL, ENVELOPE, CONFIGS, MODEL, DRAFT,
                     SM)["problems"] == []
    problems = preflight(gpus(8, processes=ranks + [orphan]), "ct200", "blackwell", BLACKWELL, ENVELOPE, CONFIGS,
                         MODEL, DRAFT, SM)["problems"]
    assert len(problems) == 1, problems
    assert "PID 650 (sglang::scheduler_TP2, no unit) holds memory on GPU 2 (30000 MiB)" in problems[0]
    assert "an SGLang rank outside any unit: the server it belonged to is gone" in problems[0]
    assert "Stop it (kill 650)" in problems[0]


def test_the_fit_is_not_estimated_when_asked_not_to_or_without_the_models():
    assert preflight(gpus(8), "h", "blackwell", BLACKWELL, ENVELOPE, CONFIGS, MODEL, DRAFT, SM,
                     check_fit=False)["fit"] is None
    assert preflight(gpus(8), "h", "blackwell", BLACKWELL, ENVELOPE, {}, MODEL, DRAFT, SM)["fit"] is None


def test_a_fit_explains_itself():
    fit = preflight(gpus(8), "h", "blackwell", BLACKWELL, ENVELOPE, CONFIGS, MODEL, DRAFT, SM)["fit"]
    assert fit["fits"] and fit["explanation"].startswith("needs at least")


@pytest.mark.parametrize("cards, nnodes, expected", [
    (gpus(8), 2, []),
    (gpus(4), 2, ["has 4x %s; the class needs %s, at least tp_size=16 of them over 2 nodes: 8 on each."
                  % (BLACKWELL, BLACKWELL)]),
    (gpus(8, processes=[tenant(5, 7)]), 2, ["PID 5 (/usr/bin/python3, no unit) holds memory on GPU 7"]),
    (gpus(8, processes=[tenant(5, 4)]), 4, []),
])
def test_a_node_of_a_server_group_needs_its_share_of_tp_size(cards, nnodes, expected):
    """tp_size 16 over the group's nodes: each node runs tp_size / nnodes ranks on its first GPUs."""
    verdict = preflight(cards, "ct200", "blackwell", BLACKWELL, dict(ENVELOPE, tp_size=16), CONFIGS, MODEL, DRAFT, SM,
                        nnodes=nnodes)
    assert [p for p in verdict["problems"] if "cannot fit" not in p] == verdict["problems"]
    assert len(verdict["problems"]) == len(expected), verdict["problems"]
    for problem, words in zip(verdict["problems"], expected):
        assert words in problem
