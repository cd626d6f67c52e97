"""Run on a lab host with a release's python (bench.py's tune row): for each command line
(a JSON file of argv lists, named by argv[1]), what the stand-in decides of its memory at start
(sglang_sim.memory.plan: the code the host's SGLang stand-in runs when it starts), with the
GPUs free of this host's own SGLang service, as they are when a try starts on a drained
canary. Prints one JSON object per line: fits (started, its KV pool holding one whole
context and its CUDA graphs fitting) or the phase and first line of the failure."""
import json
import sys

from sglang_sim import args as sim_args
from sglang_sim import gpu as lab_gpu
from sglang_sim import memory


def config(path):
    with open(path + "/config.json") as fh:
        return json.load(fh)


def judge(argv, table, cards):
    args = sim_args.resolve(sim_args.parse(argv, table), table)
    target = config(args.model_path)
    draft = config(args.speculative_draft_model_path) if args.speculative_draft_model_path else None
    free = min(lab_gpu.free_mib(card, held=[]) for card in cards[:args.tp_size])
    try:
        plan = memory.plan(args, target, draft, free)
    except memory.StartupFailure as exc:
        return {"fits": False, "phase": exc.phase, "said": exc.lines[0][:120]}
    if not plan["graph_fits"]:
        return {"fits": False, "phase": "cuda_graph", "said": "CUDA-graph capture does not fit"}
    if plan["max_total_num_tokens"] < plan["context_length"]:
        return {"fits": False, "phase": "memory_pool", "said": "the KV pool holds less than one context"}
    return {"fits": True, "tokens": plan["max_total_num_tokens"]}


def main():
    table = sim_args.load_table()
    cards = lab_gpu.inventory().get("gpus", [])
    with open(sys.argv[1]) as fh:
        argvs = json.load(fh)
    for argv in argvs:
        print(json.dumps(judge(argv, table, cards)))


if __name__ == "__main__":
    main()
