# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's memory estimate: a lower bound of what a serving envelope needs per GPU.

Pure Python (no Ansible imports). Counts only what any SGLang start needs for sure: the
weights of the model and its draft split over the tensor-parallel GPUs, the KV cache of one
request at the full context length, and the linear-attention state of every running
request. If that lower bound exceeds GPU memory x mem_fraction_static the envelope cannot
fit, and the deploy stops before anything changes. Passing it does not prove the envelope
fits (speculative buffers, CUDA graphs and fragmentation come on top): the health gate
decides that.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

GIB = float(1 << 30)
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


def _full_attention_layers(cfg):
    interval = cfg.get("full_attention_interval")
    return cfg["num_hidden_layers"] // interval if interval else cfg["num_hidden_layers"]


def param_count(cfg):
    """Parameters of a decoder (hybrid linear/full attention or plain) from config.json."""
    hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    head_dim = cfg.get("head_dim") or hidden // cfg["num_attention_heads"]
    n_full = _full_attention_layers(cfg)
    q_width = cfg["num_attention_heads"] * head_dim * (2 if cfg.get("attn_output_gate") else 1)
    attention = hidden * (q_width + 2 * cfg["num_key_value_heads"] * head_dim) \
        + cfg["num_attention_heads"] * head_dim * hidden
    total = layers * 3 * hidden * cfg.get("intermediate_size", 4 * hidden) + n_full * attention
    if n_full < layers:
        k_width = cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
        v_width = cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
        total += (layers - n_full) * (hidden * (2 * k_width + v_width) + 2 * hidden * v_width)
    total += cfg.get("vocab_size", 0) * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    return total + cfg.get("dflash_fc_in", 0) * hidden


def estimate(model_cfg, draft_cfg, envelope, gpu_memory_mib):
    """The lower bound, per GPU, in GiB, with its parts, and whether it fits."""
    tp = int(envelope["tp_size"])
    fraction = float(envelope["mem_fraction_static"])
    dtype = DTYPE_BYTES.get(model_cfg.get("torch_dtype"), 2)
    weights = param_count(model_cfg) * dtype / tp / GIB
    draft = param_count(draft_cfg) * dtype / tp / GIB if draft_cfg else 0.0
    head_dim = model_cfg.get("head_dim") or model_cfg["hidden_size"] // model_cfg["num_attention_heads"]
    kv_heads = max(1, model_cfg["num_key_value_heads"] // tp)
    context = int(envelope.get("context_length") or model_cfg.get("max_position_embeddings", 32768))
    kv_one_request = context * _full_attention_layers(model_cfg) * 2 * kv_heads * head_dim * dtype / GIB
    state = 0.0
    n_linear = model_cfg["num_hidden_layers"] - _full_attention_layers(model_cfg)
    if n_linear:
        v_heads = max(1, model_cfg["linear_num_value_heads"] // tp)
        per_request = n_linear * v_heads * model_cfg["linear_key_head_dim"] * model_cfg["linear_value_head_dim"] * 4
        state = int(envelope.get("max_running_requests") or 1) * per_request / GIB
    budget = gpu_memory_mib / 1024.0 * fraction
    need = weights + draft + kv_one_request + state
    return {
        "fits": need <= budget, "need_gib": round(need, 2), "budget_gib": round(budget, 2),
        "weights_gib": round(weights, 2), "draft_weights_gib": round(draft, 2),
        "kv_one_request_gib": round(kv_one_request, 2), "state_gib": round(state, 2),
        "gpu_memory_gib": round(gpu_memory_mib / 1024.0, 2), "tp_size": tp, "mem_fraction_static": fraction,
    }


def explain(result):
    return ("needs at least %(need_gib).2f GiB per GPU (weights %(weights_gib).2f + draft %(draft_weights_gib).2f "
            "+ KV of one %(context)s-token request %(kv_one_request_gib).2f + linear-attention state "
            "%(state_gib).2f) but tp_size=%(tp_size)d x mem_fraction_static=%(mem_fraction_static)s of "
            "%(gpu_memory_gib).2f GiB gives %(budget_gib).2f GiB" % dict(result, context=result.get("context", "full")))
