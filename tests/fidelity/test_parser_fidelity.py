"""The stand-in accepts exactly what the real SGLang 0.5.23 parser (with the DDTree patch
series) accepts. Needs the real parser: `make fidelity` builds it and sets
SGLANG_REFERENCE_PYTHON; without it these tests fail, they never skip."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))
from sglang_sim.args import load_table, validate  # noqa: E402  pylint: disable=wrong-import-position

M = ["--model-path", "/models/Qwen3.6-27B"]
D = ["--speculative-draft-model-path", "/models/Qwen3.6-27B-DFlash"]
DFLASH = ["--speculative-algorithm", "DFLASH", *D, "--speculative-num-draft-tokens", "16"]
DDTREE = ["--speculative-algorithm", "DDTREE", *D, "--speculative-num-draft-tokens", "16"]
A6000 = ["--tp-size", "2", "--mem-fraction-static", "0.88", "--context-length", "131072",
         "--max-running-requests", "16", "--chunked-prefill-size", "4096", "--cuda-graph-max-bs-decode", "16",
         "--attention-backend", "flashinfer"]
BLACKWELL = ["--tp-size", "8", "--mem-fraction-static", "0.85", "--context-length", "131072",
             "--max-running-requests", "64", "--cuda-graph-max-bs-decode", "64", "--attention-backend", "triton"]

CORPUS = [
    # accepted
    M,
    M + A6000 + ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", "4"],
    M + BLACKWELL + DDTREE + ["--speculative-ddtree-budget", "64"],
    M + BLACKWELL + DFLASH,
    M + ["--speculative-algorithm", "nextn"],
    M + ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"],
    M + ["--mem-fraction-static", "1.5"],
    M + ["--mem-fraction-static", "-0.1"],
    M + ["--mem-fraction-static", "0"],
    M + ["--disable-cuda-graph"],
    M + ["--enable-dp-attention"],
    M + ["--monokernel-backend", "amd"],
    M + ["--max-total-tokens", "1Ki"],
    M + ["--max-total-tokens", "25.6k"],
    M + ["--attention-backend", "fa3"],
    M + ["--attention-backend", "trtllm_mha"],
    M + ["--enable-tf32-matmul"],
    M + ["--no-enable-tf32-matmul"],
    M + ["--json-model-override-args", '{"rope_scaling": null}'],
    M + ["--cuda-graph-config", '{"decode": {"backend": "full"}}'],
    M + ["--tensor-parallel-size", "2"],
    M + ["--host", "0.0.0.0", "--port", "30001", "--api-key", "secret"],
    M + ["--speculative-algorithm", "DFLASH", *D, "--speculative-dflash-block-size", "16"],
    M + ["--speculative-algorithm", "DFLASH", "--speculative-draft-model", "/d", "--speculative-num-draft-tokens", "8"],
    M + DDTREE + ["--speculative-ddtree-budget", "1024"],
    M + DDTREE,
    M + ["--served-model-name", "qwen"],
    M + ["--lora-paths", "a=/x", "b=/y"],
    M + ["--mem-fraction-static=0.9", "--tp-size=2"],
    ["--model-path", "/does/not/exist"],
    # rejected
    M + ["--cuda-graph-max-bs", "16"],
    M + ["--bogus-flag"],
    M + ["--tp-size", "x"],
    M + ["--mem-fraction-static", "abc"],
    M + ["--attention-backend", "nope"],
    M + ["--speculative-algorithm", "DFLASH"],
    M + ["--speculative-algorithm", "DFLASH", *D, "--speculative-num-draft-tokens", "16", "--pp-size", "2"],
    M + ["--speculative-algorithm", "DDTREE", "--speculative-num-draft-tokens", "16"],
    M + DDTREE + ["--speculative-ddtree-budget", "8"],
    M + DDTREE + ["--speculative-ddtree-budget", "2048"],
    M + ["--speculative-algorithm", "MEDUSA"],
    M + ["--speculative-algorithm", "DFLASH", *D, "--speculative-dflash-block-size", "0"],
    M + ["--speculative-algorithm", "DFLASH", *D, "--speculative-dflash-block-size", "16",
         "--speculative-num-draft-tokens", "8"],
    M + DFLASH + ["--speculative-draft-window-size", "4"],
    M + ["--max-total-tokens", "1.5Ki"],
    M + ["--cuda-graph-backend-decode", "tc_piecewise"],
    M + ["--cuda-graph-config", '{"verify": {}}'],
    M + ["--json-model-override-args", "{bad"],
    M + ["--port"],
    M + ["--speculative-ddtree-budget", "x"],
]


def reference_python() -> str:
    path = os.environ.get("SGLANG_REFERENCE_PYTHON", "")
    assert path and os.path.exists(path), (
        "the real SGLang parser is needed: run `make fidelity` (sets SGLANG_REFERENCE_PYTHON)")
    return path


@pytest.fixture(scope="module")
def reference_verdicts():
    proc = subprocess.run([reference_python(), str(REPO / "roles" / "sglang_service" / "files" / "validate_server_args.py"),
                           "--batch"],
                          input=json.dumps(CORPUS), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def comparable(error: str) -> str:
    # argparse lists some choices from a set, in an order that changes per process.
    return error.split(" (choose from")[0]


def test_corpus_is_large_and_mixed():
    table = load_table()
    verdicts = [validate(list(argv), table)[1] is None for argv in CORPUS]
    assert len(CORPUS) >= 40 and sum(verdicts) >= 15 and len(verdicts) - sum(verdicts) >= 15


@pytest.mark.parametrize("index", range(len(CORPUS)), ids=lambda i: " ".join(CORPUS[i][2:])[:60] or "model only")
def test_same_verdict_as_the_real_parser(reference_verdicts, index):
    argv = list(CORPUS[index])
    real = reference_verdicts[index]
    assert real["ok"] is not None, "corpus entry needs the model to decide: %s" % real["error"]
    args, error = validate(argv, load_table())
    assert (error is None) == real["ok"], "real: %s / stand-in: %s" % (real["error"] or "accepted", error or "accepted")
    if error is not None:
        assert comparable(error) == comparable(real["error"])


def test_flag_table_is_current():
    table = REPO / "lab" / "sglang_sim" / "flags" / "0.5.23.json"
    proc = subprocess.run([reference_python(), str(REPO / "lab" / "tools" / "derive_flag_table.py"), "--check",
                           str(table)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
