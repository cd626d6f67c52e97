"""The stand-in for `python -m sglang.launch_server` on a lab host.

Replaces exactly SGLang's GPU work: it sizes memory from the host's (fake) GPUs and the
model's config.json, logs SGLang 0.5.23's own lines in SGLang's order, fails where SGLang
would, and then serves SGLang's endpoints with SGLang's status codes. Every line and
status it emits is listed with its SGLang source file in lab/MESSAGES.md.
"""
import datetime
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import gpu as lab_gpu
from . import group
from . import memory
from . import ranks
from . import speculative

LAB_ETC = os.environ.get("INFEROPS_LAB_ETC", "/etc/inferops-lab")
GIB = memory.GIB
# Stand-in timing of each start-up phase, in seconds (a lab host's sim.json overrides it).
# drain_poll: how often a SIGTERM'd server looks whether its requests are done
# (tokenizer_manager.sigterm_watchdog sleeps 5 s between looks).
DEFAULT_TIMINGS = {"init_parallel": 0.2, "load_weights": 2.0, "load_draft": 0.5, "memory_pool": 0.5, "cuda_graph": 1.0,
                   "warmup": 1.0, "drain_poll": 5.0}
# Decode tokens/s of one request, by host class and variant. DDTree is 1.24x DFLASH on
# RTX PRO 6000 Blackwell and 0.68x on RTX A6000, as public measurements found.
TOKEN_RATES = {
    "blackwell": {"NONE": 70.0, "EAGLE": 110.0, "DFLASH": 150.0, "DDTREE": 186.0},
    "a6000": {"NONE": 30.0, "EAGLE": 45.0, "DFLASH": 62.0, "DDTREE": 42.2},
}
TRACE_FRAMES = 120   # a CUDA error's C++ stack, as torch prints it
# http_server.py: HEALTH_CHECK_TIMEOUT = int(os.getenv("SGLANG_HEALTH_CHECK_TIMEOUT", 20))
HEALTH_CHECK_TIMEOUT = int(os.environ.get("SGLANG_HEALTH_CHECK_TIMEOUT", 20))


def read_json(name, default):
    try:
        with open(os.path.join(LAB_ETC, name)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


class Log:
    """SGLang's log format: `[%Y-%m-%d %H:%M:%S] msg`; a scheduler of a server with more
    than one rank adds its prefix (`[... TP3] msg`). Each message goes out in one write, so
    the lines of ranks logging at once do not interleave inside a message."""

    prefix = ""   # set in each scheduler process (ranks.log_prefix)

    @classmethod
    def line(cls, text):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        cls.raw("[%s%s] %s" % (stamp, cls.prefix, text))

    @staticmethod
    def raw(text):
        sys.stdout.flush()
        data = (text + "\n").encode("utf-8", "replace")
        while data:
            data = data[os.write(1, data):]


def traceback_lines(where, error, cpp_frames=0):
    lines = ["Traceback (most recent call last):"]
    for path, line, func in where:
        lines.append('  File "%s", line %d, in %s' % (path, line, func))
    lines.append(error)
    if cpp_frames:
        lines.append("Exception raised from c10_cuda_check_implementation at "
                     "/pytorch/c10/cuda/CUDAException.cpp:44 (most recent call first):")
        lines += ["frame #%d: <unknown function> + 0x%x (0x7f3a5c%06x in /opt/sglang/lib/libtorch_cuda.so)"
                  % (i, 0x1d6a0 + 64 * i, 0x1d6a0 + 64 * i) for i in range(cpp_frames)]
    return lines


SCHEDULER_FRAMES = [
    ("sglang/srt/managers/scheduler.py", 3011, "run_scheduler_process"),
    ("sglang/srt/managers/scheduler.py", 402, "__init__"),
    ("sglang/srt/managers/tp_worker.py", 248, "__init__"),
    ("sglang/srt/model_executor/model_runner.py", 611, "__init__"),
    ("sglang/srt/model_executor/model_runner.py", 901, "initialize"),
]


class RankFailure(Exception):
    """A scheduler's start-up failed; `lines` is what it logs after "Scheduler hit an exception: "."""

    def __init__(self, lines):
        super().__init__(lines[-1])
        self.lines = lines


# torch (c10/cuda/CUDAException.cpp) after a failed CUDA call: cudaGetErrorString's text and two lines.
CUDA_ASYNC = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
              "below might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"]


def nccl_error(server):
    """torch's ProcessGroupNCCL (NCCLUtils) on a failed NCCL call, NCCL 2.30.7's own texts."""
    return (["torch.distributed.DistBackendError: NCCL error in: /__w/pytorch/pytorch/torch/csrc/distributed/c10d/"
             "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.30.7",
             "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
             "Cuda failure 2 'out of memory'"], 0)


def capture_error(server):
    """A capture broken on this rank, raised by torch itself without SGLang's wrapper line."""
    return (["torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"] + CUDA_ASYNC,
            TRACE_FRAMES)


def cuda_oom(server):
    """The rank's allocation does not fit: torch's allocator message, with NVML's list of
    the processes on that GPU."""
    gpu = server.card(server.rank)
    free = lab_gpu.free_mib(gpu)
    return (["torch.OutOfMemoryError: %s" % lab_gpu.OutOfMemory(
        int(gpu["index"]), free + 2048, int(gpu["memory_total_mib"]), free)], 0)


RANK_ERRORS = {"nccl": nccl_error, "capture": capture_error, "cuda_oom": cuda_oom}


class Server:
    def __init__(self, args, table):
        self.args = args
        self.table = table
        self.gpus = read_json("gpus.json", {"gpus": [], "host_class": "unknown"})
        self.faults = self.faults_for(read_json("faults.json", {}), args.speculative_algorithm)
        self.timings = dict(DEFAULT_TIMINGS, **read_json("sim.json", {}).get("timings", {}))
        self.ready = False
        self.stopping = False
        self.in_flight = 0
        self.in_flight_lock = threading.Lock()
        self.health_answered = False
        self.pid = os.getpid()
        self.plan = None
        self.started = time.time()
        self.last_receive = self.started
        self.target = self.draft = None
        self.ranks, self.conns, self.exit_codes = [], [], {}   # the children: schedulers, then the detokenizer
        self.rank = None
        self.forward_lock = threading.Lock()
        self.reap_lock = threading.Lock()
        # --nnodes: this node runs its share of the TP ranks (engine.py _calculate_rank_ranges).
        self.nnodes, self.node_rank = int(args.nnodes or 1), int(args.node_rank or 0)
        self.tp_ranks, self.tp_per_node = group.layout(args.tp_size, self.nnodes, self.node_rank)
        self.store = self.member = None   # this rank's process group, when the server spans nodes
        # --enable-metrics: SGLang's /metrics (without it the route is not mounted: 404).
        self.metrics = speculative.Metrics(args.served_model_name or args.model_path) if getattr(
            args, "enable_metrics", False) else None

    @staticmethod
    def faults_for(faults, algorithm):
        """The host's faults, unless they name another variant ({"only_algorithm": "DFLASH"}):
        a test can break the new variant and still roll back to a working known-good. Or each
        variant's own, by its resolved name ({"by_algorithm": {"DDTREE": {...}, "EAGLE": {...}}};
        NEXTN is EAGLE, as SGLang resolves it): the new one broken, the known-good slow to start."""
        name = algorithm or "NONE"
        if "by_algorithm" in faults:
            return faults["by_algorithm"].get(name, {})
        only = faults.get("only_algorithm")
        return faults if not only or only == name else {}

    # --- start-up, in SGLang's order ------------------------------------------------
    # engine.py _launch_subprocesses: one scheduler per rank, then the detokenizer; the main
    # process waits for every scheduler's "ready" (_wait_for_scheduler_ready), then serves.
    def start(self):
        args = self.args
        Log.line("server_args=%r" % {k: v for k, v in sorted(vars(args).items()) if k != "api_key"})
        self.target = self.load_config(args.model_path)
        self.draft = self.load_config(args.speculative_draft_model_path) if args.speculative_draft_model_path else None
        signal.signal(signal.SIGQUIT, self.launch_phase_sigquit)
        signal.signal(signal.SIGTERM, self.launch_phase_sigterm)
        if args.tp_size % self.nnodes:
            self.launcher_assertion("tp_size must be divisible by number of nodes")
        if self.faults.get("stall") == "launch":
            # The launcher stuck before its ranks start (an import or a model folder on a dead
            # network mount): a node of a group that never reaches distributed init.
            while True:
                time.sleep(3600)
        for rank in self.tp_ranks:
            mine, theirs = multiprocessing.Pipe()
            # The rank_outlives_main fault ([ranks]): stuck in the driver, the parent-death SIGKILL
            # cannot land, and the rank outlives its server with its GPU memory (sglang#23627).
            pid = ranks.fork_child(ranks.scheduler_title(rank, args.tp_size), self.run_scheduler, rank, theirs,
                                   self.conns + [mine],
                                   outlive_parent=rank in (self.faults.get("rank_outlives_main") or ()))
            theirs.close()
            self.ranks.append(pid)
            self.conns.append(mine)
        if self.node_rank == 0:   # engine.py: the other nodes run their schedulers only
            self.ranks.append(ranks.fork_child("sglang::detokenizer", self.run_detokenizer, self.conns))
        infos = self.wait_for_schedulers_ready()
        self.plan = infos[0]["plan"]
        if self.node_rank > 0:
            return   # engine.py: non-zero nodes run no tokenizer; serve_follower waits instead
        plan = self.plan
        Log.prefix = ranks.log_prefix(0, args.tp_size)   # scheduler.py logs it from TP0
        Log.line("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, "
                 "context_len=%d, available_gpu_mem=%.2f GB" % (
                     plan["max_total_num_tokens"], args.chunked_prefill_size or 8192,
                     args.max_prefill_tokens or 16384, plan["max_running_requests"],
                     plan["context_length"], plan["headroom_gib"] - plan["graph_gib"]))
        Log.prefix = ""
        signal.signal(signal.SIGQUIT, self.running_phase_sigquit)
        self.start_subprocess_watchdog()

    def start_subprocess_watchdog(self):
        """engine.py, once the schedulers are ready: a SubprocessWatchdog (utils/watchdog.py) looks
        at each scheduler every second; one that exited other than 0 (a C++ std::terminate in torch's
        NCCL watchdog, a SIGKILL) is logged, and the main process SIGQUITs itself (the running
        phase's handler ends the tree). A stopping server's children are its own to end."""
        schedulers = list(self.ranks[:len(self.conns)])

        def watch():
            while not self.stopping:
                time.sleep(1.0)
                for index, pid in enumerate(schedulers):
                    code = None if self.stopping else self.exited(pid)
                    if code not in (None, 0):
                        Log.line("Subprocess scheduler_%d (pid=%d) crashed with exit code %d. Triggering SIGQUIT "
                                 "for cleanup..." % (index, pid, code))
                        os.kill(self.pid, signal.SIGQUIT)
                        return
        threading.Thread(target=watch, daemon=True).start()

    def launch_phase_sigquit(self, signum, frame):
        """engine.py launch_phase_sigquit_handler: a child failed; kill_process_tree(own pid)
        SIGKILLs every child, then the main process itself."""
        Log.line("Received sigquit from a child process. It usually means the child failed.")
        ranks.kill_tree(self.ranks)
        os.kill(os.getpid(), signal.SIGKILL)

    def launch_phase_sigterm(self, signum, frame):
        """SGLang's main process has no SIGTERM handler until it serves: it dies at once, and its
        children with it (SIGTERM from the unit's stop, and their parent-death signal). The
        stand-in ends and reaps them first, then dies of the same SIGTERM: systemd 252 in the
        lab's cgroup-v1 containers gets no notice when the last of a unit's orphaned processes
        leaves its cgroup, and would wait out TimeoutStopSec (a cgroup-v2 host does not)."""
        ranks.kill_tree(self.ranks)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def running_phase_sigquit(self, signum, frame):
        """tokenizer_manager.py running_phase_sigquit_handler, then kill_process_tree."""
        Log.line("SIGQUIT received. signum=%r, frame=%r. It usually means one child failed." % (signum, frame))
        ranks.kill_tree(self.ranks)
        os.kill(os.getpid(), signal.SIGKILL)

    def wait_for_schedulers_ready(self):
        """engine.py _wait_for_scheduler_ready: each rank's pipe in turn, polled every 5 s
        (the stand-in's drain_poll clock), checking between polls that no rank has died."""
        infos = []
        for rank, conn in enumerate(self.conns):
            while True:
                if conn.poll(float(self.timings.get("drain_poll", 5.0))):
                    try:
                        infos.append(conn.recv())
                    except EOFError:
                        self.scheduler_died(rank)
                    break
                for other, pid in enumerate(self.ranks[:len(self.conns)]):
                    if self.exited(pid) is not None:
                        self.scheduler_died(other)
        return infos

    def exited(self, pid):
        with self.reap_lock:   # (the subprocess watchdog's thread reaps too)
            return self.reaped(pid)

    def reaped(self, pid):
        if pid not in self.exit_codes:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                self.exit_codes[pid] = ranks.exit_code(status)
        return self.exit_codes.get(pid)

    def scheduler_died(self, rank):
        """engine.py _scheduler_died_error, raised out of the launcher: the main process exits
        and the other ranks stay (systemd's control-group kill ends them)."""
        pid = self.ranks[rank]
        code = self.exited(pid)
        if code is None:
            code = self.exit_codes[pid] = ranks.exit_code(os.waitpid(pid, 0)[1])
        self.launcher_died(code, rank)
        # The other ranks die with the launcher (their parent-death signal); reaped here first,
        # for the lab's cgroup-v1 systemd (launch_phase_sigterm).
        ranks.kill_tree([pid for pid in self.ranks if pid != self.ranks[rank]])
        sys.exit(1)

    @staticmethod
    def launcher_assertion(text):
        """validation_hook.check_server_args, which runs at launch (not in the argument checker)."""
        Log.raw("\n".join(traceback_lines(
            [("sglang/launch_server.py", 52, "<module>"), ("sglang/srt/server_args.py", 430, "__post_init__"),
             ("sglang/srt/arg_groups/validation_hook.py", 179, "check_server_args")], "AssertionError: " + text)))
        sys.exit(1)

    @staticmethod
    def launcher_died(code, rank=0):
        Log.raw("\n".join(traceback_lines(
            [("sglang/launch_server.py", 52, "<module>"), ("sglang/launch_server.py", 31, "run_server"),
             ("sglang/srt/entrypoints/http_server.py", 2911, "launch_server"),
             ("sglang/srt/entrypoints/engine.py", 2031, "_launch_scheduler_processes")],
            "RuntimeError: Rank %d scheduler died during initialization (exit code: %d). If exit code is -9 "
            "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check." % (rank, code))))

    def run_detokenizer(self, inherited):
        for conn in inherited:
            conn.close()
        while True:   # detokenizer_manager.py: an event loop on its ZMQ socket
            time.sleep(3600)

    # --- one scheduler (a rank) ---------------------------------------------------------
    def run_scheduler(self, rank, conn, inherited):
        """scheduler.py run_scheduler_process: on an exception, log it and SIGQUIT the parent."""
        for other in inherited:
            other.close()
        Log.prefix = ranks.log_prefix(rank, self.args.tp_size)
        self.rank = rank
        try:
            self.scheduler_init(rank)
        except RankFailure as exc:
            Log.line("Scheduler hit an exception: " + "\n".join(exc.lines))
            os.kill(os.getppid(), signal.SIGQUIT)
            return
        conn.send({"status": "ready", "plan": self.plan})
        if self.node_rank > 0:
            self.follow(conn)
            return
        self.event_loop(rank, conn)

    def next_message(self, conn):
        """The next batch the main process sends. Node 0's TP0 of a server group broadcasts on
        its CPU group at each turn of the loop (scheduler.py recv_requests, broadcast_pyobj over
        gloo), batch or not: a remote rank whose process ended fails it at once with gloo's
        error, which the scheduler logs before it SIGQUITs the main process."""
        while self.store is not None and not conn.poll(0.2):
            lost = self.store.peer_lost()
            if lost is not None:
                self.group_failed(lost)
                while True:
                    time.sleep(3600)
        return conn.recv()

    @staticmethod
    def group_failed(exc):
        """The scheduler's process group failed while serving (gloo's error in recv_requests): it
        logs the exception and SIGQUITs the main process, which kills the tree."""
        Log.line("Scheduler hit an exception: " + "\n".join(traceback_lines(
            [("sglang/srt/managers/scheduler.py", 3011, "run_scheduler_process"),
             ("sglang/srt/managers/scheduler.py", 1204, "event_loop_normal"),
             ("sglang/srt/managers/scheduler.py", 1391, "recv_requests")], exc.lines[0])))
        os.kill(os.getppid(), signal.SIGQUIT)

    def follow(self, conn):
        """A non-zero node's scheduler: it runs node 0's batches until the ShutdownReq; a lost
        rank 0 fails it (gloo's error), and its launcher kills the node's tree."""
        try:
            self.member.follow()
        except group.GroupError as exc:
            self.group_failed(exc)

    def scheduler_init(self, rank):
        args = self.args
        self.init_parallel(rank)
        gpu_mib = self.gpu_memory_mib(rank)
        total = gpu_mib / 1024.0
        Log.line("Load weight begin. avail mem=%.2f GB" % (total - 0.45))
        self.sleep("load_weights")
        self.fault_point(rank, "load_weights")
        weights, draft_weights = memory.weights_gib(args, self.target, self.draft)
        self.hold(rank, (weights + draft_weights + memory.FRAMEWORK_OVERHEAD_GIB) * 1024)
        try:
            self.plan = memory.plan(args, self.target, self.draft, gpu_mib)
            failure = None
        except memory.StartupFailure as exc:
            failure = exc
        Log.line("Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB."
                 % (self.timings["load_weights"], self.target["architectures"][0], total - 0.45 - weights, weights))
        if self.draft:
            self.sleep("load_draft")
            dw = draft_weights
            Log.line("Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB."
                     % (self.timings["load_draft"], self.draft["architectures"][0], total - 0.45 - weights - dw, dw))
        if self.member:
            self.member.barrier("memory_pool")   # the KV pool's size is all-reduced over every rank
        self.sleep("memory_pool")
        self.fault_point(rank, "memory_pool")
        if self.faults.get("oom_kill") == "memory_pool" and rank == 0:
            self.oom_killed()
        if failure is not None:
            self.die(failure.lines)
        # The KV pool and the state fill the rest of the static budget.
        self.hold(rank, max(0.0, self.plan["budget_gib"] - weights - draft_weights
                            - memory.FRAMEWORK_OVERHEAD_GIB) * 1024)
        self.log_pools(self.target)
        self.capture_graphs(rank)

    def init_parallel(self, rank):
        """distributed/bootstrap.py: torch.distributed and NCCL come up on every rank."""
        Log.line("Init parallel begin.")
        if self.local(rank) >= len(self.gpus.get("gpus", [])):
            self.die(["torch.AcceleratorError: CUDA error: invalid device ordinal",
                      "GPU device may be out of range, do you have enough GPUs?"])
        if self.nnodes > 1:
            self.join_group(rank)
        self.sleep("init_parallel")
        self.fault_point(rank, "init_parallel")
        Log.line("Init parallel ends. elapsed=%.2f s" % float(self.timings.get("init_parallel", 0)))

    def join_group(self, rank):
        """torch.distributed's rendezvous at --dist-init-addr: global rank 0 serves the store."""
        timeout = float(self.args.dist_timeout or group.DEFAULT_TIMEOUT_S)
        try:
            if rank == 0:
                self.store = group.Store(group.parse_addr(self.args.dist_init_addr)[1], self.args.tp_size,
                                         self.tp_ranks)
            self.member = group.Member(self.args.dist_init_addr, rank, timeout)
            self.member.join(self.store)
        except group.GroupError as exc:
            self.die(exc.lines)

    def fault_point(self, rank, phase):
        """The lab's rank faults: `stall` (every rank stops making progress in this phase, as
        a collective does when one peer hangs in it) and `rank_error` (this rank alone fails
        with the error of the layer below SGLang; its lines are its own)."""
        if self.faults.get("stall") == phase:
            while True:
                time.sleep(3600)
        error = self.faults.get("rank_error") or {}
        if error.get("phase", "init_parallel") == phase and int(error.get("rank", -1)) == rank:
            self.die(*RANK_ERRORS[error.get("error", "nccl")](self))

    def oom_killed(self):
        """The kernel's OOM killer picks the biggest process: a TP scheduler (no SIGQUIT: the
        launcher finds the rank dead), or the launcher itself (its ranks are orphaned)."""
        if self.faults.get("oom_kill_target") == "launcher":
            os.kill(os.getppid(), signal.SIGKILL)
            while True:
                time.sleep(3600)
        os.kill(os.getpid(), signal.SIGKILL)

    def die(self, error_lines, cpp_frames=0):
        """A scheduler failed during init: its traceback, logged by run_scheduler."""
        raise RankFailure(traceback_lines(SCHEDULER_FRAMES, error_lines[0], cpp_frames) + error_lines[1:])

    def sleep(self, phase):
        extra = float(self.faults.get("slow_start_s", 0)) if phase == "load_weights" else 0.0
        time.sleep(float(self.timings.get(phase, 0)) + extra)

    def load_config(self, path):
        try:
            with open(os.path.join(path, "config.json")) as fh:
                return json.load(fh)
        except OSError:
            Log.raw("\n".join(traceback_lines(
                [("sglang/launch_server.py", 52, "<module>"),
                 ("sglang/srt/utils/hf_transformers_utils.py", 512, "get_config"),
                 ("transformers/configuration_utils.py", 662, "_get_config_dict")],
                "OSError: Incorrect path_or_model_id: '%s'. Please provide either the path to a local folder "
                "or the repo_id of a model on the Hub." % path)))
            sys.exit(1)

    def cards(self):
        return self.gpus.get("gpus", [])[:self.tp_per_node]

    def local(self, rank):
        """The node's GPU a TP rank uses (base_gpu_id 0, gpu_id_step 1)."""
        return rank % self.tp_per_node

    def card(self, rank):
        return self.cards()[self.local(rank)]

    def hold(self, rank, mib):
        """Take `mib` on this rank's GPU (the host's shared GPU state, held by this process
        until it exits); what does not fit fails as torch does."""
        try:
            lab_gpu.allocate({int(self.card(rank)["index"]): int(mib)},
                             linger_s=float(self.faults.get("gpu_release_lag_s", 0)))
        except lab_gpu.OutOfMemory as exc:
            self.die(["torch.OutOfMemoryError: %s" % exc])

    def gpu_memory_mib(self, rank):
        """SGLang's pre_model_load_memory: what is free on the GPUs before the model loads (the
        smallest over the TP ranks, all-reduced), after each rank's check that it sees about
        the same (bootstrap.py _check_tp_memory_balance). (The CUDA context is counted with
        the weights, as memory.plan's framework overhead.)"""
        held = lab_gpu.all_holds()
        free = [lab_gpu.free_mib(g, held) for g in self.cards()]
        pre, local = min(free), free[self.local(rank)]
        if self.tp_per_node > 1 and pre < local * 0.9:
            self.die(["RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
                      "processes. pre_model_load_memory=%r, local_gpu_memory=%r, local_gpu_memory * 0.9=%r"
                      % (pre / 1024.0, local / 1024.0, local / 1024.0 * 0.9)])
        return pre

    def log_pools(self, target):
        plan = self.plan
        kv_gib = plan["max_total_num_tokens"] * plan["kv_bytes_per_token"] / GIB
        Log.line("KV Cache is allocated. dtype: torch.bfloat16, #tokens: %d, K size: %.2f GB, V size: %.2f GB"
                 % (plan["max_total_num_tokens"], kv_gib / 2, kv_gib / 2))
        Log.line("Memory pool end. avail mem=%.2f GB" % plan["headroom_gib"])
        if memory.full_attention_layers(target) < target["num_hidden_layers"]:
            Log.line("Linear attention kernel backend: decode=triton, prefill=triton")
            Log.line("Using hybrid linear attention backend for hybrid GDN models.")
            Log.line("GDN kernel dispatcher: decode=TritonGDNKernel, extend=TritonGDNKernel, "
                     "verify=TritonGDNKernel packed_decode=True")

    def capture_graphs(self, rank):
        args, plan = self.args, self.plan
        if args.disable_cuda_graph:
            return
        name = "target verify" if args.speculative_algorithm else "target decode"
        Log.line("Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, avail mem=%.2f GB"
                 % (name, memory.tokens_per_verify(args), plan["headroom_gib"]))
        self.sleep("cuda_graph")
        self.fault_point(rank, "cuda_graph")
        if not plan["graph_fits"]:
            self.die(["Exception: Capture cuda graph failed: CUDA error: operation failed due to a previous "
                      "error during capture",
                      "Possible solutions:",
                      "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
                      "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
                      "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. "
                      "Huge performance loss)",
                      "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "],
                     cpp_frames=TRACE_FRAMES)
        self.hold(rank, plan["graph_gib"] * 1024)
        sizes = [bs for bs in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160) if bs <= plan["graph_bs"]]
        Log.line("Capture %s CUDA graph end. bs=%s, elapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB."
                 % (name, sizes, self.timings["cuda_graph"], plan["graph_gib"],
                    plan["headroom_gib"] - plan["graph_gib"]))

    def event_loop(self, rank, conn):
        """The scheduler's event loop: it answers each forward the main process asks of it.
        The `rank_hang` fault ({"rank": 1, "after_forwards": 2}) hangs this rank in its forward
        after that many (a kernel or a collective that never returns; 0: the warm-up's): the
        main process stays up, so /health answers 503 after HEALTH_CHECK_TIMEOUT and no
        generation completes. When the main process is gone the rank keeps its GPU memory
        (nothing tells a real scheduler to exit, sgl-project/sglang#23627): the unit's
        control-group kill ends it."""
        hang = self.faults.get("rank_hang") or {}
        dies = self.faults.get("rank_dies") or {}   # ({"rank": 3, "when_file": ...}: a rank that dies late)
        # ("when_file": only once that file exists - a rank that hangs minutes into serving, after its gates.)
        trigger = hang.get("when_file")
        forwards = 0
        while True:
            try:
                message = self.next_message(conn)
            except EOFError:
                while True:
                    time.sleep(3600)
            if int(hang.get("rank", -1)) == rank and forwards >= int(hang.get("after_forwards", 0)) and \
                    (not trigger or os.path.exists(trigger)):
                while True:
                    time.sleep(3600)
            if int(dies.get("rank", -1)) == rank and os.path.exists(dies.get("when_file", "/nonexistent")):
                self.terminated_by_the_nccl_watchdog(rank)
            forwards += 1
            if message == "crash":
                self.crash()
            if message == "shutdown":
                if self.store:
                    self.store.shutdown_remote()
                sys.exit(0)
            if self.store:
                try:
                    self.store.forward_remote()
                except group.GroupError as exc:
                    self.group_failed(exc)
                    while True:
                        time.sleep(3600)
            conn.send("done")

    # --- serving ---------------------------------------------------------------------
    def bind(self, handler=None):
        host, port = self.args.host, self.args.port
        try:
            httpd = ThreadingHTTPServer((host, port), handler or make_handler(self))
        except OSError as exc:
            Log.raw("ERROR:    [Errno %d] error while attempting to bind on address ('%s', %d): %s"
                    % (exc.errno or 98, host, port, "address already in use"))
            sys.exit(1)
        httpd.daemon_threads = True
        return httpd

    def warm_up(self):
        """http_server.py _wait_and_warmup: one request through every rank, then ready."""
        self.sleep("warmup")
        if self.faults.get("hang_before_ready"):
            return
        self.forward()
        self.ready = True
        Log.line("The server is fired up and ready to roll!")
        trigger = self.faults.get("crash_when_file")
        if trigger:
            threading.Thread(target=self.crash_once_exists, args=(trigger,), daemon=True).start()
        crash = self.faults.get("crash_after_ready_s")
        if crash is not None:
            time.sleep(float(crash))
            self.crash_now()

    def loop_stopped(self):
        """The `tokenizer_hang` fault ({"when_file": ...}): once that file exists, the main
        process's event loop - uvicorn's and the TokenizerManager's, one asyncio loop
        (http_server.py) - no longer turns: a synchronous call blocks it (request preprocessing,
        sgl-project/sglang#30770; a tokenizer hang, #40809). Every connection is accepted by the
        kernel and none is answered - /health, /health_generate, /generate, /metrics - while the
        schedulers run on, and nothing is logged (#30314: "no error in logs"; 0.5.23 has no
        watchdog on that loop, #36900)."""
        trigger = (self.faults.get("tokenizer_hang") or {}).get("when_file")
        return bool(trigger) and os.path.exists(trigger)

    @staticmethod
    def blocked_for_ever():
        while True:
            time.sleep(3600)

    def block_if_stopped(self):
        """What each request handler meets first, and a stream before each token: a stopped loop
        answers nothing, ever."""
        if self.loop_stopped():
            self.blocked_for_ever()

    def crash_once_exists(self, path):
        """The crash_when_file fault: the crash comes when a test says (the file appears), so that
        it follows an event the test orders it after (a controller killed while the gate waits),
        however loaded the machine is."""
        while not os.path.exists(path):
            time.sleep(0.1)
        self.crash_now()

    def answered_health(self):
        """After a /health 200: the crash_after_first_health_s fault starts its clock at the
        first one, so the gate has seen the server healthy however loaded the host is."""
        crash = self.faults.get("crash_after_first_health_s")
        if crash is None or self.health_answered:
            return
        self.health_answered = True
        threading.Timer(float(crash), self.crash_now).start()

    @staticmethod
    def terminated_by_the_nccl_watchdog(rank):
        """The rank_dies fault: a kernel fault on this rank's GPU minutes into serving, found by
        torch's NCCL watchdog thread (ProcessGroupNCCL.cpp Watchdog::run), which logs it with c10's
        `[rank<N>]:` prefix and rethrows: std::terminate, SIGABRT. No SGLang handler runs; the main
        process's subprocess watchdog finds the rank gone (sgl-project/sglang#18421)."""
        now = time.time()
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + ".%09d" % int((now % 1) * 1e9)
        what = "[PG ID 0 PG GUID 0(default_pg) Rank %d] Process group watchdog thread terminated with exception: " \
               "CUDA error: an illegal memory access was encountered" % rank
        Log.raw("\n".join(["[rank%d]:[E%s ProcessGroupNCCL.cpp:2057] %s" % (rank, stamp, what)] + CUDA_ASYNC + [
            "terminate called after throwing an instance of 'c10::DistBackendError'", "  what():  " + what]
            + CUDA_ASYNC))
        signal.signal(signal.SIGABRT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGABRT)
        while True:
            time.sleep(3600)

    def crash_now(self):
        """The crash faults' trigger: rank 0's scheduler crashes on its next batch."""
        with self.forward_lock:
            self.conns[0].send("crash")

    def crash(self):
        """A broken kernel on the first real batches, in rank 0's scheduler: it logs the
        exception and SIGQUITs the main process, which kills the tree (running phase)."""
        Log.line("Scheduler hit an exception: " + "\n".join(traceback_lines(
            SCHEDULER_FRAMES[:1] + [("sglang/srt/managers/scheduler.py", 1502, "event_loop_overlap")],
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered", 8)))
        os.kill(os.getppid(), signal.SIGQUIT)
        while True:
            time.sleep(3600)

    def forward(self, timeout=None):
        """One step through every rank (what a generation or the health check's one-token
        request needs): True when all answered within `timeout` (None: wait for ever)."""
        if not self.forward_lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        try:
            for conn in self.conns:
                conn.send("forward")
            for conn in self.conns:
                if not conn.poll(timeout):
                    return False
                conn.recv()
            return True
        finally:
            self.forward_lock.release()

    def health_generate(self):
        """http_server.py health_generate: a one-token request; 200 once the detokenizer
        answers (looked at every second), else 503 after HEALTH_CHECK_TIMEOUT (env
        SGLANG_HEALTH_CHECK_TIMEOUT, default 20 s), logging why."""
        tic = time.time()
        time.sleep(1.0)
        if self.forward(max(0.0, HEALTH_CHECK_TIMEOUT - 1.0)):
            self.last_receive = time.time()
            return 200
        Log.line("Health check failed. Server couldn't get a response from detokenizer for last %d seconds. "
                 "tic start time: %s. last_heartbeat time: %s" % (
                     HEALTH_CHECK_TIMEOUT, time.strftime("%H:%M:%S", time.localtime(tic)),
                     time.strftime("%H:%M:%S", time.localtime(self.last_receive))))
        return 503

    def serve(self):
        if self.node_rank > 0:
            self.serve_follower()
            return
        httpd = self.bind()
        Log.raw("INFO:     Started server process [%d]" % self.pid)
        Log.raw("INFO:     Waiting for application startup.")
        Log.raw("INFO:     Application startup complete.")
        Log.raw("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (self.args.host, self.args.port))
        threading.Thread(target=self.warm_up, daemon=True).start()

        def on_sigterm(signum, frame):
            if self.loop_stopped():
                # (uvicorn's handler runs on the stopped loop: the stop's SIGTERM to the whole control
                # group ends the schedulers, and the subprocess watchdog, a thread, the rest.)
                return
            Log.line("SIGTERM received. signum=%d frame=%r. Draining requests and shutting down..." % (signum, frame))
            self.stopping = True
            threading.Thread(target=self.drain_then_stop, args=(httpd,), daemon=True).start()

        signal.signal(signal.SIGTERM, on_sigterm)
        httpd.serve_forever(poll_interval=0.2)
        self.shutdown_group()
        ranks.kill_tree(self.ranks)   # the launcher's shutdown ends its children (kill_process_tree)
        Log.raw("INFO:     Shutting down")
        Log.raw("INFO:     Waiting for application shutdown.")
        Log.raw("INFO:     Application shutdown complete.")
        Log.raw("INFO:     Finished server process [%d]" % self.pid)

    def shutdown_group(self):
        """A server over several nodes: TP0 broadcasts the ShutdownReq before the tree ends
        (bounded: a TP0 stuck in a collective never sends it, and the other nodes' unit stop
        timeout is the backstop)."""
        if self.nnodes == 1:
            return
        self.conns[0].send("shutdown")
        deadline = time.monotonic() + 5.0
        while self.exited(self.ranks[0]) is None and time.monotonic() < deadline:
            time.sleep(0.05)

    def serve_follower(self):
        """engine.py, node_rank >= 1: SIGTERM only logs (rank 0's ShutdownReq stops the
        schedulers); launch_dummy_health_check_server answers 200 on the server's port; the
        launcher blocks until its schedulers exit."""
        node_rank = self.node_rank

        def on_sigterm(signum, frame):
            Log.line("SIGTERM received on node_rank %d; waiting for the rank-0 ShutdownReq broadcast to stop "
                     "the schedulers." % node_rank)

        signal.signal(signal.SIGTERM, on_sigterm)
        httpd = self.bind(make_dummy_health_handler())
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        for pid in self.ranks:
            while self.exited(pid) is None:
                time.sleep(0.2)

    def drain_then_stop(self, httpd):
        """tokenizer_manager.sigterm_watchdog: the requests in flight finish (new ones are
        refused), looked at every drain_poll seconds, then the server stops."""
        while True:
            with self.in_flight_lock:
                remaining = self.in_flight
            Log.line("Gracefully exiting... Remaining number of requests %d." % remaining)
            if remaining == 0:
                break
            time.sleep(float(self.timings.get("drain_poll", 5.0)))
        httpd.shutdown()

    def request_started(self):
        with self.in_flight_lock:
            self.in_flight += 1

    def request_finished(self):
        with self.in_flight_lock:
            self.in_flight -= 1

    def count_request(self, body, prompt, tokens, aborted):
        """A request ended (`tokens` generated, or `aborted`: it raised, or its client went away):
        what /metrics counts of it, when exported."""
        if self.metrics:
            kind = speculative.prompt_kind(prompt)
            self.metrics.finished(bool(body.get("stream")), len(prompt.split()), tokens,
                                  self.verify_steps(kind, tokens)[0], aborted)

    def loads(self):
        """/v1/loads (entrypoints/v1_loads.py): one DP rank's core load metrics."""
        with self.in_flight_lock:
            running = self.in_flight
        plan = self.plan or {}
        core = {"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": 0,
                "num_waiting_uncached_tokens": 0, "num_used_tokens": 0, "num_total_tokens": 0,
                "num_active_tokens": 0, "num_prealloc_ready_tokens": 0,
                "max_total_num_tokens": plan.get("max_total_num_tokens", 0),
                "max_running_requests": plan.get("max_running_requests", 0),
                "token_usage": 0.0, "gen_throughput": 0.0, "cache_hit_rate": 0.0, "utilization": 0.0,
                "total_prefill_uncached_tokens": 0, "total_prefill_busy_us": 0, "decode_moments": None}
        return {"timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "0.5.23",
                "accelerator": (self.gpus.get("gpus") or [{}])[0].get("name"), "num_accelerators": self.args.tp_size,
                "loads": [core]}

    # --- what the endpoints answer -------------------------------------------------
    def own_layer(self):
        """The draft is the model's own MTP layer (NEXTN: EAGLE without a draft model)."""
        return not self.args.speculative_draft_model_path

    def rate(self, kind="chat"):
        """Decode tokens/s of one request whose prompt is of `kind` (speculative.prompt_kind)."""
        algo = self.args.speculative_algorithm or "NONE"
        gate_rate = TOKEN_RATES.get(self.gpus.get("host_class"), TOKEN_RATES["a6000"]).get(algo, 30.0)
        return gate_rate * speculative.speed_factor(algo, self.own_layer(), kind)

    def verify_steps(self, kind, completion_tokens):
        """The verify steps a request's tokens took (its accept length by its prompt's kind), and that length."""
        accept = speculative.accept_length(self.args.speculative_algorithm, self.own_layer(), kind)
        if not accept or not completion_tokens:
            return completion_tokens, accept
        return max(1, int(round(completion_tokens / accept))), accept

    def server_info(self):
        info = {k: v for k, v in vars(self.args).items() if k != "api_key"}
        info.update(version="0.5.23", max_total_num_tokens=(self.plan or {}).get("max_total_num_tokens"))
        return info

    def model_info(self):
        return {"model_path": self.args.model_path, "tokenizer_path": self.args.model_path,
                "is_generation": True, "preferred_sampling_params": None, "weight_version": "default",
                "has_image_understanding": False, "has_audio_understanding": False, "model_type": "qwen3_5_text",
                "architectures": ["Qwen3_5ForCausalLM"]}

    def models(self):
        name = self.args.served_model_name or self.args.model_path
        card = {"id": name, "object": "model", "created": int(self.started), "owned_by": "sglang",
                "root": self.args.model_path, "max_model_len": self.plan["context_length"]}
        return {"object": "list", "data": [card]}

    def meta_info(self, rid, prompt_tokens, completion_tokens, elapsed, kind="chat"):
        info = {"id": rid, "finish_reason": {"type": "length", "length": completion_tokens},
                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cached_tokens": 0,
                "e2e_latency": round(elapsed, 4)}
        verify_ct, accept = self.verify_steps(kind, completion_tokens)
        if accept and completion_tokens:
            drafts = int(self.args.speculative_num_draft_tokens or 1) - 1
            correct = completion_tokens - verify_ct
            info.update(spec_verify_ct=verify_ct, spec_accept_length=completion_tokens / verify_ct,
                        spec_num_correct_drafts=correct, spec_num_proposed_drafts=verify_ct * drafts,
                        spec_accept_rate=correct / max(verify_ct * drafts, 1))
        return info


def make_dummy_health_handler():
    """utils/common.py launch_dummy_health_check_server: /ping, /health and /health_generate
    answer 200 with no body, anything else 404; uvicorn at log level warning (no access log)."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_GET(self):  # noqa: N802
            path = self.path.split("?")[0]
            known = path in ("/ping", "/health", "/health_generate")
            body = b"" if known else b'{"detail":"Not Found"}'
            self.send_response(200 if known else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

    return Handler


def make_handler(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # uvicorn's access log, as SGLang configures it
            Log.raw('INFO:     %s - "%s %s HTTP/1.1" %s' % (
                self.client_address[0], self.command, self.path.split("?")[0], args[1] if len(args) > 1 else ""))

        def send_json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorized(self):
            key = server.args.api_key
            # srt/utils/auth.py: health, readiness and metrics stay open.
            if not key or self.path.startswith(("/health", "/ready", "/metrics")):
                return True
            if self.headers.get("Authorization") == "Bearer " + key:
                return True
            self.send_json(401, {"error": "Unauthorized"})
            return False

        def do_GET(self):  # noqa: N802
            path = self.path.split("?")[0]
            server.block_if_stopped()
            if not self.authorized():
                return
            if path in ("/health", "/health_generate"):
                if not server.ready or server.stopping:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = server.health_generate()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if status == 200:
                    server.answered_health()
            elif path in ("/model_info", "/get_model_info"):
                self.send_json(200, server.model_info())
            elif path in ("/server_info", "/get_server_info"):
                self.send_json(200, server.server_info())
            elif path == "/v1/models":
                self.send_json(200, server.models())
            elif path == "/v1/loads":
                self.send_json(200, server.loads())
            elif path == "/metrics" and server.metrics:
                data = server.metrics.text(server.in_flight).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self.send_json(404, {"detail": "Not Found"})

        def do_POST(self):  # noqa: N802
            path = self.path.split("?")[0]
            server.block_if_stopped()
            if not self.authorized():
                return
            try:
                body = json.loads(self.read_body() or b"{}")
            except ValueError:
                self.send_json(400, {"error": {"message": "Invalid JSON body", "code": 400}})
                return
            if not server.ready or server.stopping:
                self.send_json(503, {"error": {"message": "The server is not ready.", "code": 503}})
                return
            if path not in ("/generate", "/v1/chat/completions"):
                self.send_json(404, {"detail": "Not Found"})
                return
            prompt = str(body.get("text", "")) if path == "/generate" else " ".join(
                str(m.get("content", "")) for m in body.get("messages", []))
            # The drafter's accept length, and so the decode speed, follow the prompt's kind.
            self.kind, self.sent = speculative.prompt_kind(prompt), 0
            failure = server.faults.get("request_error")
            if failure:
                # http_server.py answers a request that raised with {"error": {"message"}}.
                server.count_request(body, prompt, 0, aborted=True)
                self.send_json(int(failure.get("status", 500)), {"error": {
                    "message": failure.get("message", "Internal server error"), "code": int(failure.get("status", 500))}})
                return
            server.request_started()
            aborted = True
            try:
                (self.generate if path == "/generate" else self.chat)(body)
                aborted = False
            finally:
                server.request_finished()
                server.count_request(body, prompt, self.sent, aborted)

        def read_body(self):
            """The request's body, sized by Content-Length or sent chunked (as a gateway that
            streams requests sends it; uvicorn reads both)."""
            if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass   # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()

        def setup(self):
            super().setup()
            # uvicorn sets TCP_NODELAY; without it Nagle holds each streamed chunk for an ACK.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def tokens(self, n):
            # Tokens come on the GPU's clock: the HTTP work between them does not slow decoding.
            interval, started = 1.0 / server.rate(self.kind), time.monotonic()
            server.forward()   # every rank takes part in each step: a hung rank stops them all
            for i in range(n):
                server.block_if_stopped()   # (a stream in flight stalls with the loop that writes it)
                delay = started + (i + 1) * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.sent = i + 1
                yield " tok%d" % i

        def stream_start(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def sse(self, payload):
            text = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(("data: %s\n\n" % text).encode())
            self.wfile.flush()

        def generate(self, body):
            params = body.get("sampling_params") or {}
            n = int(params.get("max_new_tokens", 128))
            prompt = len(str(body.get("text", "")).split())
            rid, started, text = uuid.uuid4().hex, time.time(), ""
            if body.get("stream"):
                self.stream_start()
                for i, tok in enumerate(self.tokens(n), 1):
                    text += tok
                    self.sse({"text": text, "output_ids": list(range(i)),
                              "meta_info": server.meta_info(rid, prompt, i, time.time() - started, self.kind)})
                self.sse("[DONE]")
                return
            text = "".join(self.tokens(n))
            self.send_json(200, {"text": text, "output_ids": list(range(n)),
                                 "meta_info": server.meta_info(rid, prompt, n, time.time() - started, self.kind)})

        def chat(self, body):
            n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 128)
            prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            rid, created = "chatcmpl-" + uuid.uuid4().hex, int(time.time())
            model = body.get("model") or server.args.served_model_name or server.args.model_path
            if body.get("stream"):
                self.stream_start()
                for tok in self.tokens(n):
                    self.sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                              "choices": [{"index": 0, "delta": {"content": tok}, "finish_reason": None}]})
                self.sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                          "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                          "usage": {"prompt_tokens": prompt, "completion_tokens": n,
                                    "total_tokens": prompt + n}})
                self.sse("[DONE]")
                return
            text = "".join(self.tokens(n))
            self.send_json(200, {"id": rid, "object": "chat.completion", "created": created, "model": model,
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "length"}],
                                 "usage": {"prompt_tokens": prompt, "completion_tokens": n,
                                           "total_tokens": prompt + n}})

    return Handler
