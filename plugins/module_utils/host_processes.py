# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who is who on a shared host (private to this collection): the systemd unit a process
runs in (from /proc/PID/cgroup) and the processes listening on a TCP port (from
/proc/net/tcp{,6} and their file descriptors, as `ss -ltnp` finds them). The parsers are
pure; the readers only read /proc."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket

# The unit types a process lives in (slices only group them).
UNIT_SUFFIXES = (".service", ".scope")
LISTEN = "0A"
# setproctitle's prefix for SGLang's child processes (srt/managers/scheduler.py, detokenizer_manager.py).
SGLANG_TITLE = "sglang::"


def unit_of_cgroup(text):
    """The systemd unit (service or scope) a process runs in, from /proc/PID/cgroup: the
    name=systemd hierarchy where there is one (cgroup v1 and the hybrid layout, where the
    unified `0::` line may not follow systemd's tree), else cgroup v2's `0::` line. None
    outside any unit."""
    paths = {}
    for line in (text or "").splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3:
            paths[parts[1]] = parts[2]
    path = paths.get("name=systemd", paths.get(""))
    if not path:
        return None
    for part in reversed(path.strip("/").split("/")):
        if part.endswith(UNIT_SUFFIXES):
            return part
    return None


def process_unit(pid):
    """The unit of a running process; None outside any, or when it has exited."""
    try:
        with open("/proc/%d/cgroup" % int(pid)) as fh:
            return unit_of_cgroup(fh.read())
    except (OSError, TypeError, ValueError):
        return None


def unit_processes(unit):
    """The processes running in `unit` now: [{pid, name}], by their cgroup (what systemd
    still has to stop; a stopped unit should have none)."""
    found = []
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        if process_unit(pid) == unit:
            name = _read("/proc/%d/comm" % pid).strip()
            if name:   # gone while read
                found.append({"pid": pid, "name": name})
    return found


def _address(hex_address, family):
    """/proc/net/tcp's `0100007F:7530` (host byte order words) as ('127.0.0.1', 30000)."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(family, raw), int(port, 16)


def listening_sockets(text, port, family=socket.AF_INET):
    """The sockets of a /proc/net/tcp (or tcp6) table that listen on `port`: [{inode, address}]."""
    found = []
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        address, local_port = _address(fields[1], family)
        if local_port == int(port):
            found.append({"inode": int(fields[9]), "address": address})
    return found


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _socket_owners(inodes, likely=()):
    """PID of each socket inode, from the processes' file descriptors: the `likely` PIDs first
    (the service's own main process), the rest of /proc only for sockets still unowned."""
    wanted, owners = set("socket:[%d]" % inode for inode in inodes), {}
    pids = [str(p) for p in likely if p] + [p for p in os.listdir("/proc") if p.isdigit()]
    for pid in pids:
        if len(owners) == len(wanted):
            break
        fd_dir = "/proc/%s/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target in wanted:
                owners[int(target[8:-1])] = int(pid)
    return owners


def listeners(port, likely=()):
    """Who listens on a TCP port on this host: [{pid, name, unit, address}] (pid None when the
    owner cannot be seen). `likely`: PIDs to look at first."""
    sockets = (listening_sockets(_read("/proc/net/tcp"), port, socket.AF_INET)
               + listening_sockets(_read("/proc/net/tcp6"), port, socket.AF_INET6))
    owners = _socket_owners([s["inode"] for s in sockets], likely) if sockets else {}
    found = []
    for sock in sockets:
        pid = owners.get(sock["inode"])
        name = _read("/proc/%d/comm" % pid).strip() if pid else None
        found.append({"pid": pid, "name": name, "unit": process_unit(pid) if pid else None,
                      "address": sock["address"]})
    return found


def process_title(pid):
    """The process's title: the first word of /proc/PID/cmdline, where setproctitle writes
    (SGLang's ranks: `sglang::scheduler_TP3`, `sglang::detokenizer`); "" once it is gone."""
    return _read("/proc/%d/cmdline" % int(pid)).split("\0", 1)[0].strip()


def is_sglang_child(holder):
    """An SGLang child process (a rank or the detokenizer), by the title SGLang gives it."""
    return (holder.get("title") or "").startswith(SGLANG_TITLE)


def describe(holder):
    """A process as the messages name it: `PID 42 (python3, unit x.service)` or `(…, no unit)`;
    an SGLang child by its title (`PID 42 (sglang::scheduler_TP3, no unit)`)."""
    unit = ("unit " + holder["unit"]) if holder.get("unit") else "no unit"
    name = holder.get("title") if is_sglang_child(holder) else holder.get("name")
    return "PID %s (%s, %s)" % (holder.get("pid") or "?", name or "?", unit)


def orphan_note(holder):
    """What an SGLang rank outside any unit is, for the messages that name it."""
    if not is_sglang_child(holder) or holder.get("unit"):
        return ""
    return (" - an SGLang rank outside any unit: the server it belonged to is gone (its main process died and "
            "nothing stopped its ranks, sgl-project/sglang#23627), yet it keeps its GPU memory")


def stop_command(holder):
    """What stops it: its unit when it has one, else the process."""
    return ("systemctl stop " + holder["unit"]) if holder.get("unit") else "kill %s" % holder.get("pid")
