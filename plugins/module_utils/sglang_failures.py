# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Name the cause of an SGLang startup failure from one invocation's log lines.

Pure Python (no Ansible imports): fed line by line so a whole invocation is read in one
pass with flat memory. The message formats are SGLang 0.5.23's own (file named per rule).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import collections
import re
import shlex

# Lines of context kept before and after each evidence line.
CONTEXT_BEFORE = 3
CONTEXT_AFTER = 3
MAX_EVIDENCE = 5

ROOT = "root"
CONSEQUENCE = "consequence"


class Said:
    """A line a rule matches, and where its text comes from.

    `where` is `sglang:<file under the sglang package>` or `python:<stdlib file>` (make
    fidelity checks that each of `pieces` is in that file of the pinned SGLang, or of Python's
    own library), else it names the origin outside both: `torch: ...`, `CUDA: ...`,
    `transformers: ...`, `uvicorn: ...`, `the kernel: ...`. `line` is the line as it is
    printed; `pieces` the literal parts of the source that make it, format fields included
    (default: the line itself)."""

    __slots__ = ("where", "line", "pieces")

    def __init__(self, where, line, pieces=None):
        self.where = where
        self.line = line
        self.pieces = tuple(pieces or (line,))


class Rule:
    """One failure signature: a cause, whether it is a root cause or a consequence of
    one, the pattern, the hint template (filled from the invocation's arguments), and the
    lines it is written for (`said`, one per alternative of the pattern at least)."""

    __slots__ = ("cause", "kind", "regex", "hint", "said")

    def __init__(self, cause, kind, pattern, hint, said=()):
        self.cause = cause
        self.kind = kind
        self.regex = re.compile(pattern)
        self.hint = hint
        self.said = tuple(said)


CUDA_OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                 "of 47.41 GiB of which 1.19 GiB is free.")
TORCH_ALLOCATOR = "torch: c10/cuda/CUDACachingAllocator.cpp, the caching allocator's message (not in a CPU build)"
CUDA_RUNTIME = "CUDA: the runtime's cudaGetErrorString(), raised by torch as `CUDA error: <text>`"
# torch 2.14.1 (the release SGLang 0.5.23 pins) and NCCL 2.30.7 (its nvidia-nccl wheel): their own strings,
# read from libtorch_cuda.so and libnccl.so.2.
TORCH_NCCL = "torch: torch/csrc/distributed/c10d (ProcessGroupNCCL, NCCLUtils) in libtorch_cuda.so"
NCCL_LIB = "NCCL: ncclGetErrorString() in libnccl.so.2, quoted by torch after `NCCL error in: <file>:<line>, `"
NCCL_SOCKET = "NCCL: its socket transport's warning in libnccl.so.2 (socketProgress)"
# The TP group's CPU side (SGLang broadcasts each batch over it) is gloo's TCP transport.
GLOO = "torch: third_party/gloo/gloo/transport/tcp/pair.cc in libtorch_cpu.so (an IoException, its file:line first)"
# (Its __FILE__ as torch's release build has it.)
GLOO_PAIR = "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc"
TCPSTORE = "torch: torch/csrc/distributed/c10d/TCPStore.cpp in libtorch_cpu.so (the rendezvous at --dist-init-addr)"
ARGPARSE = "python:argparse.py"

# Order matters only among rules matching the same line (the first listed wins).
RULES = (
    Rule("kv_pool_oom", ROOT,
         r"Not enough memory\. Please try to increase --mem-fraction-static",
         "raise --mem-fraction-static (now {mem_fraction_static}) or lower --context-length "
         "(now {context_length}) / --max-running-requests (now {max_running_requests})",
         [Said("sglang:srt/model_executor/pool_configurator.py",
               "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
               "mem_fraction_static=0.88",
               ["Not enough memory. Please try to increase --mem-fraction-static."])]),
    Rule("weights_leave_no_kv", ROOT,
         r"Loaded weights leave no GPU memory for the KV cache",
         "the weights (target + draft) fill the static budget: raise --mem-fraction-static "
         "(now {mem_fraction_static}) above the minimum the evidence names, or raise --tp-size "
         "(now {tp_size}) to spread the weights over more GPUs",
         [Said("sglang:srt/mem_cache/kv_cache_configurator.py",
               "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.6. "
               "Raise --mem-fraction-static above 0.712 ",
               ["Loaded weights leave no GPU memory for the KV cache under ",
                "--mem-fraction-static={get_schedule().mem_fraction_static}. ", "Raise --mem-fraction-static above "])]),
    Rule("hybrid_state_oom", ROOT,
         r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache",
         "the mamba/linear-attention state does not fit: lower --max-running-requests (now "
         "{max_running_requests}) or --speculative-num-draft-tokens (now "
         "{speculative_num_draft_tokens}), or raise --mem-fraction-static (now {mem_fraction_static})",
         [Said("sglang:srt/mem_cache/kv_cache_configurator.py",
               "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed "
               "max_mamba_cache_size=0 ",
               ["Not enough GPU memory for hybrid (mamba/linear-attention) state cache. ",
                "Computed max_mamba_cache_size={get_schedule().max_mamba_cache_size} "])]),
    # The decode runner and the EAGLE draft runners raise the same text.
    Rule("cuda_graph_oom", ROOT,
         r"Capture cuda graph failed: .*(?:out of memory|OutOfMemoryError)",
         "CUDA-graph capture ran out of memory: lower --mem-fraction-static (now "
         "{mem_fraction_static}) to leave room for the graphs, or lower --cuda-graph-max-bs-decode "
         "(now {cuda_graph_max_bs_decode})",
         [Said("sglang:srt/model_executor/runner/decode_cuda_graph_runner.py",
               "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB.",
               ["Capture cuda graph failed: {e}"]),
          Said("sglang:srt/speculative/eagle_draft_cuda_graph_runner.py",
               "Exception: Capture cuda graph failed: torch.OutOfMemoryError: Tried to allocate 512.00 MiB",
               ["Capture cuda graph failed: {e}"])]),
    Rule("cuda_graph_failed", ROOT,
         r"(?:Capture cuda graph failed: |CUDA error: (?:operation not permitted when stream is capturing|"
         r"operation failed due to a previous error during capture|capturing stream has unjoined work))",
         "CUDA-graph capture failed: lower --cuda-graph-max-bs-decode (now "
         "{cuda_graph_max_bs_decode}) or --mem-fraction-static (now {mem_fraction_static}); "
         "--cuda-graph-backend-decode=disabled confirms it (slow, not for production)",
         [Said("sglang:srt/model_executor/runner/decode_cuda_graph_runner.py",
               "Exception: Capture cuda graph failed: CUDA error: operation failed due to a previous error during "
               "capture", ["Capture cuda graph failed: {e}"]),
          # A rank's capture can end in torch's own error, without SGLang's wrapper line
          # (raised on another rank, or the log cut short).
          Said(CUDA_RUNTIME, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: operation failed due to a previous error during capture"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: capturing stream has unjoined work")]),
    # A rank's peer is gone (its process, or its node of a server group): the survivors' own
    # transports say so, gloo's on the CPU side, NCCL's on the GPU side. (Before nccl_error: torch
    # wraps NCCL's remote error in its `NCCL error in: ` line.)
    Rule("peer_died", ROOT,
         r"(?:Connection closed by peer|: Connection reset by peer|Connection closed by remote peer|"
         r"remote process exited or there was a network error|ncclRemoteError)",
         "a peer of this server's ranks went away (another node of its server group, or another rank's "
         "process): this rank failed with it; the peer's own journal names why it went",
         [Said(GLOO, "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] "
               "Connection closed by peer [198.18.0.3]:41234", [GLOO_PAIR, "Connection closed by peer "]),
          Said(GLOO, "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:599] "
               "Read error [198.18.0.3]:41234: Connection reset by peer", [GLOO_PAIR, "Read error "]),
          Said(NCCL_SOCKET, "NCCL WARN socketProgress: Connection closed by remote peer ct201<41234>",
               ["socketProgress: Connection closed by remote peer %s"]),
          Said(NCCL_LIB, "torch.distributed.DistBackendError: NCCL error in: "
               "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/"
               "ProcessGroupNCCL.cpp:3690, remote process exited or there was a network error, NCCL version 2.30.7",
               ["remote process exited or there was a network error"]),
          Said(TORCH_NCCL, "ncclRemoteError: A call failed possibly due to a network error or a remote process "
               "exiting prematurely.")]),
    # The ranks never all met at --dist-init-addr: TCPStore's server (global rank 0) counts who came;
    # a client that never reached it times out connecting.
    Rule("rendezvous_timeout", ROOT,
         r"(?:Timed out after \d+ seconds waiting for clients|The client socket has timed out after )",
         "the server's ranks did not all meet at --dist-init-addr (now {dist_init_addr}) in time: start "
         "every node of the server group, each with its own node rank, and check that each reaches that "
         "address and port (a firewall, or another process holding the port)",
         [Said(TCPSTORE, "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. "
               "1/2 clients joined.", ["Timed out after {} seconds waiting for clients. {}/{} clients joined."]),
          Said(TCPSTORE, "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms "
               "while trying to connect to (198.18.0.2, 5000).",
               ["The client socket has timed out after {} while trying to connect to ({}, {})."])]),
    # NCCL refused the ranks' own setup: no retry or timeout helps.
    Rule("nccl_invalid_usage", ROOT,
         r"(?:ncclInvalidUsage|invalid usage \(run with NCCL_DEBUG=WARN)",
         "NCCL refused the ranks' setup as invalid usage: most often two ranks on one GPU (the unit's "
         "CUDA_VISIBLE_DEVICES, or another tenant's ranks on these GPUs) or the nodes of a server group started "
         "with different arguments (--tp-size now {tp_size}); NCCL_DEBUG=WARN in the unit's environment prints "
         "NCCL's own reason",
         [Said(NCCL_LIB, "torch.distributed.DistBackendError: NCCL error in: "
               "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/"
               "NCCLUtils.cpp:77, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.30.7",
               ["invalid usage (run with NCCL_DEBUG=WARN for details)"]),
          Said(TORCH_NCCL, "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.")]),
    # NCCL failed on one rank (bring-up, a collective): torch's c10d wraps NCCL's text.
    Rule("nccl_error", ROOT,
         r"(?:NCCL error in: |ncclUnhandledCudaError|ncclSystemError|ncclInternalError|"
         r"Watchdog caught collective operation timeout)",
         "NCCL failed on a rank: rerun with NCCL_DEBUG=INFO in the unit's environment to see which call; check "
         "that no other process holds memory on that rank's GPU and that the GPUs can reach each other "
         "(NCCL_P2P_DISABLE=1 confirms a P2P problem), or lower --tp-size (now {tp_size})",
         [Said(TORCH_NCCL, "torch.distributed.DistBackendError: NCCL error in: "
               "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/"
               "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.30.7",
               ["NCCL error in: ", "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp"]),
          Said(TORCH_NCCL, "ncclUnhandledCudaError: Call to CUDA function failed."),
          Said(TORCH_NCCL, "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
               "device error."),
          Said(TORCH_NCCL, "ncclInternalError: Internal check failed."),
          Said(TORCH_NCCL, "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
               "OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
               ["Watchdog caught collective operation timeout: "])]),
    # The TP ranks found very different free memory.
    Rule("gpu_memory_occupied", ROOT,
         r"The memory capacity is unbalanced\. Some GPUs may be occupied by other processes",
         "another process holds memory on some of this server's GPUs: find it (nvidia-smi "
         "--query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv) and stop it",
         [Said("sglang:srt/distributed/bootstrap.py",
               "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
               "pre_model_load_memory=30.1, local_gpu_memory=46.9, local_gpu_memory * 0.9=42.2",
               ["The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "])]),
    Rule("cuda_oom", ROOT,
         r"(?:torch\.OutOfMemoryError|torch\.cuda\.OutOfMemoryError|CUDA out of memory|"
         r"CUDA error: out of memory)",
         "the GPU ran out of memory outside the static pool: lower --mem-fraction-static (now "
         "{mem_fraction_static}) to leave activation headroom, or lower --chunked-prefill-size "
         "(now {chunked_prefill_size}); if nvidia-smi lists other processes on these GPUs, they "
         "hold the memory: stop them",
         [Said(TORCH_ALLOCATOR, CUDA_OOM_LINE),
          Said("torch: torch.cuda.OutOfMemoryError, the older name SGLang also catches",
               "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: out of memory")]),
    # A kernel fault in service (the DDTree/DFlash kernels are the usual suspects): torch
    # raises it in the scheduler's event loop and the server exits.
    Rule("cuda_error", ROOT,
         r"CUDA error: (?!out of memory)(?:an illegal memory access|device-side assert|misaligned address|"
         r"unspecified launch failure|an illegal instruction)",
         "a CUDA kernel failed while serving ({speculative_algorithm} on this GPU): keep the known-good "
         "variant on this host class and report the evidence upstream; CUDA_LAUNCH_BLOCKING=1 names the kernel",
         [Said(CUDA_RUNTIME, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: device-side assert triggered"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: misaligned address"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: unspecified launch failure"),
          Said(CUDA_RUNTIME, "RuntimeError: CUDA error: an illegal instruction was encountered")]),
    # sglang.launch_server's argparse parser (prepare_server_args).
    Rule("bad_argument", ROOT,
         r"(?:^usage: |: error: (?:unrecognized arguments|argument |ambiguous option|the following "
         r"arguments are required))",
         "the release's own argument parser rejected the command line: fix the flag the evidence "
         "names (the pinned version's flag table may differ from the one you used)",
         [Said(ARGPARSE, "usage: sglang serve [-h] --model-path MODEL_PATH", ["usage: "]),
          Said(ARGPARSE, "sglang serve: error: unrecognized arguments: --speculative-tree-width 4",
               ["%(prog)s: error: %(message)s", "unrecognized arguments: %s"]),
          Said(ARGPARSE, "sglang serve: error: argument --tp-size: invalid int value: 'two'",
               ["%(prog)s: error: %(message)s", "argument %(argument_name)s: %(message)s"]),
          Said(ARGPARSE, "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
                         "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill",
               ["%(prog)s: error: %(message)s", "ambiguous option: %(option)s could match %(matches)s"]),
          Said(ARGPARSE, "sglang serve: error: the following arguments are required: --model-path",
               ["%(prog)s: error: %(message)s", "the following arguments are required: %s"])]),
    Rule("import_error", ROOT,
         r"(?:ModuleNotFoundError|ImportError): ",
         "the release's virtualenv is incomplete or built for another Python: rebuild the release",
         [Said("python:importlib/_bootstrap.py", "ModuleNotFoundError: No module named 'sgl_kernel'",
               ["No module named "]),
          Said("Python: ImportError, raised by the import system for a name a module lacks",
               "ImportError: cannot import name 'DDTreeWorker' from 'sglang.srt.speculative'")]),
    # The HTTP server's bind (asyncio, under uvicorn) and SGLang's own port checks.
    Rule("port_in_use", ROOT,
         r"(?:address already in use|Port is already in use|is not available in \d+ seconds)",
         "another process holds the port (now {port}): stop it (ss -ltnp 'sport = :{port}') or "
         "choose another --port",
         [Said("python:asyncio/base_events.py",
               "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): "
               "address already in use",
               ["error while attempting ", "to bind on address %r: %s"]),
          Said("sglang:srt/server_args.py", "ValueError: Port is already in use. dist_init_port=30001 port_base=30000",
               ["Port is already in use. {dist_init_port=} {port_base=}"]),
          Said("sglang:srt/utils/network.py", "ValueError: port_base at 30001 is not available in 30 seconds. ",
               ["{port_name} at {port} is not available in {timeout_s} seconds. {error_message}"])]),
    # transformers' config loading, and a folder without its config.json.
    Rule("model_not_found", ROOT,
         r"(?:Incorrect path_or_model_id|is not a local folder and is not a valid model identifier|Can't load the "
         r"configuration of|does not appear to have a file named config\.json|"
         r"No such file or directory: '[^']*config\.json')",
         "the model directory is missing or incomplete: check --model-path (now {model_path}) "
         "and --speculative-draft-model-path (now {speculative_draft_model_path}) on the host",
         [Said("transformers: utils/hub.py (cached_files)",
               "OSError: Incorrect path_or_model_id: '/models/Qwen3.6-27B'. Please provide either the path to a "
               "local folder or the repo_id of a model on the Hub."),
          Said("transformers: utils/hub.py (cached_files)",
               "OSError: /models/x is not a local folder and is not a valid model identifier listed on "
               "'https://huggingface.co/models'"),
          Said("transformers: configuration_utils.py (get_config_dict)",
               "OSError: Can't load the configuration of '/models/x'."),
          Said("transformers: utils/hub.py (cached_files)",
               "OSError: /models/x does not appear to have a file named config.json."),
          Said("the kernel: ENOENT, as Python's open() says it",
               "FileNotFoundError: [Errno 2] No such file or directory: '/models/x/config.json'")]),
    # health_generate's one-token request got no answer (a rank hung in a kernel or a collective).
    Rule("health_check_failed", ROOT,
         r"Health check failed\. Server couldn't get a response from detokenizer",
         "the server is up but a one-token request got no answer: a rank is hung (a kernel or a collective that "
         "never returns); a py-spy dump of each sglang::scheduler process shows where; keep the known-good "
         "variant on this host class ({speculative_algorithm} hung here)",
         [Said("sglang:srt/entrypoints/http_server.py",
               "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start "
               "time: 06:24:35. last_heartbeat time: 06:24:14",
               ["Health check failed. Server couldn't get a response from detokenizer for last ",
                "{HEALTH_CHECK_TIMEOUT} seconds. tic start time: {tic_time}. ", "last_heartbeat time: {last_receive_time}"])]),
    Rule("warmup_failed", ROOT,
         r"Initialization failed\. warmup error",
         "the server started but its warm-up request failed: read the traceback in the evidence",
         [Said("sglang:srt/entrypoints/http_server.py", "Initialization failed. warmup error: Traceback (most recent "
               "call last):", ["Initialization failed. warmup error: {last_traceback}"])]),
    # A scheduler killed by SIGKILL is the OOM killer's work.
    Rule("oom_killed", ROOT,
         r"scheduler died during initialization \(exit code: -9\)",
         "the kernel's OOM killer ended a scheduler (SIGKILL): the host ran out of RAM; check "
         "`journalctl -k | grep -i oom`, free host memory or lower --tp-size (now {tp_size}) "
         "loaders running at once",
         [Said("sglang:srt/entrypoints/engine.py",
               "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 "
               "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
               ["Rank {rank} scheduler died during initialization ", "(exit code: {proc.exitcode}). ",
                "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. "])]),
    # A scheduler gone while the server runs, found by the main process's SubprocessWatchdog (which
    # then ends the server): its own lines above say why, when it had any (a C++ std::terminate in
    # torch's NCCL watchdog); a SIGKILL (exit code -9) leaves none. The rank is the scheduler's index.
    Rule("rank_died", ROOT,
         r"Subprocess scheduler_(?P<rank>\d+) \(pid=\d+\) crashed with exit code -?\d+",
         "a scheduler (one rank) of the running server died and the server stopped with it: its own lines "
         "before it say why, if any (exit code -9: a SIGKILL, the OOM killer or a GPU fault - `journalctl -k`; "
         "-6: an abort, torch's NCCL watchdog); keep the known-good variant on this host class until it is "
         "understood",
         [Said("sglang:srt/utils/watchdog.py",
               "Subprocess scheduler_3 (pid=4242) crashed with exit code -9. Triggering SIGQUIT for cleanup...",
               ["Subprocess {name} (pid={proc.pid}) crashed ", "with exit code {proc.exitcode}. ",
                "Triggering SIGQUIT for cleanup..."])]),
    Rule("child_died", CONSEQUENCE,
         r"(?:scheduler died during initialization|Received sigquit from a child process)",
         "a child process of the server died; the lines before it in the evidence say why",
         [Said("sglang:srt/entrypoints/engine.py", "RuntimeError: Rank 0 scheduler died during initialization "
               "(exit code: 1). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
               ["Rank {rank} scheduler died during initialization ", "(exit code: {proc.exitcode}). "]),
          Said("sglang:srt/entrypoints/engine.py",
               "Received sigquit from a child process. It usually means the child failed.")]),
)

# Startup phases, in SGLang's own order, each from its progress line.
PHASES = (
    ("server_args", re.compile(r"server_args=")),
    ("init_parallel", re.compile(r"Init parallel begin\.")),
    ("parallel_ready", re.compile(r"Init parallel ends\.")),
    ("loading_weights", re.compile(r"Load weight begin")),
    ("weights_loaded", re.compile(r"Load weight end\.")),
    ("memory_pool", re.compile(r"Memory pool end\.")),
    ("kernels_selected", re.compile(r"Using hybrid linear attention backend|GDN kernel dispatcher")),
    # srt/model_executor/model_runner_components/cuda_graph_setup.py
    ("cuda_graph", re.compile(r"Capture \w+ \w+ CUDA graph begin")),
    ("cuda_graph_done", re.compile(r"Capture \w+ \w+ CUDA graph end")),
    ("serving", re.compile(r"Uvicorn running on|Application startup complete")),
    ("ready", re.compile(r"The server is fired up and ready to roll!")),
)

# The line each phase is read from, and where its text comes from (as Rule.said).
PHASE_SAID = {
    "server_args": Said("sglang:srt/entrypoints/engine.py", "server_args=ServerArgs(model_path='/models/m', tp_size=2)",
                        ["server_args={_server_args_for_logging(server_args)}"]),
    "init_parallel": Said("sglang:srt/distributed/bootstrap.py", "Init parallel begin."),
    "parallel_ready": Said("sglang:srt/distributed/bootstrap.py", "Init parallel ends. elapsed=0.10 s",
                           ["Init parallel ends. elapsed="]),
    "loading_weights": Said("sglang:srt/model_executor/model_runner.py", "Load weight begin. avail mem=46.55 GB",
                            ["Load weight begin. avail mem="]),
    "weights_loaded": Said("sglang:srt/model_executor/model_runner.py",
                           "Load weight end. elapsed=0.60 s, type=Qwen3_5ForCausalLM", ["Load weight end. "]),
    "memory_pool": Said("sglang:srt/mem_cache/kv_cache_configurator.py", "Memory pool end. avail mem=4.04 GB",
                        ["Memory pool end. "]),
    "kernels_selected": Said("sglang:srt/layers/attention/attention_registry.py",
                             "Using hybrid linear attention backend for hybrid GDN models."),
    "cuda_graph": Said("sglang:srt/model_executor/model_runner_components/cuda_graph_setup.py",
                       "Capture target verify CUDA graph begin. backend=full", ["Capture {capture_name} CUDA graph begin. "]),
    "cuda_graph_done": Said("sglang:srt/model_executor/model_runner_components/cuda_graph_setup.py",
                            "Capture target verify CUDA graph end. bs=[1, 2, 4]", ["Capture {capture_name} CUDA graph end. "]),
    "serving": Said("sglang:srt/entrypoints/http_server.py", "Uvicorn running on 127.0.0.1:30000 (Press CTRL+C to quit)",
                    ["Uvicorn running on {config.host}:{config.port} "]),
    "ready": Said("sglang:srt/entrypoints/http_server.py", "The server is fired up and ready to roll!"),
}

# Most lines of a long invocation are neither evidence nor progress. Python's regex engine
# tries every alternative at every position of a line, so the rules themselves cost ~20 us a
# line; the literals each rule's match must contain, searched as one alternation of plain
# strings, cost a fifth of that, and only the lines they let through meet the rules. The
# literals are read from the patterns so that a new rule cannot be missed.
_META = frozenset(".^$*+?{}[]()|\\")
_QUANTIFIERS = frozenset("*?{")


def _structure(pattern):
    """(index, character, depth before it) of each character that shapes the pattern: not
    escaped and not inside a character class."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        else:
            yield i, char, depth
            depth += {"(": 1, ")": -1}.get(char, 0)
        i += 1


def split_alternatives(pattern):
    """The top-level alternatives of a regex (a `|` inside a group or a class does not split)."""
    cuts = [i for i, char, depth in _structure(pattern) if char == "|" and depth == 0]
    return [pattern[a + 1:b] for a, b in zip([-1] + cuts, cuts + [len(pattern)])]


def _group_end(pattern):
    """Where the group that opens the pattern closes (the index of its `)`)."""
    for i, char, depth in _structure(pattern):
        if char == ")" and depth == 1:
            return i
    raise ValueError("unbalanced group in %r" % pattern)


def leading_literal(alternative):
    """The plain text every match of one alternative starts with ('' when there is none)."""
    if alternative.startswith("^"):
        alternative = alternative[1:]
    out, i = [], 0
    while i < len(alternative):
        char = alternative[i]
        if char == "\\" and i + 1 < len(alternative) and not alternative[i + 1].isalnum():
            char, step = alternative[i + 1], 2
        elif char in _META:
            break
        else:
            step = 1
        if alternative[i + step:i + step + 1] in _QUANTIFIERS:
            break  # the character may be absent from a match
        out.append(char)
        i += step
    return "".join(out)


def required_literals(pattern):
    """Literals one of which every match of `pattern` contains, or None when some
    alternative has none (such a pattern is searched on every line)."""
    literals = []
    for alternative in split_alternatives(pattern):
        if alternative.startswith("(?:"):
            end = _group_end(alternative)
            if alternative[end + 1:end + 2] not in _QUANTIFIERS:
                inner = required_literals(alternative[3:end])
                if inner is None:
                    return None
                literals += inner
                continue
        literal = leading_literal(alternative)
        if not literal:
            return None
        literals.append(literal)
    return literals


def _prefilter(patterns):
    literals, unanchored = set(), []
    for pattern in patterns:
        found = required_literals(pattern)
        if found is None:
            unanchored.append("(?:%s)" % pattern)
        else:
            literals.update(found)
    alternation = [re.escape(literal) for literal in sorted(literals)] + unanchored
    return re.compile("|".join(alternation))


# PHASES carries `server_args=`, the line _inspect parses the arguments from.
INTERESTING = _prefilter([rule.regex.pattern for rule in RULES] + [phase[1].pattern for phase in PHASES])


HINTS_FOR_STATE = {
    "timeout": "the server did not answer 200 on its health endpoint within {timeout} s (last phase: "
               "{phase}); a model this size may need a longer timeout, or read the tail",
    "killed": "the process was killed by signal {signal}: a SIGKILL with no other evidence is usually "
              "the OOM killer (`journalctl -k | grep -i oom`)",
    "unknown": "no known failure signature in this invocation; read the tail",
}

SERVER_ARGS_RE = re.compile(r"server_args=(?:ServerArgs\()?(\{.*\}|.*)\)?\s*$")
# SGLang's log format: `[%Y-%m-%d %H:%M:%S] msg`, a scheduler of a server with more than one rank
# adding its prefix (` TP3`, ` DP1 TP3`: scheduler.py configure_scheduler_process). A line
# without a stamp continues the message above it (a traceback), so it is that message's rank's.
STAMP_RE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?P<prefix>(?: [A-Z_]+\d+)*)\] ")
RANK_RE = re.compile(r"\bTP(\d+)\b")
# torch's own prefix, once the process group is up: its excepthook's on each line of an uncaught
# exception (distributed_c10d.py, `[rank3]: `) and c10's on its C++ log lines (`[rank3]:[E1206 ...`).
TORCH_RANK_RE = re.compile(r"^\[rank(\d+)\]:")
# torch's CUDA out-of-memory message lists every process on the GPU (NVML), this one apart.
HOLDER_RE = re.compile(r"Process (\d+) has ([\d.]+ [KMGT]?i?B) memory in use")


class Classifier:
    """Feed an invocation's lines in order; `result()` names the cause.

    Keeps only a few lines of context, so memory does not grow with the invocation.
    """

    def __init__(self):
        self._before = collections.deque(maxlen=CONTEXT_BEFORE)
        self._open = []          # evidence entries still collecting lines after the match
        self.matches = []        # (line_no, rule, evidence dict), in line order
        self.phase = "starting"
        self._phase_rank = -1
        self.server_args = {}
        self.line_count = 0
        self.rank = None         # the rank whose message the current line belongs to

    def feed(self, line):
        line = line.rstrip("\n")
        self.line_count += 1
        if line.startswith("["):
            self._track_rank(line)
        if self._open:
            for entry in self._open:
                entry["lines"].append(line)
            self._open = [e for e in self._open if len(e["lines"]) < e["want"]]
        if INTERESTING.search(line):
            self._inspect(line)
        self._before.append(line)

    def _track_rank(self, line):
        stamp = STAMP_RE.match(line)
        if stamp:
            rank = RANK_RE.search(stamp.group("prefix"))
            self.rank = "TP" + rank.group(1) if rank else None
            return
        torch_rank = TORCH_RANK_RE.match(line)
        if torch_rank:
            self.rank = torch_rank_name(int(torch_rank.group(1)), self.server_args)

    def _inspect(self, line):
        self._track_phase(line)
        if not self.server_args and "server_args=" in line:
            self.server_args = parse_server_args(line)
        rule = match_rule(line)
        if rule is not None and len(self.matches) < 50:
            rank = rank_named(rule, line) or self.rank
            entry = {"line": self.line_count, "cause": rule.cause, "match": line, "rank": rank,
                     "lines": list(self._before) + [line],
                     "want": len(self._before) + 1 + CONTEXT_AFTER}
            self.matches.append((self.line_count, rule, entry))
            self._open.append(entry)

    def _track_phase(self, line):
        for rank, (name, regex) in enumerate(PHASES):
            if rank > self._phase_rank and regex.search(line):
                self.phase, self._phase_rank = name, rank

    def result(self, state=None, args=None, signal=None, timeout=None):
        """The cause, hint, evidence and phase. `state`/`signal` come from systemd (a
        SIGKILL with no log evidence is still the OOM killer); `args` fill the hint when
        the log carried no server_args line."""
        values = dict(args or {})
        values.update(self.server_args)
        chosen = pick_cause(self.matches)
        if chosen is not None:
            cause, hint = chosen.cause, chosen.hint
        elif signal in (9, "9", "KILL", "SIGKILL"):
            cause, hint = "oom_killed", HINTS_FOR_STATE["killed"]
        elif state == "timeout":
            cause, hint = "timeout", HINTS_FOR_STATE["timeout"]
        elif state in (None, "healthy"):
            cause, hint = None, None
        else:
            cause, hint = "unknown", HINTS_FOR_STATE["unknown"]
        values.setdefault("timeout", timeout)
        values.setdefault("signal", signal)
        values.setdefault("phase", self.phase)
        evidence = [strip_entry(m[2]) for m in self.matches[:MAX_EVIDENCE]]
        if chosen is not None:
            first = next(m[2] for m in self.matches if m[1] is chosen)
            evidence = [strip_entry(first)] + [e for e in evidence if e["line"] != first["line"]]
        ranks = ranks_of(self.matches, chosen)
        hint = fill_hint(hint, values) if hint else None
        if chosen is not None and chosen.cause == "cuda_oom":
            hint = with_holders(hint, evidence[0]["match"])
        return {"cause": cause, "hint": hint, "rank": ranks[0] if len(ranks) == 1 else None, "ranks": ranks,
                "evidence": evidence[:MAX_EVIDENCE], "phase": self.phase, "lines": self.line_count}


def rank_named(rule, line):
    """The rank a rule's line names itself (the subprocess watchdog's `scheduler_<i>`), or None."""
    if "rank" not in rule.regex.groupindex:
        return None
    found = rule.regex.search(line)
    return "TP%s" % found.group("rank") if found and found.group("rank") else None


def torch_rank_name(rank, server_args):
    """torch's global rank as SGLang names it: with one pipeline stage the global rank is the TP
    rank (a server group's nodes count on from node 0's), so `TP<i>` as SGLang's own prefix says;
    across pipeline stages it is not, and stays torch's `rank<i>`."""
    pipeline = server_args.get("pp_size") or 1
    return "TP%d" % rank if int(pipeline) <= 1 else "rank%d" % rank


def match_rule(line):
    for rule in RULES:
        if rule.regex.search(line):
            return rule
    return None


def pick_cause(matches):
    """The earliest root cause wins over its consequences; consequences only name the
    cause when nothing else in the invocation does."""
    for match in matches:
        if match[1].kind == ROOT:
            return match[1]
    return matches[0][1] if matches else None


def strip_entry(entry):
    return {"line": entry["line"], "cause": entry["cause"], "match": entry["match"], "rank": entry["rank"],
            "context": list(entry["lines"])}


def ranks_of(matches, chosen):
    """The ranks whose own lines show the chosen cause, in the order they said it: one rank
    failing alone is named; a cause every rank hit (a memory plan all ranks share) is not
    one rank's."""
    ranks = []
    for _line, rule, entry in matches:
        if rule is chosen and entry["rank"] and entry["rank"] not in ranks:
            ranks.append(entry["rank"])
    return ranks


def with_holders(hint, line):
    """torch's CUDA OOM names the other processes on the GPU and their memory: say them."""
    holders = HOLDER_RE.findall(line)
    if not holders:
        return hint
    return "%s; on that GPU, %s: stop them or move them to other GPUs" % (
        hint, ", ".join("PID %s holds %s" % holder for holder in holders))


class _Missing(dict):
    def __missing__(self, key):
        return "unknown"


# Server arguments the deploy sets from their own inventory variables; every other one is a
# key of sglang_envelope_overrides (applied last, over the class envelope and the variant).
INVENTORY_VARIABLE = {"model_path": "sglang_model_path", "speculative_draft_model_path": "sglang_draft_model_path",
                      "port": "sglang_service_port", "host": "sglang_service_host",
                      "dist_init_addr": "sglang_dist_init_addr"}
FLAG_RE = re.compile(r"--([a-z][a-z0-9-]*)")


def inventory_variables(template):
    """The inventory variables that set the flags a hint names, in the hint's order."""
    names = []
    for flag in FLAG_RE.findall(template):
        field = flag.replace("-", "_")
        name = INVENTORY_VARIABLE.get(field, "sglang_envelope_overrides." + field)
        if name not in names:
            names.append(name)
    return names


def fill_hint(template, values):
    """The hint with this invocation's values, and the inventory variables to change."""
    shown = _Missing((k, _show(v)) for k, v in values.items() if v is not None)
    text = template.format_map(shown)
    variables = inventory_variables(template)
    return text + ("; in the inventory: %s" % ", ".join(variables) if variables else "")


def _show(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def parse_server_args(line):
    """SGLang logs `server_args={...}` (a dict repr) once at start: the exact values."""
    match = SERVER_ARGS_RE.search(line)
    if not match:
        return {}
    text = match.group(1)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return parse_kwargs_repr(text)
    return value if isinstance(value, dict) else {}


def parse_kwargs_repr(text):
    """Fallback for the dataclass repr form `ServerArgs(model_path='...', tp_size=2, ...)`."""
    out = {}
    for key, raw in re.findall(r"(\w+)=('(?:[^'\\]|\\.)*'|[^,()]+)", text):
        try:
            out[key] = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            out[key] = raw.strip()
    return out


def args_from_argv(argv):
    """Server arguments from a command line (`--mem-fraction-static 0.88` or `--x=y`)."""
    if isinstance(argv, str):
        argv = shlex.split(argv)
    out = {}
    key = None
    for token in argv:
        if token.startswith("--"):
            name, sep, value = token[2:].partition("=")
            key = name.replace("-", "_")
            out[key] = value if sep else True
            if sep:
                key = None
        elif key is not None:
            out[key] = token
            key = None
    return out


def classify(lines, **context):
    """Classify a whole sequence of lines (a list, a file, a generator)."""
    classifier = Classifier()
    for line in lines:
        classifier.feed(line)
    return classifier.result(**context)
