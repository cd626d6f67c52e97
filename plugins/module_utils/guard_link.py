# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The link between the guards of a server group's nodes, while a switch is pending: one node's
guard that restores makes every node restore, all nodes stop before any starts, and rank 0's
confirmation is the group's. The controller need not be there.

Its shape is SGLang's own: the ranks meet at rank 0 (its dist_init_addr), so rank 0's follower
is the hub, on rank 0's address and the guard's port (sglang_service_guard_port), and every
other node's follower keeps one connection to it (a spoke), reconnecting while the switch is
pending. Words, one JSON line each, signed with HMAC-SHA256 (the service's API key and the
group's name: a word of someone else, or of another group, is dropped; not the config_id, which
differs by node, since each node's arguments carry its rank):

- `hello` (spoke to hub): the node follows the switch;
- `failed` (spoke to hub): the node's guard restores (its server failed, or its deadline came
  with no hub), so the hub restores the group;
- `restore` (hub to spokes): rank 0's guard restores the group;
- `stopped` (spoke to hub) and `start` (hub to spokes): the barrier - a known-good starts only
  once every node's switched server has stopped, or a new rank would meet the old ones;
- `confirmed` (hub to spokes): rank 0's switch was confirmed by its controller, the group's
  with it; a spoke's own confirmation only holds its guard until then.

Standard library only: it runs in the guard's program on the host, beside guard.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import hmac
import json
import queue
import socket
import threading
import time

HELLO, FAILED, RESTORE, STOPPED, START, CONFIRMED = "hello", "failed", "restore", "stopped", "start", "confirmed"
# The words that make a follower act (the others are the barrier's).
TRIGGERS = (FAILED, RESTORE, CONFIRMED)
# A spoke tries its hub again after this pause (seconds); a connect gives up after CONNECT_S.
RECONNECT_S, CONNECT_S = 1.0, 3.0


def hub_address(group):
    """Rank 0's address, where the ranks meet (dist_init_addr's host)."""
    return str(group["dist_init_addr"]).rsplit(":", 1)[0].strip("[]")


def signing_key(secret, group_name):
    return hashlib.sha256(("%s\n%s" % (secret or "", group_name)).encode("utf-8")).digest()


def encode(key, word, rank, why="", kind=""):
    """One signed line: {w: word, r: rank, y: why, k: kind (why the sender acts), t: time, m: mac}."""
    body = {"w": word, "r": int(rank), "y": why or "", "k": kind or "", "t": round(time.time(), 3)}
    text = json.dumps(body, sort_keys=True)
    body["m"] = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
    return (json.dumps(body, sort_keys=True) + "\n").encode("utf-8")


def decode(key, line):
    """The word of a line signed with `key`: (word, rank, why, kind), or None (not ours, or broken)."""
    try:
        body = json.loads(line)
        mac = body.pop("m")
        text = json.dumps(body, sort_keys=True)
        if not hmac.compare_digest(mac, hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()):
            return None
        return str(body["w"]), int(body["r"]), str(body.get("y") or ""), str(body.get("k") or "")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def hang_up(sock):
    """Close a connection whose reader runs in another thread: shut down first, or the reader's
    file keeps it open and neither end hears that it ended."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def send(sock, data):
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


class Link(object):
    """What both ends share: the inbox of words that make the follower act, and every word heard
    per rank (the barrier reads them)."""

    def __init__(self, key, rank):
        self.key, self.rank = key, rank
        self.inbox = queue.Queue()
        self.heard = {}
        self.lock = threading.Lock()
        self.closed = False

    def received(self, word, rank, why, kind):
        with self.lock:
            self.heard.setdefault(rank, set()).add(word)
        if word in TRIGGERS:
            self.inbox.put((word, rank, why, kind))

    def has_heard(self, rank, word):
        with self.lock:
            return word in self.heard.get(rank, ())

    def next_word(self):
        """The next word that makes the follower act, or None."""
        try:
            return self.inbox.get_nowait()
        except queue.Empty:
            return None

    def read_lines(self, sock):
        """Words from one connection until it closes (a thread)."""
        reader = sock.makefile("rb")
        try:
            for line in reader:
                said = decode(self.key, line)
                if said:
                    self.received(*said)
                    if said[0] == HELLO:
                        self.hello(said[1], sock)
        except (OSError, ValueError):
            pass
        finally:
            self.gone(sock)

    def hello(self, rank, sock):
        pass

    def gone(self, sock):
        pass


class Hub(Link):
    """Rank 0's end: every spoke's connection, by its rank."""

    is_hub = True

    def __init__(self, address, port, key):
        Link.__init__(self, key, 0)
        self.conns = {}
        self.listener = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((address, port))
        self.listener.listen(16)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                sock = self.listener.accept()[0]
            except OSError:
                return
            threading.Thread(target=self.read_lines, args=(sock,), daemon=True).start()

    def hello(self, rank, sock):
        with self.lock:
            self.conns[rank] = sock

    def gone(self, sock):
        with self.lock:
            for rank in [r for r, s in self.conns.items() if s is sock]:
                del self.conns[rank]
        hang_up(sock)

    def peers(self):
        with self.lock:
            return sorted(self.conns)

    def linked(self):
        return True

    def say(self, word, why="", kind=""):
        """A word to every spoke linked now; the ranks it reached."""
        data = encode(self.key, word, 0, why, kind)
        with self.lock:
            conns = list(self.conns.items())
        return [rank for rank, sock in conns if send(sock, data)]

    def close(self):
        self.closed = True
        # (Shut down first: a close alone leaves the accept() of the other thread listening.)
        hang_up(self.listener)
        with self.lock:
            conns = list(self.conns.values())
        for sock in conns:
            hang_up(sock)


class Spoke(Link):
    """Another node's end: one connection to the hub, made again while the link is open."""

    is_hub = False

    def __init__(self, address, port, key, rank):
        Link.__init__(self, key, rank)
        self.address, self.port = address, port
        self.sock, self.lost_since = None, time.time()
        threading.Thread(target=self.keep_linked, daemon=True).start()

    def keep_linked(self):
        while not self.closed:
            try:
                sock = socket.create_connection((self.address, self.port), timeout=CONNECT_S)
                sock.settimeout(None)
            except OSError:
                time.sleep(RECONNECT_S)
                continue
            if send(sock, encode(self.key, HELLO, self.rank)):
                with self.lock:
                    self.sock, self.lost_since = sock, None
                self.read_lines(sock)
            time.sleep(RECONNECT_S)

    def gone(self, sock):
        with self.lock:
            if self.sock is sock:
                self.sock, self.lost_since = None, time.time()
        hang_up(sock)

    def linked(self):
        with self.lock:
            return self.sock is not None

    def alone_since(self):
        """Since when the hub is out of reach (epoch seconds), or None while linked."""
        with self.lock:
            return self.lost_since

    def say(self, word, why="", kind=""):
        """A word to the hub, when linked; [0] when it was sent."""
        with self.lock:
            sock = self.sock
        return [0] if sock is not None and send(sock, encode(self.key, word, self.rank, why, kind)) else []

    def close(self):
        self.closed = True
        with self.lock:
            sock = self.sock
        if sock is not None:
            hang_up(sock)


def open_link(group, secret):
    """The link of this node of `group` (pending.json's): rank 0's hub (OSError when it cannot
    listen), another node's spoke."""
    key = signing_key(secret, group["name"])
    if int(group["node_rank"]) == 0:
        return Hub(hub_address(group), int(group["port"]), key)
    return Spoke(hub_address(group), int(group["port"]), key, int(group["node_rank"]))


def barrier(link, timeout, sleep=time.sleep):
    """Wait until every node's switched server has stopped, before this node's known-good starts:
    the hub waits for each linked spoke's `stopped` and then says `start`; a spoke says `stopped`
    and waits for `start` (or its hub gone). Past `timeout` it goes on. Returns what it saw."""
    until = time.monotonic() + timeout
    if link.is_hub:
        while time.monotonic() < until:
            waiting = [rank for rank in link.peers() if not link.has_heard(rank, STOPPED)]
            if not waiting:
                break
            sleep(0.1)
        else:
            link.say(START)
            return "went on after %.0f s without the word of rank %s" % (timeout, ", ".join(map(str, waiting)))
        link.say(START)
        return "every linked node stopped (ranks %s)" % (", ".join(map(str, link.peers())) or "none")
    link.say(STOPPED)
    while time.monotonic() < until:
        if link.has_heard(0, START):
            return "rank 0 said start"
        if not link.linked():
            return "rank 0's guard is out of reach: started alone"
        sleep(0.1)
    return "went on after %.0f s without rank 0's start" % timeout
