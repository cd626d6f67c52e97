"""Derive the stand-in's flag table from the real SGLang parser (run in its venv).

    $SGLANG_REFERENCE_PYTHON lab/tools/derive_flag_table.py > lab/sglang_sim/flags/0.5.23.json
    $SGLANG_REFERENCE_PYTHON lab/tools/derive_flag_table.py --check lab/sglang_sim/flags/0.5.23.json

The table holds every argparse action of `sglang serve` (option strings, dest, nargs,
type, choices, default, action kind), the speculative algorithm names the resolver knows,
and the CUDA-graph config keys: everything the stand-in needs to accept exactly what the
real parser accepts. `--check` exits 1 when the stored table is not what the installed
(patched) parser gives.
"""
import argparse
import json
import sys


def type_name(action):
    kind = action.type
    if kind is None:
        return None
    name = getattr(kind, "__name__", None) or type(kind).__name__
    return {"loads": "json"}.get(name, name)


def choices_of(action):
    if action.choices is None:
        return None
    values = list(action.choices)
    # A set's order changes from process to process; a list's is the parser's own.
    return sorted(values, key=str) if isinstance(action.choices, (set, frozenset)) else values


def jsonable(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def derive():
    import sglang
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    from sglang.srt.speculative.spec_registry import _RESERVED_ALIASES
    from sglang.srt.model_executor.cuda_graph_config import ALLOWED_KEYS_PER_PHASE, Phase

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    actions = []
    for action in parser._actions:  # pylint: disable=protected-access
        if isinstance(action, argparse._HelpAction):  # pylint: disable=protected-access
            continue
        actions.append({
            "option_strings": list(action.option_strings),
            "dest": action.dest,
            "kind": type(action).__name__,
            "nargs": action.nargs,
            "const": jsonable(action.const),
            "default": jsonable(action.default),
            "type": type_name(action),
            "choices": choices_of(action),
            "required": action.required,
        })
    return {
        "sglang_version": sglang.__version__,
        "prog": parser.prog,
        "allow_abbrev": parser.allow_abbrev,
        "actions": actions,
        "speculative_algorithms": sorted(m.name for m in SpeculativeAlgorithm),
        "speculative_aliases": sorted(_RESERVED_ALIASES),
        "cuda_graph_phases": list(Phase.ALL),
        "cuda_graph_phase_keys": {k: sorted(v) for k, v in ALLOWED_KEYS_PER_PHASE.items()},
    }


def main(argv):
    table = derive()
    text = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if argv[:1] == ["--check"]:
        with open(argv[1]) as fh:
            stored = fh.read()
        if stored != text:
            old, new = json.loads(stored), table
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            print("flag table %s is not current (differs in: %s); regenerate it with %s"
                  % (argv[1], ", ".join(changed), " ".join(sys.argv[:1])), file=sys.stderr)
            return 1
        print("flag table %s is current (%d actions)" % (argv[1], len(table["actions"])))
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
