"""The stand-in as one SGLang server over two nodes (--nnodes 2), each node its own process
tree with its own GPUs, over loopback: node 0 at 127.0.0.1, node 1 at 127.0.0.2."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "lab"))
import labctl  # noqa: E402  pylint: disable=wrong-import-position

MODEL = REPO / "lab" / "image" / "rootfs" / "models" / "Qwen3.6-27B"
TIMINGS = {"timings": {"init_parallel": 0.05, "load_weights": 0.1, "load_draft": 0.05, "memory_pool": 0.05,
                       "cuda_graph": 0.05, "warmup": 0.1, "drain_poll": 0.2}}
HANG_GUARD_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Node:
    """One node: its own lab folder (gpus.json, sim.json, faults.json) and GPU holds."""

    def __init__(self, root: Path, rank: int, port: int, store: int, extra=(), faults=None):
        self.rank, self.port = rank, port
        self.host = "127.0.0.%d" % (rank + 1)
        etc = root / ("node%d" % rank)
        (etc / "holds").mkdir(parents=True, exist_ok=True)
        (etc / "gpus.json").write_text(json.dumps(labctl.gpu_inventory("a6000")))
        (etc / "sim.json").write_text(json.dumps(TIMINGS))
        (etc / "faults.json").write_text(json.dumps(faults or {}))
        self.log = etc / "log"
        env = dict(os.environ, PYTHONPATH=str(REPO / "lab"), PYTHONUNBUFFERED="1", INFEROPS_LAB_ETC=str(etc),
                   INFEROPS_LAB_GPUS=str(etc / "gpus.json"), INFEROPS_LAB_GPU_HOLDS=str(etc / "holds"))
        argv = [sys.executable, "-m", "sglang_sim", "--model-path", str(MODEL), "--tp-size", "4",
                "--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "127.0.0.1:%d" % store,
                "--host", self.host, "--port", str(port), "--context-length", "8192",
                "--mem-fraction-static", "0.85", *extra]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self) -> str:
        return self.log.read_text()

    def health(self) -> int:
        try:
            return urllib.request.urlopen("http://%s:%d/health" % (self.host, self.port), timeout=30).status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return 0

    def stop(self):
        """The node's whole process group gone, its forked ranks too: a rank that outlives the
        launcher a moment holds its sockets (rank 0's store among them), which the next node of
        the same test would meet - on a loaded machine, a moment is long."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        wait_until("node %d's processes gone" % self.rank, lambda: not group_alive(self.proc.pid))


def group_alive(pgid) -> bool:
    """Whether any process of the process group runs (a zombie not yet reaped counts as gone)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open("/proc/%s/stat" % entry).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_until(what, condition):
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, "hang guard: " + what
        time.sleep(0.05)


def never_within(what, condition, seconds):
    """`condition` stays false for `seconds` (here 40 times the phase it must not finish), polled
    as wait_until polls: a hang that a check made once, at once, could not tell from a phase
    still under way."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert not condition(), what
        time.sleep(0.05)


@pytest.fixture
def nodes(tmp_path):
    started = []
    store = free_port()

    def start(rank, **kwargs):
        node = Node(tmp_path, rank, free_port(), store, **kwargs)
        started.append(node)
        return node

    yield start
    for node in started:
        node.stop()


def test_two_nodes_serve_as_one_and_stop_from_rank_0(nodes):
    peer = nodes(1)          # the order does not matter to the rendezvous: the peer waits for the store
    face = nodes(0)
    wait_until("node 0 serves", lambda: face.health() == 200)
    assert "The server is fired up and ready to roll!" in face.text()
    # Node 1 has no API: the dummy health server answers 200, the rest is 404.
    assert peer.health() == 200
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen("http://%s:%d/v1/models" % (peer.host, peer.port), timeout=10)
    assert info.value.code == 404
    text = peer.text()
    assert "TP2] Init parallel ends." in text
    assert "TP3] Load weight end." in text and "fired up" not in text
    # A SIGTERM on node 1 only logs; rank 0's stop ends both.
    os.kill(peer.proc.pid, signal.SIGTERM)
    wait_until("node 1 logs the SIGTERM", lambda: "SIGTERM received on node_rank 1;" in peer.text())
    assert peer.proc.poll() is None and face.health() == 200
    os.kill(face.proc.pid, signal.SIGTERM)
    wait_until("node 0 exits", lambda: face.proc.poll() is not None)
    wait_until("node 1 exits after the ShutdownReq", lambda: peer.proc.poll() is not None)
    assert peer.proc.returncode == 0


def test_missing_peer_hangs_every_rank_in_distributed_init(nodes):
    face = nodes(0, extra=["--dist-timeout", "2"])
    wait_until("rank 0 gives up on the rendezvous", lambda: face.proc.poll() is not None)
    text = face.text()
    assert "TP0] Init parallel begin." in text and "Init parallel ends." not in text
    assert "DistStoreError: Timed out after 2 seconds waiting for clients. 2/4 clients joined." in text


def test_node_failing_to_load_stalls_rank_0_and_a_lost_rank_0_fails_node_1(nodes):
    face = nodes(0)
    peer = nodes(1, faults={"rank_error": {"phase": "load_weights", "rank": 3, "error": "cuda_oom"}})
    wait_until("node 1 dies", lambda: peer.proc.poll() is not None)
    assert "TP3] Scheduler hit an exception:" in peer.text()
    wait_until("node 0's ranks loaded", lambda: face.text().count("Load weight end.") == 2)
    # Stuck in the KV pool's all-reduce, which node 1's ranks never reach (the phase takes 0.05 s).
    never_within("rank 0 passed the memory pool without node 1", lambda: "Memory pool end." in face.text(),
                 40 * TIMINGS["timings"]["memory_pool"])
    assert face.proc.poll() is None, "rank 0 waits; it does not exit"
    face.stop()
    peer2 = nodes(1)
    face2 = nodes(0)
    wait_until("the group serves", lambda: face2.health() == 200)
    os.killpg(face2.proc.pid, signal.SIGKILL)   # rank 0 dies without its ShutdownReq
    wait_until("node 1 fails", lambda: peer2.proc.poll() is not None)
    assert "Connection closed by peer" in peer2.text()


def test_a_peer_node_that_dies_while_serving_fails_rank_0_with_gloos_error(nodes):
    """Node 1's processes die minutes into serving (their kernel closes their connections): TP0's
    next broadcast on its gloo CPU group fails at once, batch or not, and node 0's server exits."""
    peer = nodes(1)
    face = nodes(0)
    wait_until("the group serves", lambda: face.health() == 200)
    os.killpg(peer.proc.pid, signal.SIGKILL)
    wait_until("node 0 exits", lambda: face.proc.poll() is not None)
    text = face.text()
    assert "TP0] Scheduler hit an exception:" in text and "Connection closed by peer [" in text, text[-2000:]
