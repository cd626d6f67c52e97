"""The stand-in's memory model: where each configuration fits or fails, as a data table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_sim import memory
from sglang_sim.args import load_table, validate

MODELS = Path(__file__).resolve().parents[3] / "lab" / "image" / "rootfs" / "models"
TARGET = json.loads((MODELS / "Qwen3.6-27B" / "config.json").read_text())
DRAFT = json.loads((MODELS / "Qwen3.6-27B-DFlash" / "config.json").read_text())
A6000_MIB, BLACKWELL_MIB = 49140 - 4, 97887 - 5
DDTREE = ["--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "/d", "--speculative-num-draft-tokens", "16"]
DFLASH = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "/d", "--speculative-num-draft-tokens", "16"]
NEXTN = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]
A6000 = ["--tp-size", "2", "--chunked-prefill-size", "4096", "--cuda-graph-max-bs-decode", "16"]
BLACKWELL = ["--tp-size", "8", "--chunked-prefill-size", "8192", "--cuda-graph-max-bs-decode", "64",
             "--mem-fraction-static", "0.85", "--context-length", "131072", "--max-running-requests", "64"]


def envelope(fraction, context, requests):
    return ["--mem-fraction-static", str(fraction), "--context-length", str(context), "--max-running-requests",
            str(requests)]


CASES = [
    # id, gpu MiB, argv, outcome: "healthy", "graph_fails" or the failing message's start
    ("seed ct129 DDTree 0.88/131072/16", A6000_MIB, A6000 + envelope(0.88, 131072, 16) + DDTREE,
     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
     "mem_fraction_static=0.88"),
    ("seed ct129 DDTree 0.95/32768/4", A6000_MIB, A6000 + envelope(0.95, 32768, 4) + DDTREE, "graph_fails"),
    ("ct129 DDTree override that fits", A6000_MIB, A6000 + envelope(0.88, 32768, 4) + DDTREE, "healthy"),
    ("ct129 DFLASH override that fits", A6000_MIB, A6000 + envelope(0.88, 32768, 4) + DFLASH, "healthy"),
    ("ct129 NEXTN production", A6000_MIB, A6000 + envelope(0.88, 131072, 16) + NEXTN, "healthy"),
    ("ct129 weights over budget", A6000_MIB, A6000 + envelope(0.5, 32768, 4) + NEXTN,
     "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5"),
    ("ct129 state of one request too big", A6000_MIB,
     A6000 + envelope(0.6, 4096, 4) + ["--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "/d",
                                       "--speculative-num-draft-tokens", "512"],
     "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache."),
    ("ct200 DDTree production", BLACKWELL_MIB, BLACKWELL + DDTREE, "healthy"),
    ("ct200 DFLASH production", BLACKWELL_MIB, BLACKWELL + DFLASH, "healthy"),
    ("ct200 NEXTN production", BLACKWELL_MIB, BLACKWELL + NEXTN, "healthy"),
]


@pytest.mark.parametrize("gpu_mib, argv, outcome", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_where_configurations_fit_or_fail(gpu_mib, argv, outcome):
    args, error = validate(["--model-path", "/m"] + argv, load_table())
    assert error is None, error
    draft = DRAFT if args.speculative_draft_model_path else None
    if outcome in ("healthy", "graph_fails"):
        plan = memory.plan(args, TARGET, draft, gpu_mib)
        assert plan["max_total_num_tokens"] > 0
        assert plan["graph_fits"] is (outcome == "healthy")
    else:
        with pytest.raises(memory.StartupFailure) as info:
            memory.plan(args, TARGET, draft, gpu_mib)
        assert info.value.lines[-1].startswith(outcome)
        assert info.value.phase == "memory_pool"


def test_model_is_about_27b_and_draft_is_small():
    assert 26e9 < memory.param_count(TARGET) < 28e9
    assert memory.param_count(DRAFT) < 0.15 * memory.param_count(TARGET)


def test_kv_heads_are_replicated_when_tp_exceeds_them():
    assert memory.kv_bytes_per_token(TARGET, 8) == memory.kv_bytes_per_token(TARGET, 4)
    assert memory.kv_bytes_per_token(TARGET, 2) == 2 * memory.kv_bytes_per_token(TARGET, 4)
