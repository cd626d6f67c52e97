"""Another GPU tenant on a lab host: a CUDA-like process that holds memory on some GPUs
until it is stopped (`labctl occupy` / `labctl release`).

    python3 -m sglang_sim.tenant --gpus 0,1 --mib 60000 [--status FILE]

It takes the memory the way a CUDA program does (sglang_sim/gpu.py, the host's shared GPU
state), fails as CUDA does when the memory is not free, writes "holding PID" (or the error)
to FILE, and holds until SIGTERM or SIGKILL (either gives the memory back).
"""
import argparse
import signal
import sys
import time

from . import gpu


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sglang_sim.tenant")
    parser.add_argument("--gpus", required=True, help="comma-separated GPU indices")
    parser.add_argument("--mib", type=int, required=True, help="MiB to hold on each of them")
    parser.add_argument("--status", help="file to write 'holding PID' or the error to")
    args = parser.parse_args(argv)
    wanted = dict((int(i), args.mib) for i in args.gpus.split(",") if i.strip())
    try:
        gpu.allocate(wanted, name=sys.executable)
        said, code = "holding %d" % __import__("os").getpid(), None
    except (gpu.OutOfMemory, KeyError) as exc:
        why = exc if isinstance(exc, gpu.OutOfMemory) else "no GPU %s" % exc
        said = "RuntimeError: CUDA error: out of memory (%s)" % why
        code = 2
    if args.status:
        with open(args.status, "w") as fh:
            fh.write(said + "\n")
    print(said, flush=True)
    if code:
        return code
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
