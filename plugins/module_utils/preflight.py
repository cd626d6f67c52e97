# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What stops a deploy before the host changes (private to this collection; pure, no
Ansible imports): the GPUs, the attention backend, the model folders, the memory fit and
the GPU tenants, every problem named at once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import (
    describe, orphan_note, stop_command,
)
from ansible_collections.inferops.sglang.plugins.module_utils.memory_fit import estimate, explain


def fit_estimate(model_cfg, draft_cfg, envelope, gpu_memory_mib):
    """The memory-fit estimate with the context it was made for and its explanation."""
    result = estimate(model_cfg, draft_cfg or None, envelope, gpu_memory_mib)
    result["context"] = envelope.get("context_length")
    result["explanation"] = explain(result)
    return result


def node_gpus(envelope, nnodes=1):
    """The GPUs one node runs ranks on: tp_size's share when the server spans `nnodes` hosts."""
    return int(envelope["tp_size"]) // max(1, int(nnodes))


def _gpu_problems(host, host_class, gpus, gpu_model, envelope, backend_sm, nnodes=1):
    names = sorted(set(d["name"] for d in gpus["devices"]))
    problems = []
    needed = node_gpus(envelope, nnodes)
    if names != [gpu_model] or gpus["count"] < needed:
        share = " over %d nodes: %d on each" % (nnodes, needed) if nnodes > 1 else ""
        problems.append("%s (class %s) has %sx %s; the class needs %s, at least tp_size=%s of them%s." % (
            host, host_class, gpus["count"], " + ".join(names) or "no GPU", gpu_model, envelope["tp_size"], share))
    backend = envelope.get("attention_backend") or ""
    capability = gpus["devices"][0]["compute_capability"] if gpus["devices"] else "none"
    if backend in backend_sm and capability not in backend_sm[backend]:
        problems.append("%s: attention_backend=%s needs compute capability %s; these GPUs are %s. Choose another "
                        "attention_backend." % (host, backend, ", ".join(backend_sm[backend]), capability))
    return problems


def _tenant_problems(host, gpus, tp_size, unit, adopt=""):
    """Processes outside the managed unit holding memory on a GPU the deploy needs (the
    first tp_size cards): the new server would find that memory taken. The managed unit's
    own, and a hand-made unit's being adopted, are no obstacle: the deploy stops them."""
    held = {}
    ours = (unit, adopt or unit)
    for proc in gpus.get("processes") or []:
        index = proc.get("gpu_index")
        if proc.get("unit") not in ours and index is not None and int(index) < int(tp_size):
            held.setdefault(proc["pid"], (proc, []))[1].append(proc)
    problems = []
    for first, rows in (held[pid] for pid in sorted(held)):
        where = ", ".join("GPU %s (%s MiB)" % (r["gpu_index"], r.get("used_memory_mib") or "?") for r in rows)
        adopt_it = (", adopt it (sglang_service_adopt: %s)" % first["unit"]) if first.get("unit") else ""
        problems.append("%s: %s holds memory on %s, which this deploy needs and %s does not own%s. Stop it (%s)%s, or "
                        "deploy where those GPUs are free." % (host, describe(first), where, unit, orphan_note(first),
                                                               stop_command(first), adopt_it))
    return problems


def preflight(gpus, host, host_class, gpu_model, envelope, models, model_path, draft_model_path="",
              backend_sm=None, check_fit=True, unit="sglang.service", adopt="", nnodes=1):
    """Everything that stops a deploy before the host changes, at once: the GPUs are not the
    class's cards or too few, the attention backend does not run on them, a model folder has
    no config.json, the envelope's memory lower bound does not fit, a process outside the
    managed `unit` (and the hand-made unit being adopted, `adopt`) holds memory on a GPU the
    deploy needs. A node of a server over `nnodes` hosts needs tp_size's share of GPUs (the
    weights still split over the whole tp_size). `gpus` is gpu_facts' ansible_facts.gpu, `models` sglang_facts' folder -> config.json. Returns {problems: [...],
    fit: the estimate or None}."""
    problems = _gpu_problems(host, host_class, gpus, gpu_model, envelope, backend_sm or {}, nnodes)
    problems += _tenant_problems(host, gpus, node_gpus(envelope, nnodes), unit, adopt)
    wanted = [model_path] + ([draft_model_path] if draft_model_path else [])
    missing = [path for path in wanted if not (models or {}).get(path)]
    if missing:
        problems.append("%s: no model at %s (no config.json there). Copy the model to the host or fix sglang_model_path "
                        "/ sglang_draft_model_path." % (host, " or ".join(missing)))
    fit = None
    if check_fit and not missing and gpus["devices"]:
        fit = fit_estimate(models[model_path], models.get(draft_model_path) if draft_model_path else {}, envelope,
                           min(d["memory_total_mib"] for d in gpus["devices"]))
        if not fit["fits"]:
            problems.append("%s: the envelope cannot fit: %s." % (host, fit["explanation"]))
    return {"problems": problems, "fit": fit}
