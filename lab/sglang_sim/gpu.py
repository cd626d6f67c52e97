"""The lab's GPUs as shared state on one host, the way the CUDA driver keeps it: a process
that uses a GPU holds its memory for as long as it runs, and the memory comes back when the
process exits, however it exits (SIGKILL included).

The cards are /etc/inferops-lab/gpus.json (labctl writes it). What is held is one file per
process, /run/inferops-lab/gpu-holds/<pid>.json. A hold counts only while its process lives:
the file names the process's start time (/proc/PID/stat), so neither a dead process nor a
new one that reused its PID holds anything, and no exit handler is needed. The lab's
nvidia-smi, the stand-in and `labctl occupy` all go through this module.
"""
import fcntl
import json
import os

GPU_FILE = os.environ.get("INFEROPS_LAB_GPUS", "/etc/inferops-lab/gpus.json")
HOLDS_DIR = os.environ.get("INFEROPS_LAB_GPU_HOLDS", "/run/inferops-lab/gpu-holds")


class OutOfMemory(Exception):
    """What CUDA says when an allocation does not fit in what is free on the device."""

    def __init__(self, index, wanted_mib, total_mib, free_mib):
        self.index, self.wanted_mib, self.total_mib, self.free_mib = index, wanted_mib, total_mib, free_mib
        super().__init__(
            "CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of %.2f GiB of which "
            "%.2f MiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved "
            "by PyTorch but unallocated." % (wanted_mib / 1024.0, index, total_mib / 1024.0, free_mib))


def inventory():
    with open(GPU_FILE) as fh:
        return json.load(fh)


def start_time(pid):
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or
    None when no such process runs (a zombie has exited: its memory is free)."""
    try:
        with open("/proc/%d/stat" % int(pid)) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def process_name(pid):
    """What the driver reports as the process's name: its executable's path."""
    try:
        return os.readlink("/proc/%d/exe" % int(pid))
    except OSError:
        try:
            with open("/proc/%d/comm" % int(pid)) as fh:
                return fh.read().strip()
        except OSError:
            return "[unknown]"


def _hold_path(pid):
    return os.path.join(HOLDS_DIR, "%d.json" % int(pid))


def _read_hold(path):
    try:
        with open(path) as fh:
            hold = json.load(fh)
        return {"pid": int(hold["pid"]), "start": hold["start"], "name": hold.get("name") or "",
                "gpus": dict((int(k), int(v)) for k, v in hold["gpus"].items())}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def holds():
    """The holds of the processes that still run, oldest PID first; a dead one's file is
    removed on the way (its memory came back when it exited)."""
    try:
        names = sorted(n for n in os.listdir(HOLDS_DIR) if n.endswith(".json"))
    except OSError:
        return []
    live = []
    for name in names:
        path = os.path.join(HOLDS_DIR, name)
        hold = _read_hold(path)
        if hold is not None and start_time(hold["pid"]) == hold["start"]:
            live.append(hold)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
    return sorted(live, key=lambda h: h["pid"])


def used_mib(gpu, live=None):
    """What is used on a card: the driver's own (gpus.json) and every live hold on it."""
    live = holds() if live is None else live
    return int(gpu["memory_used_mib"]) + sum(h["gpus"].get(int(gpu["index"]), 0) for h in live)


def free_mib(gpu, live=None):
    return int(gpu["memory_total_mib"]) - used_mib(gpu, live)


class _Locked:
    """The holds directory's lock. Read-only is enough for flock, so a lock file another user
    created (the service runs as its own user) serves everyone."""

    def __enter__(self):
        if not os.path.isdir(HOLDS_DIR):
            os.makedirs(HOLDS_DIR)
            os.chmod(HOLDS_DIR, 0o1777)
        self.fd = os.open(os.path.join(HOLDS_DIR, ".lock"), os.O_RDONLY | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)   # closing releases the lock


def allocate(wanted, pid=None, name=None):
    """Hold `wanted` ({gpu index: MiB}) for the process `pid` (this one by default), on top
    of what it holds already; OutOfMemory, and nothing held, when a card has not that much
    free. Checked and written under one lock, so two processes never both get the last MiB."""
    pid = os.getpid() if pid is None else int(pid)
    cards = dict((int(g["index"]), g) for g in inventory()["gpus"])
    with _Locked():
        live = holds()
        mine = next((h for h in live if h["pid"] == pid), None)
        for index, mib in sorted(wanted.items()):
            gpu = cards[int(index)]
            free = free_mib(gpu, live)
            if mib > free:
                raise OutOfMemory(int(index), mib, int(gpu["memory_total_mib"]), free)
        held = dict(mine["gpus"]) if mine else {}
        for index, mib in wanted.items():
            held[int(index)] = held.get(int(index), 0) + int(mib)
        record = {"pid": pid, "start": start_time(pid), "name": name or process_name(pid),
                  "gpus": dict((str(k), v) for k, v in sorted(held.items()))}
        tmp = _hold_path(pid) + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh)
        os.rename(tmp, _hold_path(pid))
    return held


def release(pid=None):
    """Give back everything the process holds (what its exit would do)."""
    try:
        os.unlink(_hold_path(os.getpid() if pid is None else pid))
    except OSError:
        pass
