# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watch after the gates: what the host decides from each probe of a server that passed
them, while the switch's restore stays ready (issue 47). Pure: the host's program gathers the
probes (the unit, one real generation, the journal's new lines through the gate's classifier,
SGLang's /metrics when exported) and acts on a breach through the switch's one restore.

A breach is what cannot serve: the unit no longer running, a cause the classifier names that
breaks a running server (a rank or a peer node gone), `generation_failures` failed generations
in a row (a dead scheduler behind a live HTTP server answers /health_generate 503 after
SGLang's 20 s, or not at all), failed requests above `error_rate` over `error_window`, or the
speed under the traffic it serves below `speed_ratio` of the known-good's for `speed_window`.
No single blip is one: one failed generation, one slow window, one error are not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

# What a fleet can live with: a probe each 10 s; three failed generations in a row (30 s, with
# SGLang's own 20 s health timeout each); half the requests failing over two minutes, once at
# least 20 were made; projected speed under 90 % of the known-good's, held for five minutes.
DEFAULTS = {"interval": 10.0, "generation_failures": 3, "error_rate": 0.5, "error_window": 120.0,
            "error_min_requests": 20, "speed_ratio": 0.9, "speed_window": 300.0}

# How a watch ended: its time ran out, it restored the known-good, or something else ended it (a
# new switch, a rollback, a stop). (The host's guard writes them; the controller's reports read them.)
CLEAN, RESTORED, SUPERSEDED = "clean", "restored", "superseded"

UNIT_DOWN = "server_exited"
GENERATION = "generation_failed"
ERRORS = "requests_failing"   # (SGLang counts them as aborted: failed, timed out or given up by their client)
SLOWER = "slower_than_known_good"

# The classifier's causes that mean a running server is broken (its ranks' group is, or a rank
# is gone): named from the journal the moment they appear. Others (a startup-only cause, or a
# line SGLang logs about one request) only name what the generation probes find.
BREAKS_A_RUNNING_SERVER = frozenset((
    "peer_died", "rendezvous_timeout", "nccl_error", "nccl_invalid_usage", "cuda_error", "child_died",
    "oom_killed", "rank_died"))

# The unit's ActiveState values of a server that serves (or is being told to reload).
RUNNING = ("active", "reloading")


def fresh():
    """The watch's state when it begins: only what a limit counts across probes (the failed
    generations in a row, since when the speed is low, the window of request counters)."""
    return {"failed_generations": 0, "first_failed_at": None, "generation_evidence": None, "slow_since": None,
            "counts": []}


def stopped_cleanly(probe, restarts):
    """The unit was stopped or restarted on purpose - a stop job is ending it, or ended it, cleanly
    (not running, its result still success: deactivating, inactive, or activating again after a
    restart), not a failure: the watch ends and restores nothing, for whoever stopped it decides
    what runs. A crash leaves the unit failed, or auto-restarting with the result that says how;
    once systemd starts it again its result is success anew, but its NRestarts (`restarts`, as
    the watch began) went up."""
    return probe.get("unit") not in RUNNING and probe.get("result") == "success" and \
        probe.get("restarts") == restarts


def limits(given=None):
    """The thresholds: DEFAULTS, with the user's given ones (None keeps a default)."""
    merged = dict(DEFAULTS)
    merged.update((key, value) for key, value in (given or {}).items() if value is not None)
    unknown = sorted(set(merged) - set(DEFAULTS))
    if unknown:
        raise ValueError("unknown watch thresholds: %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    return merged


def observe(state, probe, thresholds, baseline=None):
    """One probe: (the new state, the breach or None). `probe` has `time`, `unit` (the unit's
    ActiveState), `generation` ("ok", "failed" or None when not probed), `generation_evidence`,
    `diagnosis` (the classifier's result over the new journal lines, or None) and `metrics`
    (metrics_figures(), or None). `baseline`: {speed, accept_length} of the known-good's and the
    new server's own gate measurements ({known_good_speed, gate_speed, gate_accept_length})."""
    state = dict(state)
    breach = (unit_breach(probe) or journal_breach(probe) or generation_breach(state, probe, thresholds)
              or error_breach(state, probe, thresholds) or speed_breach(state, probe, thresholds, baseline))
    return state, breach


def found(cause, probe, evidence, rank=None, why=None):
    """A breach as the host records and says it."""
    return {"cause": cause, "time": probe["time"], "evidence": evidence, "rank": rank,
            "why": why or cause}


def unit_breach(probe):
    """The unit no longer runs: it cannot become healthy by waiting (its restarts are systemd's,
    and a server that crashed once under traffic is not the one to keep)."""
    if probe.get("unit") in RUNNING:
        return None
    named = probe.get("diagnosis") or {}
    if named.get("cause") not in (None, "unknown"):
        # (Said as the journal names it, with its rank and line: the exit is its consequence.)
        return found(named["cause"], probe, first_evidence(named), named.get("rank"))
    return found(UNIT_DOWN, probe, "the unit is %s" % probe.get("unit"), None,
                 "the server exited, its journal naming no cause")


def journal_breach(probe):
    named = probe.get("diagnosis") or {}
    if named.get("cause") not in BREAKS_A_RUNNING_SERVER:
        return None
    return found(named["cause"], probe, first_evidence(named), named.get("rank"),
                 "%s%s" % (named["cause"], " on %s" % named["rank"] if named.get("rank") else ""))


def first_evidence(named):
    evidence = (named or {}).get("evidence") or []
    return evidence[0]["match"] if evidence else None


def generation_breach(state, probe, thresholds):
    """`generation_failures` failed generations in a row; a good one starts the count again.
    Mutates `state` (the caller's fresh copy)."""
    if probe.get("generation") is None:
        return None
    if probe["generation"] == "ok":
        state.update(failed_generations=0, first_failed_at=None, generation_evidence=None)
        return None
    if not state["failed_generations"]:
        state["first_failed_at"] = probe["time"]
    state["failed_generations"] += 1
    state["generation_evidence"] = probe.get("generation_evidence") or state["generation_evidence"]
    if state["failed_generations"] < thresholds["generation_failures"]:
        return None
    return found(GENERATION, probe, state["generation_evidence"], None,
                 "%d generations in a row failed since %s" % (state["failed_generations"], hhmmss(state["first_failed_at"])))


def error_breach(state, probe, thresholds):
    """Failed requests over the window, from SGLang's counters (requests and aborted ones). The
    counts keep the window's samples; a counter that went down (a restart) starts it again."""
    figures = probe.get("metrics") or {}
    if figures.get("requests") is None or figures.get("errors") is None:
        return None
    counts = [c for c in state["counts"] if c[0] >= probe["time"] - thresholds["error_window"]]
    if counts and (figures["requests"] < counts[-1][1] or figures["errors"] < counts[-1][2]):
        counts = []
    counts.append((probe["time"], figures["requests"], figures["errors"]))
    state["counts"] = counts
    if probe["time"] - counts[0][0] < thresholds["error_window"] * 0.5:
        return None
    made, failed = counts[-1][1] - counts[0][1], counts[-1][2] - counts[0][2]
    if made < thresholds["error_min_requests"] or failed < made * thresholds["error_rate"]:
        return None
    return found(ERRORS, probe, "%d of %d requests failed in %d s" % (failed, made, probe["time"] - counts[0][0]),
                 None, "%d of %d requests failed" % (failed, made))


def projected_speed(figures, baseline):
    """The new server's speed under its traffic, as its gate's measured speed scaled by the accept
    length it now sees (a speculative variant's speed follows its accept length), or None."""
    baseline = baseline or {}
    accept, gate_accept, gate_speed = figures.get("accept_length"), baseline.get("gate_accept_length"), \
        baseline.get("gate_speed")
    if not (accept and gate_accept and gate_speed):
        return None
    return gate_speed * accept / gate_accept


def speed_breach(state, probe, thresholds, baseline):
    """Slower than the known-good would be, held for `speed_window`; one fast probe clears it."""
    speed = projected_speed(probe.get("metrics") or {}, baseline)
    known_good = (baseline or {}).get("known_good_speed")
    if speed is None or not known_good:
        return None
    if speed >= known_good * thresholds["speed_ratio"]:
        state["slow_since"] = None
        return None
    said = "accept length %.2f (the gate's %.2f): %.1f tok/s projected, the known-good's %.1f" % (
        probe["metrics"]["accept_length"], baseline["gate_accept_length"], speed, known_good)
    if state["slow_since"] is None:
        state["slow_since"] = probe["time"]
    if probe["time"] - state["slow_since"] < thresholds["speed_window"]:
        return None
    return found(SLOWER, probe, said, None, "slower than the known-good for %d s: %s"
                 % (probe["time"] - state["slow_since"], said))


def baseline_of(perf):
    """The speed limit's figures from the deploy's judged performance gate (sglang_bench.judge):
    the known-good's tokens per second and the new server's, with its accept length; {} without
    a measurement of both."""
    new, old = (perf or {}).get("new") or {}, (perf or {}).get("baseline") or {}
    if not (new.get("output_tokens_per_s") and old.get("output_tokens_per_s")):
        return {}
    return {"known_good_speed": old["output_tokens_per_s"], "gate_speed": new["output_tokens_per_s"],
            "gate_accept_length": new.get("accept_length")}


# SGLang's own health timeout (http_server.py: HEALTH_CHECK_TIMEOUT, env SGLANG_HEALTH_CHECK_TIMEOUT,
# 20 s unless set): /health_generate answers 503 after it, so a probe waits that long and a margin
# (its 1 s polling, the HTTP work) before it says the request hangs.
SGLANG_HEALTH_TIMEOUT, HANG_MARGIN = 20.0, 5.0


def generation_timeout(environment_text):
    """How long the watch's generation probe waits for an answer, from the server's environment
    file (KEY=VALUE lines): SGLang's health timeout there, or its default, plus HANG_MARGIN. (A
    fixed wait would call a server whose operator raised it - long prefills, sgl-project/sglang#22511 -
    hung, though it answers.)"""
    given = SGLANG_HEALTH_TIMEOUT
    for line in (environment_text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "SGLANG_HEALTH_CHECK_TIMEOUT":
            try:
                given = float(value.strip().strip("'\""))
            except ValueError:
                given = SGLANG_HEALTH_TIMEOUT   # (SGLang's int() would not start; keep its default)
    return max(given, 0.0) + HANG_MARGIN


def hhmmss(epoch):
    return time.strftime("%H:%M:%S", time.gmtime(epoch)) if epoch else "?"


# SGLang's Prometheus names (observability/metrics_collector.py) the watch reads, with their labels.
METRIC_RE = re.compile(r"^(sglang:[a-z_]+)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN)\s*$")
READ = {"sglang:spec_accept_length": "accept_length", "sglang:gen_throughput": "gen_throughput",
        "sglang:num_requests_total": "requests", "sglang:num_aborted_requests_total": "errors"}


def metrics_figures(text):
    """The figures the watch reads from SGLang's /metrics text (summed over label sets for the
    counters, averaged for the gauges), each None when not exported."""
    seen = {}
    for line in (text or "").splitlines():
        match = METRIC_RE.match(line.strip())
        if match and match.group(1) in READ and match.group(2) != "NaN":
            seen.setdefault(READ[match.group(1)], []).append(float(match.group(2)))
    figures = dict.fromkeys(READ.values())
    for name, values in seen.items():
        figures[name] = sum(values) if name in ("requests", "errors") else sum(values) / len(values)
    return figures
