"""The lab's GPUs as shared state on one host, the way the CUDA driver keeps it: a process
that uses a GPU holds its memory for as long as it runs, and the memory comes back when the
process exits, however it exits (SIGKILL included).

The cards are /etc/inferops-lab/gpus.json (labctl writes it). What is held is one file per
process, /run/inferops-lab/gpu-holds/<pid>.json. A hold counts only while its process lives:
the file names the process's start time (/proc/PID/stat), so neither a dead process nor a
new one that reused its PID holds anything, and no exit handler is needed. The lab's
nvidia-smi, the stand-in and `labctl occupy` all go through this module.

A hold may linger (`linger_s`): after its process is gone the memory stays used, listed by
no process, for that long - what a real host shows while the driver tears down a big CUDA
context, or for good when it cannot (the stand-in's `gpu_release_lag_s` fault). The linger
starts when the process is first seen gone; `reset()` (labctl release) ends every one, as a
GPU reset does.
"""
import fcntl
import json
import os
import time

GPU_FILE = os.environ.get("INFEROPS_LAB_GPUS", "/etc/inferops-lab/gpus.json")
HOLDS_DIR = os.environ.get("INFEROPS_LAB_GPU_HOLDS", "/run/inferops-lab/gpu-holds")


class OutOfMemory(Exception):
    """What torch's caching allocator says when an allocation does not fit in what is free on
    the device (c10/cuda/CUDACachingAllocator.cpp): with NVML it lists every process on the
    GPU and its memory (reportProcessMemoryInfo), then what this process holds."""

    def __init__(self, index, wanted_mib, total_mib, free_mib):
        self.index, self.wanted_mib, self.total_mib, self.free_mib = index, wanted_mib, total_mib, free_mib
        on_gpu = [h for h in all_holds() if h["gpus"].get(int(index))]
        mine = sum(h["gpus"][int(index)] for h in on_gpu if h["pid"] == os.getpid())
        listed = "".join("Process %d has %.2f GiB memory in use. " % (h["pid"], h["gpus"][int(index)] / 1024.0)
                         for h in on_gpu if h["pid"] != os.getpid())
        super().__init__(
            "CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of %.2f GiB of which "
            "%.2f MiB is free. %sIncluding non-PyTorch memory, this process has %.2f GiB memory in use. Of the "
            "allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
            "unallocated." % (wanted_mib / 1024.0, index, total_mib / 1024.0, free_mib, listed, mine / 1024.0))


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
                "gpus": dict((int(k), int(v)) for k, v in hold["gpus"].items()),
                "linger_s": float(hold.get("linger_s") or 0), "gone_at": hold.get("gone_at")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _scan():
    """(live holds, lingering holds): a dead process's hold lingers until its linger ends,
    then its file is removed (its memory came back)."""
    try:
        names = sorted(n for n in os.listdir(HOLDS_DIR) if n.endswith(".json"))
    except OSError:
        return [], []
    live, lingering = [], []
    for name in names:
        path = os.path.join(HOLDS_DIR, name)
        hold = _read_hold(path)
        if hold is not None and start_time(hold["pid"]) == hold["start"]:
            live.append(hold)
        elif hold is not None and _still_lingering(path, hold):
            lingering.append(hold)
        else:
            _unlink(path)
    return sorted(live, key=lambda h: h["pid"]), lingering


def _still_lingering(path, hold):
    if hold["linger_s"] <= 0:
        return False
    if hold["gone_at"] is None:
        hold["gone_at"] = time.time()
        try:
            _write(path, dict(_record(hold), gone_at=hold["gone_at"]))
        except OSError:   # another user's hold: it lingers from now, as seen by this reader
            pass
    return time.time() < float(hold["gone_at"]) + hold["linger_s"]


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def holds():
    """The holds of the processes that still run, oldest PID first (what nvidia-smi lists)."""
    return _scan()[0]


def lingering():
    """The holds of processes that are gone but whose memory is not back yet."""
    return _scan()[1]


def used_mib(gpu, held=None):
    """What is used on a card: the driver's own (gpus.json) and every hold on it, lingering
    ones included (`held`: the holds to count, default all)."""
    held = all_holds() if held is None else held
    return int(gpu["memory_used_mib"]) + sum(h["gpus"].get(int(gpu["index"]), 0) for h in held)


def all_holds():
    live, gone = _scan()
    return live + gone


def free_mib(gpu, held=None):
    return int(gpu["memory_total_mib"]) - used_mib(gpu, held)


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


def allocate(wanted, pid=None, name=None, linger_s=0):
    """Hold `wanted` ({gpu index: MiB}) for the process `pid` (this one by default), on top
    of what it holds already; OutOfMemory, and nothing held, when a card has not that much
    free. Checked and written under one lock, so two processes never both get the last MiB.
    `linger_s`: how long the memory stays used after the process is gone."""
    pid = os.getpid() if pid is None else int(pid)
    cards = dict((int(g["index"]), g) for g in inventory()["gpus"])
    with _Locked():
        live, gone = _scan()
        mine = next((h for h in live if h["pid"] == pid), None)
        for index, mib in sorted(wanted.items()):
            gpu = cards[int(index)]
            free = free_mib(gpu, live + gone)
            if mib > free:
                raise OutOfMemory(int(index), mib, int(gpu["memory_total_mib"]), free)
        held = dict(mine["gpus"]) if mine else {}
        for index, mib in wanted.items():
            held[int(index)] = held.get(int(index), 0) + int(mib)
        _write(_hold_path(pid), _record({"pid": pid, "start": start_time(pid), "name": name or process_name(pid),
                                         "gpus": held, "linger_s": linger_s or (mine or {}).get("linger_s", 0)}))
    return held


def _record(hold):
    return {"pid": hold["pid"], "start": hold["start"], "name": hold["name"], "linger_s": hold["linger_s"],
            "gpus": dict((str(k), v) for k, v in sorted(hold["gpus"].items()))}


def _write(path, record):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(record, fh)
    os.rename(tmp, path)


def release(pid=None):
    """Give back everything the process holds (what its exit would do)."""
    _unlink(_hold_path(os.getpid() if pid is None else pid))


def reset():
    """End every lingering hold (a GPU reset: what no process holds comes back). Returns the
    MiB that came back."""
    with _Locked():
        gone = _scan()[1]
        for hold in gone:
            _unlink(_hold_path(hold["pid"]))
    return sum(sum(h["gpus"].values()) for h in gone)
