"""The ranks of one SGLang server spread over several hosts (`--nnodes N --node-rank i
--dist-init-addr HOST:PORT`), as the stand-in joins them.

What SGLang 0.5.23 does (srt/distributed/bootstrap.py, srt/entrypoints/engine.py):

- every rank calls `init_parallel_runtime`: "Init parallel begin.", then torch.distributed's
  rendezvous at `tcp://<dist_init_addr>` (a TCPStore served by global rank 0, the first
  scheduler of node 0; the others connect to it, retrying until `--dist-timeout`), then
  "Init parallel ends.". A peer that never comes leaves every rank between those two lines;
- the ranks then meet in collectives (the KV pool is sized from the smallest free memory,
  all-reduced): a rank that failed or hangs stops the others in the next one;
- node 0's TP0 broadcasts each batch to every rank; at shutdown it broadcasts a ShutdownReq,
  which is the only thing that stops the other nodes' schedulers (a non-zero node's SIGTERM
  only logs);
- when rank 0's process group is gone, the others' gloo transport reports the closed
  connection and their scheduler fails.

The stand-in's store speaks lines over one TCP connection per rank: `hello <rank>` -> `go`
(all joined), `barrier <name>` -> `pass <name>`, and from node 0's TP0 to the other nodes'
ranks `forward` -> `done` and `shutdown`.
"""
import queue
import socket
import threading
import time

# torch's default_pg_nccl_timeout, what init_process_group waits when --dist-timeout is unset.
DEFAULT_TIMEOUT_S = 600.0
CONNECT_RETRY_S = 0.1


class GroupError(Exception):
    """A torch.distributed error a rank raises: its lines are what the scheduler logs."""

    def __init__(self, lines):
        super().__init__(lines[0])
        self.lines = lines


def layout(tp_size, nnodes, node_rank):
    """engine.py _calculate_rank_ranges (pp_size 1): the TP ranks this node runs; rank r uses
    the node's GPU r % tp_size_per_node."""
    per_node = tp_size // nnodes
    return list(range(per_node * node_rank, per_node * (node_rank + 1))), per_node


def parse_addr(addr):
    host, port = str(addr).rsplit(":", 1)
    return host.strip("[]"), int(port)


class Store:
    """torch's TCPStore server, in node 0's TP0: it answers once `world` ranks have joined."""

    def __init__(self, port, world, local_ranks):
        self.world = world
        self.local_ranks = set(local_ranks)
        self.lock = threading.Lock()
        self.conns = {}            # rank -> socket
        self.replies = {}          # rank -> queue of its lines after `hello`
        self.joined = threading.Event()
        self.barriers = {}
        self.lost = None           # the first remote rank whose connection closed after the join
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("0.0.0.0", port))
        self.listener.listen(64)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn = self.listener.accept()[0]
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.client, args=(conn,), daemon=True).start()

    def client(self, conn):
        reader = conn.makefile("r")
        rank, peer = None, conn.getpeername()[:2]
        for line in reader:
            word, arg = (line.strip().split(" ", 1) + [""])[:2]
            if word == "hello":
                if self.joined.is_set():
                    # A rank restarted alone: the group it would join is already running
                    # (its ranks are in their collectives, not in the rendezvous); it waits for ever.
                    continue
                rank = int(arg)
                with self.lock:
                    self.conns[rank] = conn
                    self.replies[rank] = queue.Queue()
                    if len(self.conns) == self.world:
                        self.broadcast("go")
                        self.joined.set()
            elif word == "barrier":
                with self.lock:
                    arrived = self.barriers.setdefault(arg, set())
                    arrived.add(rank)
                    if len(arrived) == self.world:
                        self.broadcast("pass " + arg)
            elif rank is not None:
                self.replies[rank].put(word)
        if rank is not None and rank in self.replies:
            self.replies[rank].put("eof")
            if self.joined.is_set() and rank not in self.local_ranks and self.lost is None:
                # (Its process ended, so its kernel closed the connection: gloo's next send or
                # receive on TP0's CPU group fails at once. A peer cut off the network sends no
                # FIN: nothing arrives here, and the collective hangs, as forward_remote's does.)
                self.lost = peer

    def peer_lost(self):
        """gloo's error on TP0 once a remote rank's process is gone (its connection closed), or None."""
        if self.lost is None:
            return None
        return GroupError(["RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] "
                           "Connection closed by peer [%s]:%d" % self.lost])

    def broadcast(self, line):
        for conn in self.conns.values():
            send_line(conn, line)

    def joined_count(self):
        with self.lock:
            return len(self.conns)

    def remote(self):
        return sorted(r for r in self.conns if r not in self.local_ranks)

    def forward_remote(self):
        """One step on the other nodes' ranks. A rank whose process ended fails it with gloo's
        error (peer_lost); one whose network is cut never answers: the collective hangs, as
        NCCL's does (its watchdog is far longer than any health check)."""
        for rank in self.remote():
            send_line(self.conns[rank], "forward")
        for rank in self.remote():
            reply = self.replies[rank].get()
            if reply == "eof" and self.peer_lost() is not None:
                raise self.peer_lost()
            if reply != "done":
                while True:
                    time.sleep(3600)

    def shutdown_remote(self):
        """The ShutdownReq broadcast to the other nodes' schedulers."""
        for rank in self.remote():
            send_line(self.conns[rank], "shutdown")


def send_line(conn, line):
    try:
        conn.sendall((line + "\n").encode())
    except OSError:
        pass   # a peer gone: the collective that needs it hangs, the send does not fail


class Member:
    """One rank's side of the process group."""

    def __init__(self, addr, rank, timeout_s):
        self.host, self.port = parse_addr(addr)
        self.rank = rank
        self.timeout_s = timeout_s
        self.sock = self.connect()
        self.reader = self.sock.makefile("r")
        send_line(self.sock, "hello %d" % rank)

    def connect(self):
        """torch's TCPStore client: retries until the store listens or the timeout passes."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=CONNECT_RETRY_S * 10)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError:
                if time.monotonic() > deadline:
                    raise GroupError([
                        "torch.distributed.DistNetworkError: The client socket has timed out after %dms while "
                        "trying to connect to (%s, %d)." % (self.timeout_s * 1000, self.host, self.port)])
                time.sleep(CONNECT_RETRY_S)

    def wait_for(self, expected, store=None):
        """Block until the store sends `expected`; past the timeout, node 0's TP0 fails the way
        TCPStore's server does, the others keep waiting (their own store read has no end
        before the server's)."""
        if store is not None:
            self.sock.settimeout(self.timeout_s)
        try:
            line = self.reader.readline()
        except socket.timeout:
            raise GroupError(["torch.distributed.DistStoreError: Timed out after %d seconds waiting for clients. "
                              "%d/%d clients joined." % (self.timeout_s, store.joined_count(), store.world)])
        finally:
            self.sock.settimeout(None)
        if not line:
            raise self.closed()
        if line.strip() != expected:
            raise GroupError(["RuntimeError: unexpected message from the store: %r" % line.strip()])

    def closed(self):
        """gloo's error when the other end of the process group's connection is gone."""
        return GroupError(["RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] "
                           "Connection closed by peer [%s]:%d" % (self.host, self.port)])

    def join(self, store=None):
        self.wait_for("go", store)

    def barrier(self, name):
        send_line(self.sock, "barrier " + name)
        self.wait_for("pass " + name)

    def follow(self):
        """A non-zero node's rank after start-up: each batch node 0's TP0 broadcasts, until its
        ShutdownReq (returns) or its connection closes (raises)."""
        for line in self.reader:
            word = line.strip()
            if word == "shutdown":
                return
            if word == "forward":
                send_line(self.sock, "done")
        raise self.closed()
