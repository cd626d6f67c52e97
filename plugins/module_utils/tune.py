# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find, on a class's canary, the largest serving envelope each variant starts healthy in, and
the variant that serves fastest there. Pure Python (no Ansible imports).

The search starts each variant at the top of the user's bounds and chooses each next try from
what the last start said, not from a grid:

- the static budget was short (SGLang 0.5.23's `Not enough memory`, `Loaded weights leave no
  GPU memory ... Raise --mem-fraction-static above X`, the hybrid-state error with its own
  figures), or a healthy start's KV pool holds less than one request of the context length:
  raise mem_fraction_static to what the message names when it names it; else halve
  max_running_requests (each running request keeps its linear-attention state and, with a
  DFlash/DDTree draft, the draft's KV of a whole context), then context_length (never under
  the minimum that counts), then raise mem_fraction_static to its bound;
- the memory outside the static budget was short (CUDA-graph capture failed, a CUDA OOM):
  halve cuda_graph_max_bs_decode, then lower mem_fraction_static a step;
- any other cause (a crash, a kernel fault, a bad argument) is no memory limit: the variant
  fails there, with its cause;
- a healthy start whose pool holds a whole context fits: the largest envelope, since every
  earlier try was larger.

A variant with nothing left to move does not fit; the result names the memory that is short.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

# The knobs the search moves, in the order a fit prefers them large (context first).
KNOBS = ("context_length", "max_running_requests", "cuda_graph_max_bs_decode", "mem_fraction_static")
COUNT_KNOBS = KNOBS[:3]
STATIC_SHORT = ("kv_pool_oom", "weights_leave_no_kv", "hybrid_state_oom")
HEADROOM_SHORT = ("cuda_graph_oom", "cuda_graph_failed", "cuda_oom")
FRACTION_STEP = 0.03
HEALTHY = ("deployed", "unchanged")
WEIGHTS_MINIMUM = re.compile(r"Raise --mem-fraction-static above ([\d.]+)")
HYBRID_FIGURES = re.compile(r"total_rest_memory=([\d.]+) GB, mamba_cache_per_req=([\d.]+) MB")


def bounds_problems(bounds, min_context, envelope):
    """Every problem of the tune's bounds, each saying what to write; [] when none. `bounds`
    maps a knob to [lowest, highest]; a knob left out stays at the class envelope's value."""
    if not isinstance(bounds, dict):
        return ["sglang_tune_bounds must be a mapping of %s to [lowest, highest]" % ", ".join(KNOBS)]
    said = []
    for knob in sorted(bounds):
        pair = bounds[knob]
        where = "sglang_tune_bounds.%s" % knob
        if knob not in KNOBS:
            said.append("%s: the tune moves only %s" % (where, ", ".join(KNOBS)))
        elif not isinstance(pair, (list, tuple)) or len(pair) != 2:
            example = "[0.8, 0.92]" if knob == "mem_fraction_static" else "[4, 16]"
            said.append("%s: write [lowest, highest], such as %s" % (where, example))
        elif knob == "mem_fraction_static" and not all(_number(v) and 0 < float(v) < 1 for v in pair):
            said.append("%s: %r must be two fractions between 0 and 1, such as [0.8, 0.92]" % (where, list(pair)))
        elif knob != "mem_fraction_static" and not all(_whole(v) and int(v) >= 1 for v in pair):
            said.append("%s: %r must be two whole numbers of at least 1" % (where, list(pair)))
        elif float(pair[0]) > float(pair[1]):
            said.append("%s: the lowest (%s) is above the highest (%s)" % (where, pair[0], pair[1]))
    if not _whole(min_context) or int(min_context) < 1:
        said.append("sglang_tune_min_context: %r must be a whole number of tokens, such as 32768" % (min_context,))
    elif not said:
        top = int(bounds.get("context_length", [0, envelope.get("context_length") or 0])[1])
        if top and int(min_context) > top:
            said.append("sglang_tune_min_context (%s) is above the largest context_length the tune may try (%s)"
                        % (min_context, top))
    return said


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _whole(value):
    return _number(value) and float(value).is_integer()


def first_envelope(envelope, bounds):
    """The class envelope with every bounded count at its highest and the fraction kept
    within its bounds: the first try of every variant."""
    first = dict(envelope)
    for knob in COUNT_KNOBS:
        if knob in bounds:
            first[knob] = int(bounds[knob][1])
    if "mem_fraction_static" in bounds:
        low, high = (float(v) for v in bounds["mem_fraction_static"])
        first["mem_fraction_static"] = round(min(high, max(low, float(envelope.get("mem_fraction_static", high)))), 2)
    return first


def _lowest(knob, bounds, envelope, min_context=0):
    low = bounds[knob][0] if knob in bounds else envelope.get(knob)
    if knob == "context_length":
        return max(int(low or 0), int(min_context))
    return low


def _halved(envelope, knob, bounds, min_context=0):
    """The envelope with `knob` halved (not under its lowest), or None when it is there."""
    value, low = envelope.get(knob), _lowest(knob, bounds, envelope, min_context)
    if value is None or low is None or int(value) <= int(low):
        return None
    return dict(envelope, **{knob: max(int(low), int(value) // 2)})


def _fraction(envelope, bounds, to):
    low, high = (float(v) for v in bounds.get("mem_fraction_static", [envelope["mem_fraction_static"]] * 2))
    wanted = round(min(high, max(low, to)), 2)
    if wanted == round(float(envelope["mem_fraction_static"]), 2):
        return None
    return dict(envelope, mem_fraction_static=wanted)


def _graph_bs(envelope):
    """The largest decode batch SGLang captures: never more than the requests that can run."""
    bs = envelope.get("cuda_graph_max_bs_decode")
    requests = envelope.get("max_running_requests")
    return min(int(bs), int(requests)) if bs and requests else bs


def static_next(envelope, bounds, min_context, cause, evidence):
    """The next envelope when the static budget was short, and why; (None, what is short)."""
    fraction = float(envelope["mem_fraction_static"])
    high = float(bounds.get("mem_fraction_static", [fraction, fraction])[1])
    if cause == "weights_leave_no_kv":
        named = WEIGHTS_MINIMUM.search(evidence or "")
        if named:
            need = math.ceil((float(named.group(1)) + 0.02) * 100) / 100.0
            if need <= high:
                return _fraction(envelope, bounds, need), "the weights need more than %s of each GPU" % named.group(1)
            return None, ("the weights (target + draft) need more than %s of each GPU's memory; "
                          "mem_fraction_static may go only to %s" % (named.group(1), high))
    if cause == "hybrid_state_oom":
        figures = HYBRID_FIGURES.search(evidence or "")
        moved = _fraction(envelope, bounds, high)
        short = ("one request's linear-attention state (%s MB) does not fit in the %s GB the weights leave"
                 % (figures.group(2), figures.group(1)) if figures else "the linear-attention state of one request does not fit")
        return (moved, short + ": raising mem_fraction_static") if moved else (None, short)
    for knob in ("max_running_requests", "context_length"):
        moved = _halved(envelope, knob, bounds, min_context)
        if moved:
            return moved, "the static budget is short: halving %s" % knob
    moved = _fraction(envelope, bounds, high)
    if moved:
        return moved, "the static budget is short: raising mem_fraction_static to its bound"
    return None, ("the KV pool has no room for one %s-token request at max_running_requests=%s, "
                  "mem_fraction_static=%s" % (envelope.get("context_length"), envelope.get("max_running_requests"),
                                              envelope.get("mem_fraction_static")))


def headroom_next(envelope, bounds):
    """The next envelope when the memory outside the static budget was short; (None, what is short)."""
    if "cuda_graph_max_bs_decode" in envelope and envelope.get("max_running_requests"):
        capped = dict(envelope, cuda_graph_max_bs_decode=_graph_bs(envelope))
        moved = _halved(capped, "cuda_graph_max_bs_decode", bounds)
        if moved:
            return moved, "the CUDA graphs do not fit beside the static budget: halving cuda_graph_max_bs_decode"
    low = float(bounds.get("mem_fraction_static", [envelope["mem_fraction_static"]] * 2)[0])
    moved = _fraction(envelope, bounds, max(low, float(envelope["mem_fraction_static"]) - FRACTION_STEP))
    if moved:
        return moved, "the CUDA graphs do not fit beside the static budget: lowering mem_fraction_static"
    return None, ("the CUDA graphs of batch %s do not fit beside a static budget of mem_fraction_static=%s"
                  % (_graph_bs(envelope), envelope.get("mem_fraction_static")))


def judge(attempt, bounds, min_context):
    """What one try says: ("fits", why), ("next", envelope, why), ("no_fit", what is short)
    or ("failed", why)."""
    envelope, cause = attempt["envelope"], attempt.get("cause")
    memory = attempt.get("memory") or {}
    if attempt.get("outcome") in HEALTHY:
        tokens, context = memory.get("kv_tokens"), envelope.get("context_length")
        if tokens is None or not context or int(tokens) >= int(context):
            return ("fits", "started healthy and kept running")
        cause, why_short = "kv_pool_oom", "its KV pool holds %s tokens, less than one %s-token request" % (tokens, context)
    else:
        why_short = None
    if cause in STATIC_SHORT:
        moved, why = static_next(envelope, bounds, min_context, cause, attempt.get("evidence"))
    elif cause in HEADROOM_SHORT:
        moved, why = headroom_next(envelope, bounds)
    else:
        return ("failed", "%s: not a memory limit an envelope can move" % (cause or attempt.get("outcome")))
    why = "%s; %s" % (why_short, why) if why_short else why
    return ("next", moved, why) if moved else ("no_fit", why)


def variant_state(variant, attempts, envelope, bounds, min_context):
    """Where the search stands for one variant: its status, the next envelope to try (for
    `next`), why, and the envelope that fits (for `fits`)."""
    if not attempts:
        return {"variant": variant, "status": "next", "envelope": first_envelope(envelope, bounds),
                "why": "the top of the bounds", "tries": 0}
    verdict = judge(attempts[-1], bounds, min_context)
    state = {"variant": variant, "status": verdict[0], "why": verdict[-1], "tries": len(attempts),
             "envelope": attempts[-1]["envelope"], "tok_s": attempts[-1].get("tok_s")}
    if verdict[0] == "next":
        if any(_same(verdict[1], a["envelope"]) for a in attempts):
            return dict(state, status="no_fit", why=verdict[2] + " (tried already: nothing left to move)")
        state["envelope"] = verdict[1]
    return state


def _same(one, other):
    return all(one.get(k) == other.get(k) for k in KNOBS)


def plan(variants, envelope, bounds, min_context, attempts, max_tries, seconds_left):
    """The tune's next try (None when it is over), every variant's state, and why it stopped."""
    states, nxt, stopped = [], None, None
    for variant in variants:
        state = variant_state(variant, [a for a in attempts if a["variant"] == variant], envelope, bounds, min_context)
        if state["status"] == "next" and nxt is None:
            if len(attempts) >= max_tries:
                stopped = "the tune's %d tries are used" % max_tries
            elif seconds_left is not None and seconds_left <= 0:
                stopped = "the tune's time limit is reached"
            else:
                nxt = {"variant": variant, "envelope": state["envelope"], "why": state["why"],
                       "try": len(attempts) + 1}
        if state["status"] == "next" and (nxt is None or nxt["variant"] != variant):
            state = dict(state, status="not_tried" if not state["tries"] else "stopped", why=stopped or "waits its turn")
        states.append(state)
    return {"next": nxt, "done": nxt is None, "variants": states, "stopped": stopped}


def winner(states, known_good):
    """The fastest of the variants that fit and the known-good (`known_good`: its variant and
    tok_s), with every variant's ratio to the known-good and to the winner."""
    base = (known_good or {}).get("tok_s")
    rows = [dict(s, ratio=_ratio(s.get("tok_s"), base)) for s in states]
    fitted = [r for r in rows if r["status"] == "fits" and r.get("tok_s")]
    best = max(fitted, key=lambda r: r["tok_s"]) if fitted else None
    if best is None or (base and best["tok_s"] <= base):
        won = {"variant": (known_good or {}).get("variant"), "known_good": True, "tok_s": base, "ratio": 1.0 if base else None}
    else:
        won = {"variant": best["variant"], "known_good": False, "envelope": best["envelope"], "tok_s": best["tok_s"],
               "ratio": best["ratio"]}
    for row in rows:
        row["vs_winner"] = _ratio(row.get("tok_s"), won["tok_s"]) if row["status"] == "fits" else None
    return {"winner": won, "rows": rows}


def _ratio(value, base):
    return round(float(value) / float(base), 3) if value and base else None


def attempt_from_report(report, variant, envelope, why):
    """One try's record from its deploy report (sglang_report's latest.json)."""
    health = report.get("health") or {}
    new = (report.get("perf") or {}).get("new") or {}
    evidence = health.get("evidence") or []
    return {"variant": variant, "envelope": envelope, "why": why, "outcome": report.get("outcome"),
            "cause": report.get("cause"), "evidence": evidence[0].get("match") if evidence else "",
            "memory": health.get("memory") or {}, "tok_s": new.get("output_tokens_per_s"),
            "seconds": report.get("seconds")}


def envelope_text(envelope):
    """`ctx 131072, req 16, graphs 16, mem 0.88`."""
    short = (("context_length", "ctx"), ("max_running_requests", "req"), ("cuda_graph_max_bs_decode", "graphs"),
             ("mem_fraction_static", "mem"))
    return ", ".join("%s %s" % (label, envelope[k]) for k, label in short if envelope.get(k) is not None)


def table(results):
    """class x variant x envelope x tok/s x ratio x winner, one line per variant per class."""
    lines = ["%-10s %-8s %-44s %8s %7s  %s" % ("class", "variant", "envelope (or why not)", "tok/s", "ratio", "")]
    for result in results:
        won = result["winner"]
        kg = result.get("known_good") or {}
        lines.append("%-10s %-8s %-44s %8s %7s  %s" % (
            result["class"], "%s*" % kg.get("variant") if kg.get("variant") else "-", "(the known-good)",
            _fmt(kg.get("tok_s")), "1.00x" if kg.get("tok_s") else "-", "winner" if won.get("known_good") else ""))
        for row in result["rows"]:
            fits = row["status"] == "fits"
            lines.append("%-10s %-8s %-44s %8s %7s  %s" % (
                result["class"], row["variant"], envelope_text(row["envelope"]) if fits else
                ("%s: %s" % (row["status"].replace("_", " "), row["why"]))[:44], _fmt(row.get("tok_s") if fits else None),
                "%.2fx" % row["ratio"] if fits and row.get("ratio") else "-",
                "winner" if not won.get("known_good") and won["variant"] == row["variant"] else ""))
    return "\n".join(lines)


def _fmt(value):
    return "-" if value is None else "%.1f" % value


def summary_row(host, result, seconds):
    """The fleet summary's row of a tune's canary: it serves its known-good again (a kept
    winner's deploy writes its own row after this one); the cause column names the winner."""
    won, kg = result["winner"], result.get("known_good") or {}
    said = ("the known-good wins" if won.get("known_good") else "winner %s" % won["variant"])
    return {"host": host, "class": result.get("class"), "before": kg.get("variant"), "after": kg.get("variant"),
            "variant": won.get("variant"), "outcome": "tuned",
            "cause": "%s; %s" % (said, result["stopped"]) if result.get("stopped") else said,
            "ratio": won.get("ratio"), "seconds": round(seconds, 1)}


def learned(results, classes, folder):
    """What a deploy with `sglang_envelope_from: tuned` runs on each class: {class: {variant,
    envelope (None: the class's own, when the known-good won), tok_s, ratio, tuned_at}}, and
    the problems (a class without a result), each saying what to do. `results` maps a class
    to its result file's data (None when there is none)."""
    chosen, said = {}, []
    for host_class in sorted(set(classes)):
        result = results.get(host_class)
        won = (result or {}).get("winner") or {}
        if not won.get("variant"):
            said.append("class %s has no tune result in %s (%s.json): run playbooks/tune.yml on a host of the class "
                        "first, or deploy without sglang_envelope_from=tuned" % (host_class or "(none)", folder, host_class))
            continue
        chosen[host_class] = {"variant": won["variant"], "envelope": None if won.get("known_good") else won.get("envelope"),
                              "tok_s": won.get("tok_s"), "ratio": won.get("ratio"), "tuned_at": result.get("tuned_at")}
    return chosen, said
