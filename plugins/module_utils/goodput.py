# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Goodput under latency targets: what a load step at one request rate says, the next rate to
try, and which variant serves the most under the targets. Pure Python (no Ansible imports).

The targets (sglang_tune_slo) are p99 bounds, in milliseconds, on the time to first token
(`ttft_p99_ms`) and the inter-token latency (`itl_p99_ms`), either or both, and an error budget
(`error_budget`, the fraction of requests that may fail; 0 unless given). A load step meets
them when its p99s are within them and no more requests failed than the budget allows.

A step's goodput is SGLang's (0.5.23, `sglang/benchmark/goodput.py` calculate_goodput): the
requests that met every target, per second of the step. A request's inter-token figure there is
its time per output token after the first, (latency - ttft) / (tokens - 1), 0 for one token.

The rate search is a bracket on the rate, as SGLang's `sglang.auto_benchmark` searches
(sgl-project/sglang#21736): up by doubling from the first rate until a step misses the targets,
down by halving until one meets them, then the geometric middle of the highest rate that met
and the lowest that missed, until the two are within `precision` of each other, the bounds are
reached or the steps are spent. Latency grows with the rate (the queue), so the highest rate
that meets the targets is where the goodput under them peaks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

# (numpy's linear-interpolated percentile, as SGLang's benchmark computes its p99s.)
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import percentile

TARGETS = ("ttft_p99_ms", "itl_p99_ms")
SLO_KEYS = TARGETS + ("error_budget",)
PRECISION = 0.1


def slo_problems(slo, name="sglang_tune_slo"):
    """Every problem of the targets (the variable or option `name`), each saying what to write;
    [] when none."""
    if not isinstance(slo, dict):
        return ["%s must be a mapping such as {ttft_p99_ms: 2000, itl_p99_ms: 50}" % name]
    said = ["%s.%s: the targets are %s" % (name, key, ", ".join(SLO_KEYS)) for key in sorted(set(slo) - set(SLO_KEYS))]
    for key in TARGETS:
        if key in slo and not (_number(slo[key]) and slo[key] > 0):
            said.append("%s.%s: %r must be a number of milliseconds above 0" % (name, key, slo[key]))
    if "error_budget" in slo and not (_number(slo["error_budget"]) and 0 <= slo["error_budget"] < 1):
        said.append("%s.error_budget: %r must be a fraction from 0 up to 1, such as 0.01" % (name, slo["error_budget"]))
    if not any(key in slo for key in TARGETS):
        said.append("%s: give ttft_p99_ms or itl_p99_ms, or both" % name)
    return said


def time_per_token(record):
    """A request's seconds per output token after the first (SGLang's TPOT)."""
    if record["tokens"] <= 1:
        return 0.0
    return (record["latency"] - record["ttft"]) / (record["tokens"] - 1)


def met(record, slo):
    """Whether one finished request met every target (SGLang's good request)."""
    if "ttft_p99_ms" in slo and record["ttft"] * 1000 > slo["ttft_p99_ms"]:
        return False
    return "itl_p99_ms" not in slo or time_per_token(record) * 1000 <= slo["itl_p99_ms"]


def step(rate, records, wall, slo):
    """What one load step at `rate` requests per second says: records are the benchmark's
    (`ok`, `tokens`, `ttft` and `latency` in seconds, `itl` the gaps between chunks,
    `accept_length`), `wall` its seconds."""
    done = [record for record in records if record["ok"] and record["ttft"] is not None]
    failed = len(records) - len(done)
    ttft = percentile([record["ttft"] * 1000 for record in done], 99)
    itl = percentile([gap * 1000 for record in done for gap in record["itl"]], 99)
    accepts = [record["accept_length"] for record in done if record.get("accept_length") is not None]
    within = {"ttft_p99_ms": ttft, "itl_p99_ms": itl}
    meets = bool(done) and failed <= slo.get("error_budget", 0) * len(records) and all(
        within[key] is not None and within[key] <= slo[key] for key in TARGETS if key in slo)
    return {
        "rate": rate, "sent": len(records), "failed": failed, "meets": meets,
        "goodput": _rounded(sum(1 for record in done if met(record, slo)) / wall if wall > 0 else 0.0),
        "ttft_p99_ms": _rounded(ttft), "itl_p99_ms": _rounded(itl),
        "tok_s": _rounded(sum(record["tokens"] for record in done) / wall if wall > 0 else 0.0),
        "accept_length": _rounded(sum(accepts) / len(accepts)) if accepts else None,
    }


def next_rate(steps, first, bounds, max_steps, precision=PRECISION):
    """The next rate to try after `steps` (each with `rate` and `meets`, in the order run), or
    None when the search is done. `first` is where it starts (the measured capacity's share, for
    instance), `bounds` [lowest, highest] the rates it may try."""
    low, high = float(bounds[0]), float(bounds[1])
    if not steps:
        return _clamped(first, low, high)
    if len(steps) >= max_steps:
        return None
    meeting = [s["rate"] for s in steps if s["meets"]]
    best = max(meeting) if meeting else None
    missing = [s["rate"] for s in steps if not s["meets"] and (best is None or s["rate"] > best)]
    above = min(missing) if missing else None
    if best is None:
        return None if above <= low * (1 + precision) else _clamped(above / 2, low, high)
    if above is None:
        return None if best >= high else _clamped(best * 2, low, high)
    if above <= best * (1 + precision):
        return None
    return _clamped(math.sqrt(best * above), low, high)


def best(steps):
    """The step with the most goodput of those that met the targets; None when none did."""
    meeting = [s for s in steps if s["meets"]]
    return max(meeting, key=lambda s: (s["goodput"], s["rate"])) if meeting else None


def pareto(rows):
    """The rows (each a variant's best: `goodput`, `ttft_p99_ms`, `itl_p99_ms`) with a `pareto`
    flag: no other row has as much goodput and p99s as low, and one of them better."""
    return [dict(row, pareto=not any(_dominates(other, row) for other in rows)) for row in rows]


def _dominates(one, other):
    if one is other or one["goodput"] is None or other["goodput"] is None:
        return False
    figures = ((one["goodput"], other["goodput"]), (-_latency(one, "ttft_p99_ms"), -_latency(other, "ttft_p99_ms")),
               (-_latency(one, "itl_p99_ms"), -_latency(other, "itl_p99_ms")))
    return all(mine >= theirs for mine, theirs in figures) and any(mine > theirs for mine, theirs in figures)


def _latency(row, key):
    return float("inf") if row.get(key) is None else row[key]


def winners(rows):
    """The SLO winner (the most goodput under the targets; fewer milliseconds break a tie) and
    the plain-throughput winner (the most tokens per second, targets or not); None for no row."""
    meeting = [row for row in rows if row.get("meets")]
    slo = max(meeting, key=lambda row: (row["goodput"], -_latency(row, "itl_p99_ms"))) if meeting else None
    measured = [row for row in rows if row.get("tok_s") is not None]
    fastest = max(measured, key=lambda row: row["tok_s"]) if measured else None
    return {"slo": slo, "throughput": fastest, "differ": bool(slo and fastest and slo is not fastest)}


def _clamped(rate, low, high):
    return round(min(max(float(rate), low), high), 3)


def _rounded(value):
    return None if value is None else round(value, 3)


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))
