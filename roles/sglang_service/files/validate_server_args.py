"""Does this SGLang release accept a server command line? (run with the release's Python)

    validate_server_args.py ARGV...     exit 0 if accepted, else 2 with SGLang's message
    validate_server_args.py --batch     JSON list of argvs on stdin -> JSON list of verdicts

The verdict is what `python -m sglang.launch_server ARGV` decides before it needs a GPU or
the model: `prepare_server_args` (argparse and ServerArgs), then the resolution checks that
run on a CPU, namely the speculative algorithm's name and the DFLASH/DDTREE hooks (with the
device a GPU host resolves, cuda). The sglang_service role runs it before the running
service is touched; `make fidelity` runs it against the lab's stand-in.
"""
import contextlib
import io
import json
import logging
import sys


def verdict(argv):
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            server_args = prepare_server_args(list(argv))
    except SystemExit:
        lines = err.getvalue().strip().splitlines()
        return {"ok": False, "error": lines[-1] if lines else "exit"}
    try:
        algo = SpeculativeAlgorithm.from_string(server_args.speculative_algorithm)
        if algo.name in ("DFLASH", "DDTREE"):
            if server_args.device is None:
                server_args.device = "cuda"
            server_args._input_frozen = True  # pylint: disable=protected-access
            algo.handle_server_args(server_args)
    except ValueError as exc:
        return {"ok": False, "error": "ValueError: %s" % exc}
    except ImportError as exc:
        # Only reached when DFLASH must read the draft model's config to infer its block
        # size: a decision that needs the model, not the parser. The corpus avoids it.
        return {"ok": None, "error": "needs the model (%s)" % exc}
    return {"ok": True, "error": ""}


def main(argv):
    logging.disable(logging.CRITICAL)
    if argv[:1] == ["--batch"]:
        json.dump([verdict(one) for one in json.load(sys.stdin)], sys.stdout)
        return 0
    result = verdict(argv)
    if result["ok"] is False:
        sys.stderr.write(result["error"] + "\n")
        return 2
    print("accepted" if result["ok"] else "accepted by the parser; " + result["error"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
