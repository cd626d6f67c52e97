"""The failure classifier, as a data table of SGLang 0.5.23's own message formats."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import (
    INTERESTING, PHASES, RULES, _prefilter, args_from_argv, classify, parse_server_args, required_literals,
)

SERVER_ARGS = ("[2026-11-30 10:00:00] server_args={'model_path': '/models/Qwen3.6-27B', 'tp_size': 2, "
               "'mem_fraction_static': 0.88, 'context_length': 131072, 'max_running_requests': 16, "
               "'speculative_num_draft_tokens': 16, 'cuda_graph_max_bs_decode': 16, 'port': 30000, "
               "'chunked_prefill_size': 4096, 'speculative_draft_model_path': '/models/Qwen3.6-27B-DFlash'}")
LOADED = ["[2026-11-30 10:00:01 TP0] Load weight begin. avail mem=47.21 GB",
          "[2026-11-30 10:00:09 TP0] Load weight end. elapsed=8.02 s, type=Qwen3_5ForCausalLM, "
          "avail mem=21.40 GB, mem usage=25.81 GB."]
TRACEBACK = ["Traceback (most recent call last):",
             '  File "/opt/sglang/releases/x/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py",'
             ' line 3011, in run_scheduler_process',
             "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"]
SCHED_DIED = ("[2026-11-30 10:00:12] Rank 0 scheduler died during initialization (exit code: 1). If exit code "
              "is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.")
SIGQUIT = "[2026-11-30 10:00:12] Received sigquit from a child process. It usually means the child failed."

# id, lines, expected cause, expected phase, words the hint must contain
CASES = [
    ("kv-pool-oom",
     [SERVER_ARGS, *LOADED, *TRACEBACK,
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
      "Current value: mem_fraction_static=0.88", SCHED_DIED, SIGQUIT],
     "kv_pool_oom", "weights_loaded", ["(now 0.88)", "(now 131072)", "(now 16)"]),
    ("weights-leave-no-kv",
     [SERVER_ARGS, *LOADED,
      "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
      "Raise --mem-fraction-static above 0.612 (minimum viable = 1 - available/pre = 0.6118). If using "
      "speculative decoding, draft weights are now counted.", SCHED_DIED],
     "weights_leave_no_kv", "weights_loaded", ["--mem-fraction-static", "--tp-size (now 2)"]),
    ("hybrid-state-oom",
     [SERVER_ARGS, *LOADED,
      "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed "
      "max_mamba_cache_size=0 (total_rest_memory=1.20 GB, mamba_cache_per_req=151.50 MB). Try: (1) reduce "
      "--max-running-requests, (2) increase --mem-fraction-static, (3) reduce "
      "--speculative-num-draft-tokens, or (4) use GPUs with more memory."],
     "hybrid_state_oom", "weights_loaded", ["--max-running-requests (now 16)",
                                            "--speculative-num-draft-tokens (now 16)"]),
    ("cuda-graph-failed-after-kernel-selection",
     [SERVER_ARGS, *LOADED,
      "[2026-11-30 10:00:10 TP0] Memory pool end. avail mem=3.10 GB",
      "[2026-11-30 10:00:10 TP0] Linear attention kernel backend: decode=triton, prefill=triton",
      "[2026-11-30 10:00:10 TP0] Using hybrid linear attention backend for hybrid GDN models.",
      "[2026-11-30 10:00:10 TP0] GDN kernel dispatcher: decode=TritonGDNKernel, extend=TritonGDNKernel, "
      "verify=TritonGDNKernel packed_decode=True",
      "[2026-11-30 10:00:11 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=64, avail mem=3.05 GB",
      *TRACEBACK,
      "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
      "Possible solutions:", "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
      *(["  frame #%d: 0x7f" % i for i in range(150)]), SCHED_DIED, SIGQUIT],
     "cuda_graph_failed", "cuda_graph", ["--cuda-graph-max-bs-decode (now 16)"]),
    ("cuda-error-in-service",
     [SERVER_ARGS, *LOADED, "[2026-11-30 10:00:20] The server is fired up and ready to roll!",
      "[2026-11-30 10:00:25 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      "torch.AcceleratorError: CUDA error: an illegal memory access was encountered", SIGQUIT],
     "cuda_error", "ready", ["keep the known-good"]),
    ("cuda-graph-oom",
     [SERVER_ARGS, *LOADED, "[2026-11-30 10:00:11 TP0] Capture target decode CUDA graph begin. backend=full",
      "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB"],
     "cuda_graph_oom", "cuda_graph", ["--mem-fraction-static (now 0.88)"]),
    ("cuda-oom",
     [SERVER_ARGS, *LOADED, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. "
      "GPU 0 has a total capacity of 47.99 GiB of which 1.02 GiB is free."],
     "cuda_oom", "weights_loaded", ["--chunked-prefill-size (now 4096)", "other processes on these GPUs"]),
    ("gpu-memory-occupied",
     [SERVER_ARGS, "[2026-11-30 10:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):",
      "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
      "pre_model_load_memory=18.6875, local_gpu_memory=47.984375, local_gpu_memory * 0.9=43.1859375", SIGQUIT],
     "gpu_memory_occupied", "server_args", ["--query-compute-apps", "stop it"]),
    ("oom-killed-scheduler",
     [SERVER_ARGS, "[2026-11-30 10:00:01 TP0] Load weight begin. avail mem=47.21 GB",
      "[2026-11-30 10:00:12] Rank 1 scheduler died during initialization (exit code: -9). If exit code is "
      "-9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", SIGQUIT],
     "oom_killed", "loading_weights", ["OOM killer"]),
    ("bad-argument-ambiguous",
     ["usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]",
      "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
      "--cuda-graph-max-bs-prefill"],
     "bad_argument", "starting", ["argument parser"]),
    ("bad-argument-unrecognized",
     ["launch_server.py: error: unrecognized arguments: --speculative-ddtree-budget 64"],
     "bad_argument", "starting", ["flag"]),
    ("import-error",
     ["Traceback (most recent call last):", "ModuleNotFoundError: No module named 'sgl_kernel'"],
     "import_error", "starting", ["rebuild"]),
    ("port-in-use-uvicorn",
     [SERVER_ARGS, *LOADED, "[2026-11-30 10:00:30] The server is fired up and ready to roll!",
      "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use"],
     "port_in_use", "ready", ["(now 30000)"]),
    ("port-in-use-sglang-ports",
     ["[2026-11-30 10:00:00] Port is already in use. dist_init_port=30005 port_base=30001 "
      "detokenizer_port=30002 nccl_port=30003 scheduler_input_port=30007",
      "ValueError: port_base at 30001 is not available in 30 seconds. port_base at 30001 is not available"],
     "port_in_use", "starting", ["port"]),
    ("model-not-found",
     [SERVER_ARGS, "OSError: /models/Qwen3.6-27B-DFlash does not appear to have a file named config.json."],
     "model_not_found", "server_args", ["(now /models/Qwen3.6-27B-DFlash)"]),
    ("warmup-failed",
     [SERVER_ARGS, *LOADED, "[2026-11-30 10:00:20] Initialization failed. warmup error: Traceback (most "
      "recent call last): ... RuntimeError: expected scalar type"],
     "warmup_failed", "weights_loaded", ["warm-up"]),
    ("child-died-alone",
     [SERVER_ARGS, *LOADED, SIGQUIT],
     "child_died", "weights_loaded", ["child"]),
    ("consequence-before-root-still-names-root",
     [SIGQUIT, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."],
     "kv_pool_oom", "starting", ["--mem-fraction-static"]),
]


@pytest.mark.parametrize("lines, cause, phase, hint_words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classify(lines, cause, phase, hint_words):
    result = classify(lines, state="failed")
    assert result["cause"] == cause
    assert result["phase"] == phase
    for word in hint_words:
        assert word in result["hint"], result["hint"]
    assert result["evidence"][0]["cause"] == cause
    assert result["evidence"][0]["match"] in lines


def test_evidence_far_from_the_end_is_found_with_context():
    lines = [SERVER_ARGS, *LOADED, "RuntimeError: Capture cuda graph failed: boom"] + ["x"] * 5000
    result = classify(lines, state="failed")
    evidence = result["evidence"][0]
    assert result["cause"] == "cuda_graph_failed"
    assert evidence["line"] == 4
    assert evidence["context"][0] == SERVER_ARGS and evidence["context"][-1] == "x"
    assert len(evidence["context"]) == 7


@pytest.mark.parametrize("state, signal, cause", [
    ("failed", 9, "oom_killed"),
    ("timeout", None, "timeout"),
    ("failed", None, "unknown"),
    ("healthy", None, None),
])
def test_cause_from_state_when_the_log_is_silent(state, signal, cause):
    result = classify([SERVER_ARGS, *LOADED], state=state, signal=signal, timeout=600)
    assert result["cause"] == cause
    if cause == "timeout":
        assert "600 s" in result["hint"] and "weights_loaded" in result["hint"]


def test_hint_falls_back_to_argv_when_no_server_args_line():
    argv = ["/opt/sglang/bin/python", "-m", "sglang.launch_server", "--mem-fraction-static", "0.95",
            "--context-length=32768", "--max-running-requests", "4"]
    result = classify(["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."],
                      state="failed", args=args_from_argv(argv))
    assert "(now 0.95)" in result["hint"] and "(now 32768)" in result["hint"] and "(now 4)" in result["hint"]


def test_unknown_values_say_unknown():
    result = classify(["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."],
                      state="failed")
    assert "(now unknown)" in result["hint"]


@pytest.mark.parametrize("line, expected", [
    ("server_args={'tp_size': 8, 'model_path': '/m'}", {"tp_size": 8, "model_path": "/m"}),
    ("[x] server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.88)",
     {"model_path": "/m", "tp_size": 2, "mem_fraction_static": 0.88}),
    ("no args here", {}),
])
def test_parse_server_args(line, expected):
    assert parse_server_args(line) == expected


def test_memory_stays_flat_for_long_invocations():
    def lines():
        yield SERVER_ARGS
        for i in range(200_000):
            yield "[TP0] decode batch %d" % i
            if i % 1000 == 0:
                yield SIGQUIT
    result = classify(lines(), state="failed")
    assert result["lines"] == 200_201
    assert len(result["evidence"]) <= 5


@pytest.mark.parametrize("pattern, literals", [
    (r"Not enough memory\. Please", ["Not enough memory. Please"]),
    (r"^usage: |: error: (?:a|b)", ["usage: ", ": error: "]),
    (r"(?:ModuleNotFoundError|ImportError): ", ["ModuleNotFoundError", "ImportError"]),
    (r"(?:x|(?:y|z)w)", ["x", "y", "z"]),
    (r"Capture \w+ CUDA graph", ["Capture "]),
    (r"CUDA error: (?!out of memory)(?:an|b)", ["CUDA error: "]),
    (r"exit code: -9\)", ["exit code: -9)"]),
    (r"colou?r", ["colo"]),                 # an optional character ends the literal
    (r"ab{2}c", ["a"]),
    (r"(?:a[)|]|b)c", ["a", "b"]),            # a `)` or `|` in a class neither closes nor splits
    (r"[a|b]x|y", None),                    # a `|` in a class does not split; a class has no literal
    (r"\d+ seconds", None),
    (r"(?:ab)?c", None),                    # an optional group may be absent
    (r"foo|.*bar", None),
])
def test_required_literals(pattern, literals):
    assert required_literals(pattern) == literals


def test_pattern_without_literal_is_searched_on_every_line():
    prefilter = _prefilter([r"\d+ seconds", "plain"])
    assert prefilter.search("waited 30 seconds") and prefilter.search("plain text")
    assert not prefilter.search("nothing here")


ALL_PATTERNS = [rule.regex for rule in RULES] + [phase[1] for phase in PHASES]
CASE_LINES = sorted({line for case in CASES for line in case[1]})


@pytest.mark.parametrize("line", [line for line in CASE_LINES if any(rx.search(line) for rx in ALL_PATTERNS)])
def test_prefilter_passes_every_line_a_rule_or_phase_matches(line):
    assert INTERESTING.search(line)


def test_prefilter_rejects_ordinary_lines():
    assert not INTERESTING.search("[2026-11-30 10:00:00 TP0] Decode batch. #running-req: 16, #token: 4096, "
                                  "gen throughput (token/s): 81.2")


@pytest.mark.parametrize("template, expected", [
    ("raise --mem-fraction-static (now {mem_fraction_static}) or lower --context-length",
     ["sglang_envelope_overrides.mem_fraction_static", "sglang_envelope_overrides.context_length"]),
    ("check --model-path and --speculative-draft-model-path", ["sglang_model_path", "sglang_draft_model_path"]),
    ("choose another --port", ["sglang_service_port"]),
    ("rebuild the release", []),
], ids=["envelope flags", "model paths", "port", "no flag"])
def test_hints_name_the_inventory_variable_to_change(template, expected):
    from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import fill_hint, inventory_variables
    assert inventory_variables(template) == expected
    text = fill_hint(template, {"mem_fraction_static": 0.88})
    assert all(name in text for name in expected) and ("in the inventory" in text) == bool(expected)


# torch's and NCCL's texts of a server's ranks that lost each other, as a survivor's journal has them:
# SGLang's scheduler catches and logs with its own TP prefix; what escapes it, or torch's C++ log,
# carries torch's `[rankN]:` prefix.
GLOO_CLOSED = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Connection closed by peer "
               "[198.18.0.3]:41234")
WATCHDOG_REMOTE = ("[rank3]:[E1206 14:11:02.345678901 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
                   "Process group watchdog thread terminated with exception: NCCL error: remote process exited or "
                   "there was a network error, NCCL version 2.30.7")
INVALID_USAGE = ("[rank1]: torch.distributed.DistBackendError: NCCL error in: /__w/pytorch/pytorch/torch/csrc/distributed/c10d/"
                 "NCCLUtils.cpp:77, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.30.7")
GROUP_ARGS = ("[2026-12-06 14:00:00] server_args={'model_path': '/models/m', 'tp_size': 4, 'nnodes': 2, "
              "'node_rank': 0, 'dist_init_addr': '198.18.0.2:5000', 'pp_size': %d}")
SERVING = ["[2026-12-06 14:00:30] The server is fired up and ready to roll!",
           "[2026-12-06 14:05:00 TP0] Decode batch. #running-req: 3, #token: 812, gen throughput (token/s): 61.0"]
TORCH_TRACE = ["[rank%d]: Traceback (most recent call last):",
               '[rank%d]:   File "/opt/sglang/releases/x/lib/python3.11/site-packages/sglang/srt/managers/'
               'scheduler.py", line 1391, in recv_requests']

# id, lines, cause, the rank named (None: no one rank), words the hint must contain
DISTRIBUTED = [
    ("gloo's peer closed, in SGLang's own traceback",
     [GROUP_ARGS % 1, *SERVING,
      "[2026-12-06 14:11:02 TP2] Scheduler hit an exception: Traceback (most recent call last):", GLOO_CLOSED,
      "[2026-12-06 14:11:02] Received sigquit from a child process. It usually means the child failed."],
     "peer_died", "TP2", ["another node of its server group", "peer's own journal"]),
    ("gloo's reset, under torch's excepthook prefix",
     [GROUP_ARGS % 1, *SERVING, *[line % 1 for line in TORCH_TRACE],
      "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:599] Read error "
      "[198.18.0.3]:41234: Connection reset by peer"],
     "peer_died", "TP1", ["went away"]),
    ("NCCL's watchdog: the remote process exited",
     [GROUP_ARGS % 1, *SERVING, WATCHDOG_REMOTE], "peer_died", "TP3", ["went away"]),
    ("NCCL's socket: closed by the remote peer",
     [GROUP_ARGS % 1, "[rank5]:[W1206 14:11:01.000000001 socket.cc:123] NCCL WARN socketProgress: Connection "
      "closed by remote peer ct201<41234>"], "peer_died", "TP5", ["went away"]),
    ("rank 0's store: a node never came",
     [GROUP_ARGS % 1, "[2026-12-06 14:00:01 TP0] Init parallel begin.", *[line % 0 for line in TORCH_TRACE],
      "[rank0]: torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients "
      "joined."],
     "rendezvous_timeout", "TP0", ["(now 198.18.0.2:5000)", "sglang_dist_init_addr", "every node"]),
    ("a node that never reached rank 0",
     [GROUP_ARGS % 1, "[2026-12-06 14:00:01 TP4] Init parallel begin.",
      "[2026-12-06 14:10:01 TP4] Scheduler hit an exception: Traceback (most recent call last):",
      "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to "
      "connect to (198.18.0.2, 5000)."],
     "rendezvous_timeout", "TP4", ["(now 198.18.0.2:5000)"]),
    ("NCCL's invalid usage",
     [GROUP_ARGS % 1, *[line % 1 for line in TORCH_TRACE], INVALID_USAGE],
     "nccl_invalid_usage", "TP1", ["two ranks on one GPU", "--tp-size now 4"]),
    ("across pipeline stages torch's rank is not a TP rank",
     [GROUP_ARGS % 2, *SERVING, WATCHDOG_REMOTE], "peer_died", "rank3", ["went away"]),
    ("a rank that dies late: torch's NCCL watchdog on it, then SGLang's subprocess watchdog",
     [GROUP_ARGS % 1, *SERVING,
      "[rank3]:[E1207 08:01:02.345678901 ProcessGroupNCCL.cpp:2057] [PG ID 0 PG GUID 0(default_pg) Rank 3] Process "
      "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
      "terminate called after throwing an instance of 'c10::DistBackendError'",
      "[2026-12-07 08:01:03] Subprocess scheduler_3 (pid=4242) crashed with exit code -6. Triggering SIGQUIT for "
      "cleanup...",
      "[2026-12-07 08:01:03] SIGQUIT received. signum=3, frame=None. It usually means one child failed."],
     "cuda_error", "TP3", ["keep the known-good"]),
    ("a rank killed without a word (SIGKILL): the subprocess watchdog names it",
     [GROUP_ARGS % 1, *SERVING,
      "[2026-12-07 08:01:03] Subprocess scheduler_5 (pid=4242) crashed with exit code -9. Triggering SIGQUIT for "
      "cleanup...",
      "[2026-12-07 08:01:03] SIGQUIT received. signum=3, frame=None. It usually means one child failed."],
     "rank_died", "TP5", ["-9: a SIGKILL", "journalctl -k"]),
    ("a root cause on this host before the survivors' closed connections",
     [GROUP_ARGS % 1, *SERVING, "[2026-12-06 14:11:01 TP1] Scheduler hit an exception: Traceback (most recent "
      "call last):", "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
      "[2026-12-06 14:11:02 TP0] Scheduler hit an exception: Traceback (most recent call last):", GLOO_CLOSED],
     "cuda_error", "TP1", ["keep the known-good"]),
]


@pytest.mark.parametrize("lines, cause, rank, hint_words", [c[1:] for c in DISTRIBUTED], ids=[c[0] for c in DISTRIBUTED])
def test_torchs_distributed_texts_name_the_cause_and_the_rank(lines, cause, rank, hint_words):
    result = classify(lines, state="failed")
    assert (result["cause"], result["rank"]) == (cause, rank), result["evidence"]
    assert all(word in result["hint"] for word in hint_words), result["hint"]
    assert INTERESTING.search(result["evidence"][0]["match"])


def test_a_torch_prefix_carries_its_rank_to_the_lines_that_continue_it():
    lines = [GROUP_ARGS % 1, "[rank6]: Traceback (most recent call last):", "ncclInvalidUsage: This usually "
             "reflects invalid usage of NCCL library.", "[2026-12-06 14:11:02] Received sigquit from a child "
             "process. It usually means the child failed."]
    result = classify(lines, state="failed")
    assert (result["cause"], result["ranks"]) == ("nccl_invalid_usage", ["TP6"])
