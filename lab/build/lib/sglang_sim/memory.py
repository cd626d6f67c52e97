"""How SGLang sizes GPU memory at start-up, per GPU, for a hybrid GDN model.

The order and the failure points follow SGLang 0.5.23 (mem_cache/kv_cache_configurator.py,
model_executor/pool_configurator.py, model_executor/model_runner_components/cuda_graph_setup.py):

1. static budget   = GPU memory x --mem-fraction-static
2. rest            = budget - weights (target + draft, split over --tp-size) - framework
                     overhead; rest <= 0 -> "Loaded weights leave no GPU memory ..."
3. linear-attention (mamba) state per request, one copy per verified draft token in
   speculative modes; not even one request fits -> "Not enough GPU memory for hybrid ..."
4. the DFlash draft keeps its own KV for every running request's full context
5. KV pool         = rest - state - draft KV, in tokens of the full-attention layers;
                     <= 0 tokens -> "Not enough memory. Please try to increase ..."
6. CUDA graphs and prefill activations live outside the static budget; when the graphs
   for the largest batch do not fit in what is left, capture fails.

The figures are estimates of the same shape as SGLang's, not its exact numbers; what must
hold is which configurations fit and which fail, and where.
"""
import math

GIB = float(1 << 30)
MIB = float(1 << 20)
BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "float8_e4m3fn": 1}
FRAMEWORK_OVERHEAD_GIB = 0.5      # CUDA context, cuBLAS workspaces, NCCL buffers
GRAPH_BASE_GIB = 0.6              # graph pools and static buffers of one capture pass
GRAPH_MIB_PER_TOKEN_TP1 = 8.0     # activations a captured token needs, before TP split
PREFILL_MIB_PER_TOKEN_TP1 = 1.0   # activations of one chunked-prefill token, before TP split
STATE_BYTES = 4                   # SGLang keeps the recurrent (ssm) state in fp32


class StartupFailure(Exception):
    """Start-up stops here; `phase` says where, `lines` are what SGLang logs."""

    def __init__(self, phase, lines):
        super().__init__(lines[-1])
        self.phase = phase
        self.lines = lines


def param_count(cfg):
    """Parameters of a (possibly hybrid GDN) decoder from its config.json."""
    hidden = cfg["hidden_size"]
    layers = cfg["num_hidden_layers"]
    inter = cfg.get("intermediate_size", 4 * hidden)
    vocab = cfg.get("vocab_size", 0)
    head_dim = cfg.get("head_dim") or hidden // cfg["num_attention_heads"]
    q_width = cfg["num_attention_heads"] * head_dim * (2 if cfg.get("attn_output_gate") else 1)
    kv_width = 2 * cfg["num_key_value_heads"] * head_dim
    full_attn = hidden * (q_width + kv_width) + cfg["num_attention_heads"] * head_dim * hidden
    n_full = full_attention_layers(cfg)
    total = layers * 3 * hidden * inter + n_full * full_attn
    if n_full < layers:
        k_width = cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
        v_width = cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
        linear = hidden * (2 * k_width + v_width) + hidden * v_width + v_width * hidden
        total += (layers - n_full) * linear
    total += vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    total += cfg.get("dflash_fc_in", 0) * hidden
    return total


def full_attention_layers(cfg):
    interval = cfg.get("full_attention_interval")
    if not interval:
        return cfg["num_hidden_layers"]
    return cfg["num_hidden_layers"] // interval


def kv_bytes_per_token(cfg, tp, layers=None):
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    heads = max(1, cfg["num_key_value_heads"] // tp)   # replicated when tp > kv heads
    n = full_attention_layers(cfg) if layers is None else layers
    return n * 2 * heads * head_dim * BYTES.get(cfg.get("torch_dtype"), 2)


def state_bytes_per_request(cfg, tp):
    """Recurrent + conv state of the linear-attention layers for one request, per GPU."""
    n_linear = cfg["num_hidden_layers"] - full_attention_layers(cfg)
    if n_linear <= 0:
        return 0
    v_heads = max(1, cfg["linear_num_value_heads"] // tp)
    ssm = v_heads * cfg["linear_key_head_dim"] * cfg["linear_value_head_dim"] * STATE_BYTES
    channels = (2 * cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
                + cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]) // tp
    conv = channels * (cfg.get("linear_conv_kernel_dim", 4) - 1) * BYTES.get(cfg.get("torch_dtype"), 2)
    return n_linear * (ssm + conv)


def tokens_per_verify(args):
    """Tokens one request puts through a decode step (and so through a captured graph)."""
    algo = args.speculative_algorithm
    if algo == "DDTREE":
        return int(args.speculative_ddtree_budget)
    if algo in ("DFLASH", "EAGLE", "EAGLE3"):
        return int(args.speculative_num_draft_tokens or 1)
    return 1


def weights_gib(args, target_cfg, draft_cfg):
    """(target, draft) weights per GPU; NEXTN's draft is the model's own MTP layer."""
    dtype_bytes = BYTES.get(target_cfg.get("torch_dtype"), 2)
    weights = param_count(target_cfg) * dtype_bytes / args.tp_size / GIB
    if draft_cfg:
        return weights, param_count(draft_cfg) * dtype_bytes / args.tp_size / GIB
    if args.speculative_algorithm == "EAGLE":
        return weights, weights / target_cfg["num_hidden_layers"]
    return weights, 0.0


def plan(args, target_cfg, draft_cfg, gpu_total_mib):
    """The per-GPU memory plan; raises StartupFailure where SGLang would stop."""
    tp = args.tp_size
    total = gpu_total_mib * MIB / GIB
    fraction = args.mem_fraction_static if args.mem_fraction_static is not None else 0.88
    weights, draft_weights = weights_gib(args, target_cfg, draft_cfg)
    budget = total * fraction
    rest = budget - weights - draft_weights - FRAMEWORK_OVERHEAD_GIB
    out = {"total_gib": total, "weights_gib": weights, "draft_weights_gib": draft_weights,
           "budget_gib": budget, "rest_gib": rest, "fraction": fraction}
    if rest <= 0:
        minimum = 1 - (total - weights - draft_weights - FRAMEWORK_OVERHEAD_GIB) / total
        raise StartupFailure("memory_pool", [
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=%s. Raise --mem-fraction-static above %.3f (minimum viable = "
            "1 - available/pre = %.4f). If using speculative decoding, draft weights are now counted."
            % (fraction, math.ceil(minimum * 1000) / 1000, minimum)])

    requests = args.max_running_requests or 48
    # Speculative verify keeps one state snapshot per draft token, to roll back to.
    copies = 1 + int(args.speculative_num_draft_tokens or 0) if args.speculative_algorithm else 1
    state_per_req = state_bytes_per_request(target_cfg, tp) * copies / GIB
    out["state_per_request_gib"] = state_per_req
    if state_per_req > 0 and math.floor(rest / state_per_req) <= 0:
        raise StartupFailure("memory_pool", [
            "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            "Computed max_mamba_cache_size=0 (total_rest_memory=%.2f GB, mamba_cache_per_req=%.2f MB). "
            "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce "
            "--speculative-num-draft-tokens, or (4) use GPUs with more memory."
            % (rest, state_per_req * GIB / MIB)])
    state = requests * state_per_req
    context = args.context_length or target_cfg.get("max_position_embeddings", 32768)
    draft_kv = 0.0
    if draft_cfg and args.speculative_algorithm in ("DFLASH", "DDTREE"):
        draft_kv = requests * context * kv_bytes_per_token(draft_cfg, tp, draft_cfg["num_hidden_layers"]) / GIB
    per_token = kv_bytes_per_token(target_cfg, tp)
    if args.speculative_algorithm == "EAGLE":
        per_token += kv_bytes_per_token(target_cfg, tp, 1)
    pool = rest - state - draft_kv
    tokens = int(pool * GIB / per_token) if pool > 0 else 0
    out.update(state_gib=state, draft_kv_gib=draft_kv, kv_pool_gib=pool, max_total_num_tokens=tokens,
               kv_bytes_per_token=per_token, context_length=context, max_running_requests=requests)
    if tokens <= 0:
        raise StartupFailure("memory_pool", [
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: mem_fraction_static=%s" % fraction])

    graph_bs = min(args.cuda_graph_max_bs_decode or 160, requests)
    graph_tokens = graph_bs * tokens_per_verify(args)
    headroom = total - budget
    graphs = GRAPH_BASE_GIB + graph_tokens * GRAPH_MIB_PER_TOKEN_TP1 / tp * MIB / GIB
    prefill = (args.chunked_prefill_size or 8192) * PREFILL_MIB_PER_TOKEN_TP1 / tp * MIB / GIB
    out.update(graph_bs=graph_bs, graph_tokens=graph_tokens, graph_gib=graphs, prefill_gib=prefill,
               headroom_gib=headroom, avail_after_pool_gib=headroom)
    out["graph_fits"] = graphs + prefill <= headroom
    return out
