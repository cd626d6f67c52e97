"""The start-up timeline and the stall decision, fed SGLang 0.5.23's own line shapes (a TP=2
server: every rank logs its phase lines with its own prefix)."""
import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import startup
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import classify

T0 = 1796000000.0
# (seconds after T0, message) as journalctl gives them: the start of a TP=2 server.
START = [
    (0.0, "[2026-12-04 06:24:34] server_args={'model_path': '/models/Qwen3.6-27B', 'tp_size': 2}"),
    (0.4, "[2026-12-04 06:24:34 TP0] Init parallel begin."),
    (0.4, "[2026-12-04 06:24:34 TP1] Init parallel begin."),
    (2.0, "[2026-12-04 06:24:36 TP1] Init parallel ends. elapsed=1.60 s"),
    (2.5, "[2026-12-04 06:24:36 TP0] Init parallel ends. elapsed=2.10 s"),
    (2.6, "[2026-12-04 06:24:36 TP0] Load weight begin. avail mem=46.55 GB"),
    (2.6, "[2026-12-04 06:24:36 TP1] Load weight begin. avail mem=46.55 GB"),
    (200.0, "[2026-12-04 06:27:54 TP0] Load weight end. elapsed=197.40 s, type=Qwen3_5ForCausalLM, "
            "avail mem=19.93 GB, mem usage=26.62 GB."),
    (200.5, "[2026-12-04 06:27:54 TP1] Load weight end. elapsed=197.90 s, type=Qwen3_5ForCausalLM, "
            "avail mem=19.93 GB, mem usage=26.62 GB."),
    (201.0, "[2026-12-04 06:27:55 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 180000, "
            "K size: 5.49 GB, V size: 5.49 GB"),
    (204.5, "[2026-12-04 06:27:58 TP1] Memory pool end. avail mem=4.04 GB"),
    (204.5, "[2026-12-04 06:27:58 TP0] Memory pool end. avail mem=4.04 GB"),
    (205.0, "[2026-12-04 06:27:59 TP0] Capture target decode CUDA graph begin. backend=full, "
            "num_tokens_per_req=1, avail mem=4.04 GB"),
    (245.5, "[2026-12-04 06:28:39 TP0] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16], "
            "elapsed=40.50 s, mem usage=1.20 GB, avail mem=2.84 GB."),
    (246.0, "[2026-12-04 06:28:40 TP1] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16], "
            "elapsed=41.00 s, mem usage=1.20 GB, avail mem=2.84 GB."),
    (246.5, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
    (258.0, "[2026-12-04 06:28:52] The server is fired up and ready to roll!"),
]
KNOWN_GOOD = {"parallel": 2.0, "weights": 190.0, "kv_pool": 4.0, "graphs": 40.0, "ready": 12.0}


def fed(lines):
    progress = startup.Progress()
    for at, message in lines:
        progress.feed(T0 + at, message)
    return progress


@pytest.mark.parametrize("upto, phase, timeline", [
    (1, "parallel", {}),
    (4, "parallel", {}),
    (5, "weights", {"parallel": 2.5}),
    (8, "weights", {"parallel": 2.5}),   # TP1 has not finished loading yet
    (9, "kv_pool", {"parallel": 2.5, "weights": 198.0}),
    (15, "ready", {"parallel": 2.5, "weights": 198.0, "kv_pool": 4.0, "graphs": 41.5}),
    (len(START), None, {"parallel": 2.5, "weights": 198.0, "kv_pool": 4.0, "graphs": 41.5, "ready": 12.0}),
], ids=["server args", "one rank's parallel init done", "every rank's", "TP0 loaded", "both loaded",
        "graphs captured", "ready"])
def test_a_phase_ends_when_its_last_rank_says_so(upto, phase, timeline):
    progress = fed(START[:upto])
    assert (progress.phase(), progress.timeline()) == (phase, timeline)


@pytest.mark.parametrize("quiet_after, now, known_good, floor, expected", [
    # In the weight load (last progress at 2.6 s): the known-good took 190 s there, x3 = 570 s.
    (7, 500.0, KNOWN_GOOD, 60, None),
    (7, 573.0, KNOWN_GOOD, 60, {"phase": "weights", "seconds": 570.4, "limit": 570.0, "known_good": 190.0}),
    # No known-good timeline: the floor alone.
    (7, 62.0, None, 60, None),
    (7, 63.0, None, 60, {"phase": "weights", "seconds": 60.4, "limit": 60.0, "known_good": None}),
    # A phase the known-good did quickly gets the floor, not 3 x 2 s.
    (3, 0.4 + 61.0, KNOWN_GOOD, 60, {"phase": "parallel", "seconds": 61.0, "limit": 60.0, "known_good": 2.0}),
    # Off.
    (7, 10000.0, KNOWN_GOOD, 0, None),
    # Ready, and still no 200 from the health check (asked only until the first): stalled there.
    (len(START), 258.0 + 59.0, KNOWN_GOOD, 60, None),
    (len(START), 258.0 + 61.0, KNOWN_GOOD, 60, {"phase": "health", "seconds": 61.0, "limit": 60.0, "known_good": None}),
], ids=["slow load within 3x the known-good's", "over it", "no timeline: within the floor", "over the floor",
        "the floor under a short phase", "stall check off", "ready: waiting for the first 200",
        "ready, no 200 since"])
def test_stall_decision(quiet_after, now, known_good, floor, expected):
    got = startup.stalled(fed(START[:quiet_after]), T0 + now, known_good, floor, 3)
    if expected is None:
        assert got is None
    else:
        assert dict((k, got[k]) for k in expected) == expected
        assert got["last_line"] == START[quiet_after - 1][1]


@pytest.mark.parametrize("watching_from, now, expected", [
    # Ready at 258 s; a gate that began to watch 200 s later (a re-gate of a running server, a
    # gate started late) counts the quiet from then: 50 s is under the 60 s floor.
    (458.0, 508.0, None),
    (458.0, 519.0, {"phase": "health", "seconds": 61.0}),
    # A gate that watched from before the last line counts from the line, as before.
    (0.0, 258.0 + 61.0, {"phase": "health", "seconds": 61.0}),
], ids=["a late gate: quiet counted from its start", "then stalled on its own clock", "an early gate: from the line"])
def test_quiet_before_the_gate_watched_is_not_the_starts(watching_from, now, expected):
    got = startup.stalled(fed(START), T0 + now, KNOWN_GOOD, 60, 3, watching_since=T0 + watching_from)
    assert (got and dict((k, got[k]) for k in expected)) == expected


def test_the_process_tree_changing_is_progress():
    progress = fed(START[:7])
    assert startup.stalled(progress, T0 + 100.0, None, 60, 3) is not None
    progress.tree_changed(T0 + 99.0)   # a rank ended or started
    assert startup.stalled(progress, T0 + 100.0, None, 60, 3) is None


def test_the_stall_is_said_with_its_phase_seconds_and_last_line():
    stall = startup.stalled(fed(START[:7]), T0 + 573.0, KNOWN_GOOD, 60, 3)
    assert startup.stall_reason(stall) == (
        "no progress for 570 s in weights (limit 570 s (the known-good took 190.0 s there)); "
        "last line: [2026-12-04 06:24:36 TP1] Load weight begin. avail mem=46.55 GB")


def test_the_timeline_is_shown_beside_the_known_goods():
    assert startup.describe_timeline(fed(START).timeline(), {"weights": 190.0, "graphs": 40.0}) == (
        "parallel init 2.5 s, weights 198 s (known-good 190 s), kv pool 4 s, graphs 42 s (known-good 40 s), "
        "warm-up 12 s")


# --- which rank said it --------------------------------------------------------------
TRACE = ['  File "sglang/srt/managers/scheduler.py", line 3011, in run_scheduler_process',
         '  File "sglang/srt/model_executor/model_runner.py", line 901, in initialize']
NCCL = ("torch.distributed.DistBackendError: NCCL error in: /__w/pytorch/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.30.7")
CAPTURE = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"
OOM_NAMING = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 1 has a total capacity "
              "of 47.99 GiB of which 17.95 GiB is free. Process 4242 has 3.00 GiB memory in use. Process 4250 has "
              "26.50 GiB memory in use. Including non-PyTorch memory, this process has 26.50 GiB memory in use.")


def rank_failed(rank, error, others=("TP0", "TP1", "TP2", "TP3")):
    lines = [START[0][1]] + ["[2026-12-04 06:24:34 %s] Init parallel begin." % r for r in others]
    lines += ["[2026-12-04 06:24:35 %s] Scheduler hit an exception: Traceback (most recent call last):" % rank]
    lines += TRACE + [error]
    lines += ["[2026-12-04 06:24:35 TP0] Load weight begin. avail mem=46.55 GB",
              "[2026-12-04 06:24:35] Received sigquit from a child process. It usually means the child failed."]
    return lines


@pytest.mark.parametrize("rank, error, cause", [
    ("TP3", NCCL, "nccl_error"),
    ("TP1", CAPTURE, "cuda_graph_failed"),
    ("TP2", "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.", "peer_died"),
    ("TP1", OOM_NAMING, "cuda_oom"),
], ids=["NCCL error on TP3", "a capture error without SGLang's wrapper", "a peer gone", "CUDA OOM naming holders"])
def test_the_rank_that_failed_is_named_from_its_own_lines(rank, error, cause):
    got = classify(rank_failed(rank, error), state="failed", signal=9)
    assert (got["cause"], got["rank"], got["ranks"]) == (cause, rank, [rank])
    assert got["evidence"][0]["match"] == error and got["evidence"][0]["rank"] == rank


def test_a_cuda_oom_that_names_other_processes_puts_them_in_the_hint():
    got = classify(rank_failed("TP1", OOM_NAMING), state="failed", signal=9)
    assert got["hint"].endswith("on that GPU, PID 4242 holds 3.00 GiB, PID 4250 holds 26.50 GiB: stop them or "
                                "move them to other GPUs")


def test_a_cause_every_rank_hit_names_no_single_rank():
    kv = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: x=0.88"
    lines = rank_failed("TP0", kv) + rank_failed("TP1", kv)[1:]
    got = classify(lines, state="failed")
    assert (got["cause"], got["rank"], got["ranks"]) == ("kv_pool_oom", None, ["TP0", "TP1"])


def test_a_single_gpu_server_has_no_rank_prefix():
    lines = ["[2026-12-04 06:24:35] Scheduler hit an exception: Traceback (most recent call last):"] + TRACE + [NCCL]
    got = classify(lines, state="failed")
    assert (got["cause"], got["rank"], got["ranks"]) == ("nccl_error", None, [])


def test_what_the_start_said_of_its_memory_is_kept_the_smallest_over_the_ranks():
    progress = fed(START)
    assert progress.memory == {"weights_avail_gib": 19.93, "kv_tokens": 180000, "pool_avail_gib": 4.04,
                               "graphs_avail_gib": 2.84}
    # A draft loads after the target: a rank's latest weight line is what both left.
    draft = (201.0, "[2026-12-04 06:27:55 TP1] Load weight end. elapsed=0.50 s, type=DFlashDraftModel, avail mem=18.10 GB, "
                    "mem usage=1.83 GB.")
    assert fed(START[:9] + [draft]).memory["weights_avail_gib"] == 18.10
    assert fed(START[:5]).memory == {}, "nothing said yet"
