"""SGLang 0.5.23's process tree for one server, as the stand-in builds it.

`python -m sglang.launch_server --tp-size N` is not one process (srt/entrypoints/engine.py,
`_launch_subprocesses`):

- the main process: HTTP server and tokenizer manager; it holds no GPU memory;
- one scheduler per GPU (`run_scheduler_process` in srt/managers/scheduler.py), titled
  `sglang::scheduler_TP<i>` by `setproctitle` (`configure_scheduler_process`; a server with
  `--tp-size 1` has no rank suffix: `sglang::scheduler`), each loading its own shard and
  holding its own GPU's memory, and logging with its own ` TP<i>` prefix;
- `sglang::detokenizer` (srt/managers/detokenizer_manager.py).

SGLang starts its children with multiprocessing's `spawn`; the stand-in forks them (a fresh
interpreter per rank costs the two-core lab a tenth of a second of CPU each; the tree, the
titles, the parent and what each process holds are the same).
"""
import ctypes
import os
import signal

PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1


def scheduler_title(rank, tp_size):
    """scheduler.py: `setproctitle(f"sglang::scheduler{prefix.replace(' ', '_')}")`, the
    prefix carrying ` TP<i>` only when tp_size > 1."""
    return "sglang::scheduler" + ("_TP%d" % rank if tp_size > 1 else "")


def log_prefix(rank, tp_size):
    """The rank's logger prefix (configure_logger(server_args, prefix=prefix))."""
    return " TP%d" % rank if tp_size > 1 else ""


def set_title(title):
    """What setproctitle does on Linux: the kernel's name (comm, 15 bytes) and the argv
    area /proc/PID/cmdline reads (ps shows it), overwritten and padded with NULs."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, title.encode()[:15], 0, 0, 0)
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])   # arg_start, arg_end (fields 48, 49)
        data = title.encode()[:end - start - 1]
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            mem.write(data + b"\0" * (end - start - len(data)))
    except (OSError, ValueError, IndexError, AttributeError):
        pass   # a title is cosmetic to the process itself


def kill_itself_when_parent_died():
    """utils/common.py kill_itself_when_parent_died, which scheduler.py and
    detokenizer_manager.py call first: the kernel SIGKILLs the child when its parent dies."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def fork_child(title, target, *args, **kwargs):
    """Start `target(*args)` in a child process titled `title`; returns its PID. The child
    never returns into the caller's code. `outlive_parent=True` leaves out the parent-death
    signal (a rank stuck in the driver, where SIGKILL cannot land: it outlives its server)."""
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if not kwargs.get("outlive_parent"):
            kill_itself_when_parent_died()
        set_title(title)
        target(*args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:   # pylint: disable=broad-except
        code = 1
    finally:
        os._exit(code)   # pylint: disable=protected-access


def exit_code(status):
    """multiprocessing's Process.exitcode from a wait status: -N for a signal."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def kill_tree(pids):
    """utils/common.py kill_process_tree: SIGKILL every child, then reap them."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
