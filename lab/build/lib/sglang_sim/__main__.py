"""python -m sglang_sim [--validate-only] <the argv of sglang.launch_server>

--validate-only: exit 0 when SGLang would accept the command line, else exit 2 with
SGLang's own argparse or resolution message. Nothing is started and no model is read.
Without it: start like SGLang, on this lab host's simulated GPUs.
"""
import os
import sys

from .args import ArgumentError, load_table, validate
from .server import Log, Server


def main(argv):
    validate_only = "--validate-only" in argv
    argv = [a for a in argv if a != "--validate-only"]
    try:
        table = load_table(os.environ.get("SGLANG_SIM_VERSION", "0.5.23"))
    except ArgumentError as exc:
        sys.stderr.write("sglang_sim: %s\n" % exc)
        return 2
    args, error = validate(argv, table)
    if error is not None:
        if validate_only or not error.startswith("ValueError"):
            sys.stderr.write(error + "\n")
            return 2
        # Resolution errors surface as the launcher's traceback, like SGLang's.
        Log.raw("Traceback (most recent call last):\n  File \"sglang/launch_server.py\", line 50, in <module>\n"
                "  File \"sglang/srt/server_args.py\", line 262, in resolve_once\n" + error)
        return 1
    if validate_only:
        print("SGLang %s accepts this command line (algorithm: %s)" % (
            table["sglang_version"], args.speculative_algorithm or "none"))
        return 0
    server = Server(args, table)
    server.start()
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
