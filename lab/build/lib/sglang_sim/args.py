"""`sglang serve`'s argument handling, rebuilt from the flag table of the real parser.

The table (flags/<version>.json) is derived from SGLang's own parser by
lab/tools/derive_flag_table.py; `make test` checks that it is current and that this
parser and the real one give the same verdict on a corpus of command lines.
"""
import argparse
import json
import os
import re
import sys
from decimal import Decimal

FLAGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flags")
DEFAULT_VERSION = "0.5.23"


class ArgumentError(Exception):
    """A command line SGLang rejects; str() is SGLang's own message."""


# --- argparse types, with SGLang's names (argparse puts the name in its messages) ----

def nullable_str(val):
    if not val or val == "None":
        return None
    return val


def human_readable_int(value):
    value = value.strip()
    si_multiplier = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec_multiplier = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        if suffix in iec_multiplier:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    "Decimals are not allowed with IEC suffixes like '%s'. Use an integer IEC value "
                    "such as '%d%s', or an SI value such as '%s%s'."
                    % (suffix, int(Decimal(number)), suffix, number, suffix[0]))
            return int(number) * iec_multiplier[suffix]
        return int(Decimal(number) * si_multiplier[suffix])
    return int(value)


def json_list_type(value):
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError(
            "Invalid JSON list: %s. Please provide a valid JSON list." % value) from None


def parse_cuda_graph_backend_arg(raw):
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError("tc_piecewise was removed; select breakable, full, or disabled")
    return raw


def make_cuda_graph_config_type(table):
    phases = table["cuda_graph_phases"]
    keys = table["cuda_graph_phase_keys"]

    def parse_cuda_graph_config_arg(raw):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError("--cuda-graph-config must be JSON: %s" % exc) from None
        if not isinstance(parsed, dict):
            raise argparse.ArgumentTypeError(
                "--cuda-graph-config must be a JSON object, got %s" % type(parsed).__name__)
        for phase, settings in parsed.items():
            if str(phase) not in phases:
                raise argparse.ArgumentTypeError(
                    "--cuda-graph-config: unknown phase '%s', expected one of %s" % (phase, tuple(phases)))
            if not isinstance(settings, dict):
                raise argparse.ArgumentTypeError("--cuda-graph-config['%s'] must be a JSON object, got %s"
                                                 % (phase, type(settings).__name__))
            if "backend" in settings:
                parse_cuda_graph_backend_arg(settings["backend"])
            for key in settings:
                if key not in keys[str(phase)]:
                    raise argparse.ArgumentTypeError(
                        "--cuda-graph-config['%s']: unknown key '%s', expected one of %s"
                        % (phase, key, set(keys[str(phase)])))
        return parsed
    return parse_cuda_graph_config_arg


class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        kwargs.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stderr.write("WARNING: %s is deprecated.\n" % option_string)
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        sys.stderr.write("WARNING: %s is deprecated.\n" % option_string)
        setattr(namespace, self.dest, True)


class LoRAPathAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, list(values or []))


def load_table(version=DEFAULT_VERSION):
    path = os.path.join(FLAGS_DIR, "%s.json" % version)
    if not os.path.exists(path):
        raise ArgumentError("no flag table for SGLang %s (have: %s)" % (
            version, ", ".join(sorted(f[:-5] for f in os.listdir(FLAGS_DIR) if f.endswith(".json")))))
    with open(path) as fh:
        return json.load(fh)


def build_parser(table):
    types = {
        None: None, "str": str, "int": int, "float": float, "json": json.loads,
        "nullable_str": nullable_str, "human_readable_int": human_readable_int,
        "json_list_type": json_list_type, "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
        "parse_cuda_graph_config_arg": make_cuda_graph_config_type(table),
    }
    parser = argparse.ArgumentParser(prog=table["prog"], allow_abbrev=table["allow_abbrev"])
    for act in table["actions"]:
        kind, opts = act["kind"], act["option_strings"]
        common = {"dest": act["dest"], "default": act["default"]}
        if kind == "_StoreTrueAction":
            parser.add_argument(*opts, action="store_true", **common)
        elif kind == "_StoreFalseAction":
            parser.add_argument(*opts, action="store_false", **common)
        elif kind == "BooleanOptionalAction":
            parser.add_argument(opts[0], action=argparse.BooleanOptionalAction, **common)
        elif kind == "DeprecatedStoreTrueAction":
            parser.add_argument(*opts, action=DeprecatedStoreTrueAction, **common)
        elif kind == "DeprecatedStoreConstAction":
            parser.add_argument(*opts, action=DeprecatedStoreConstAction, choices=act["choices"], **common)
        elif kind == "LoRAPathAction":
            parser.add_argument(*opts, action=LoRAPathAction, nargs=act["nargs"], type=types[act["type"]],
                                **common)
        elif kind == "_StoreAction":
            parser.add_argument(*opts, nargs=act["nargs"], type=types[act["type"]], choices=act["choices"],
                                required=act["required"], **common)
        else:
            raise ArgumentError("flag table has an action kind the stand-in does not know: %s" % kind)
    return parser


def parse(argv, table):
    """Parse like `sglang serve`; argparse errors exit 2 with its message, as SGLang does."""
    return build_parser(table).parse_args(argv)


def algorithm_of(args, table):
    """The resolved algorithm name (NEXTN is EAGLE), or None; SGLang's error if unknown."""
    name = args.speculative_algorithm
    if name is None:
        return None
    upper = name.upper()
    if upper in table["speculative_algorithms"]:
        return upper
    if upper in table["speculative_aliases"]:
        return "EAGLE"
    raise ArgumentError("ValueError: Unknown speculative algorithm name: %s" % name)


def draft_block_size(path):
    """DFLASH infers its block size from the draft config; SGLang falls back to 16."""
    try:
        with open(os.path.join(path, "config.json")) as fh:
            config = json.load(fh)
    except (OSError, ValueError, TypeError):
        return 16
    return int(config.get("dflash_config", {}).get("block_size") or config.get("block_size") or 16)


def resolve_dflash(args):
    """SGLang 0.5.23's _handle_dflash checks, with its messages (arg_groups/speculative_hook.py)."""
    if args.pp_size != 1:
        raise ArgumentError("ValueError: Currently DFLASH speculative decoding only supports pp_size == 1.")
    if args.speculative_draft_model_path is None:
        raise ArgumentError(
            "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.")
    if args.speculative_dflash_block_size is not None:
        if int(args.speculative_dflash_block_size) <= 0:
            raise ArgumentError("ValueError: DFLASH requires --speculative-dflash-block-size to be positive, "
                                "got %s." % args.speculative_dflash_block_size)
        if args.speculative_num_draft_tokens is not None and \
                int(args.speculative_num_draft_tokens) != int(args.speculative_dflash_block_size):
            raise ArgumentError(
                "ValueError: Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set "
                "but they differ. For DFLASH they must match. speculative_num_draft_tokens=%s, "
                "speculative_dflash_block_size=%s."
                % (args.speculative_num_draft_tokens, args.speculative_dflash_block_size))
        args.speculative_num_draft_tokens = int(args.speculative_dflash_block_size)
    if args.speculative_num_draft_tokens is None:
        args.speculative_num_draft_tokens = draft_block_size(args.speculative_draft_model_path)
    if args.speculative_draft_window_size is not None and \
            args.speculative_draft_window_size < int(args.speculative_num_draft_tokens):
        raise ArgumentError(
            "ValueError: --speculative-draft-window-size must be >= --speculative-num-draft-tokens "
            "(block_size). window_size=%s, block_size=%s."
            % (args.speculative_draft_window_size, args.speculative_num_draft_tokens))
    args.speculative_num_steps = 1
    args.speculative_eagle_topk = 1
    if args.max_running_requests is None:
        args.max_running_requests = 48


def resolve_ddtree(args):
    """The DDTree patch series' _handle_ddtree (files/patches/sglang-0.5.23-ddtree)."""
    resolve_dflash(args)
    block = int(args.speculative_num_draft_tokens)
    if args.speculative_ddtree_budget is None:
        args.speculative_ddtree_budget = 4 * block
    elif not block <= int(args.speculative_ddtree_budget) <= 1024:
        raise ArgumentError(
            "ValueError: DDTREE requires --speculative-ddtree-budget between the draft block size (%d) "
            "and 1024, got %s." % (block, args.speculative_ddtree_budget))


def resolve(args, table):
    """The resolution checks SGLang runs before it needs a GPU; fills the values they set."""
    algo = algorithm_of(args, table)
    args.speculative_algorithm = algo
    if algo == "DFLASH":
        resolve_dflash(args)
    elif algo == "DDTREE":
        resolve_ddtree(args)
    elif algo == "EAGLE":
        args.speculative_num_steps = args.speculative_num_steps or 3
        args.speculative_eagle_topk = args.speculative_eagle_topk or 1
        args.speculative_num_draft_tokens = args.speculative_num_draft_tokens or 4
    return args


def read_config_file(path):
    """SGLang's --config file: a YAML mapping. The lab hosts have no PyYAML, so this reads
    the JSON form of YAML (what the collection writes) and flat `key: value` lines."""
    if os.path.splitext(path)[1].lower() not in (".yaml", ".yml"):
        raise ArgumentError("ValueError: Config file must be YAML format, got: %s" % os.path.splitext(path)[1])
    if not os.path.exists(path):
        raise ArgumentError("ValueError: Config file not found: %s" % path)
    with open(path) as fh:
        text = fh.read()
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        data = {}
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.lstrip().startswith("#"):
                data[key.strip()] = value.strip().strip("'\"")
    if not isinstance(data, dict):
        raise ArgumentError("ValueError: Config file must contain a dictionary at root level")
    return data


def merge_config(argv, table):
    """srt/utils/server_args_config_parser.py: the file's options go first, so the command
    line wins over the file (CLI > config > defaults)."""
    if "--config" not in argv:
        return argv
    if argv.count("--config") > 1:
        raise ArgumentError("ValueError: Multiple config files specified! Only one allowed.")
    at = argv.index("--config")
    if at == len(argv) - 1:
        raise ArgumentError("ValueError: No config file specified after --config flag!")
    store_true = {a["dest"] for a in table["actions"] if a["kind"] == "_StoreTrueAction"}
    config_args = []
    for key, value in read_config_file(argv[at + 1]).items():
        name = str(key).replace("-", "_")
        if name in store_true:
            if value:
                config_args.append("--" + name.replace("_", "-"))
        else:
            config_args += ["--" + name.replace("_", "-"), str(value)]
    return config_args + argv[:at] + argv[at + 2:]


def validate(argv, table):
    """(args, None) when SGLang accepts argv, else (None, SGLang's message)."""
    try:
        argv = merge_config(list(argv), table)
    except ArgumentError as exc:
        return None, str(exc)
    err = _Capture()
    try:
        old, sys.stderr = sys.stderr, err
        try:
            args = parse(argv, table)
        finally:
            sys.stderr = old
    except SystemExit:
        lines = err.text.strip().splitlines()
        return None, lines[-1] if lines else "error"
    try:
        return resolve(args, table), None
    except ArgumentError as exc:
        return None, str(exc)


class _Capture:
    def __init__(self):
        self.text = ""

    def write(self, data):
        self.text += data

    def flush(self):
        pass
