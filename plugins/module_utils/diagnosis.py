# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The texts an operator reads (private to this collection; pure, no Ansible imports): a
deploy's diagnosis, a rollback's last word and a host's status line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import canary, deploy_plan, guard, startup
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import FAILING_VERDICTS


def _seconds(value):
    return round(value or 0, 1)


def _evidence(gate):
    """The journal line that decided the cause, else the journal's last line."""
    matches = [e.get("match") for e in gate.get("evidence") or [] if isinstance(e, dict) and e.get("match")]
    tail = gate.get("tail") or ["-"]
    return str(matches[0] if matches else tail[-1]).strip()


def _headline(host, variant, outcome, failure, gate, perf, cause=None):
    name = variant.upper()
    if outcome == "check":
        return "%s: %s %s" % (host, name, failure)
    if outcome == "not_retried":
        return "%s: %s not retried: %s" % (host, name, failure)
    if outcome == "failed" and cause == deploy_plan.AFTER_RESTART:
        return "%s: %s deploy failed after the restart, what runs is not known: %s" % (host, variant, failure)
    if outcome == "failed":
        return "%s: %s deploy stopped before the service was restarted: %s" % (host, variant, failure)
    if cause == deploy_plan.GUARD_ACTED:
        return "%s: %s deploy undone: %s" % (host, name, failure)
    if cause == deploy_plan.GROUP_NODE_FAILED:
        return "%s: %s deploy rolled back with its server group: %s" % (host, name, failure)
    if cause == deploy_plan.LINK_LOST:
        return "%s: %s deploy rolled back: its link to rank 0 is broken: %s" % (host, name, failure)
    if cause == deploy_plan.TASK_FAILED:
        return "%s: %s deploy rolled back: a task failed after the restart, outside the gates: %s" % (
            host, name, failure)
    if perf.get("verdict") in FAILING_VERDICTS:
        return "%s: %s deploy rolled back: healthy in %s s but %s" % (
            host, name, _seconds(gate.get("elapsed")),
            "slower than the known-good" if perf["verdict"] == "slower_than_baseline" else "failing under load")
    state = ("%s, healthy" % outcome) if gate.get("state") == "healthy" else "deploy %s" % gate.get("state", "not gated")
    return "%s: %s %s in %s s" % (host, name, state, _seconds(gate.get("elapsed")))


def _perf_cause(perf):
    verdict = perf["verdict"]
    if verdict == "bench_failed":
        return ["cause:    bench_failed (%s)" % perf.get("error"),
                "hint:     read the server journal: it answers health checks but fails requests"]
    new, old = perf["new"], perf["baseline"]
    cause = "cause:    %s (%s %s tok/s is %sx %s's %s tok/s; at least %sx required)" % (
        verdict, perf["variant"], new["output_tokens_per_s"], perf["ratio"], old["variant"],
        old["output_tokens_per_s"], perf["min_ratio"])
    return [cause, "hint:     keep %s on this host class, where it is faster, or lower sglang_perf_gate.min_ratio "
                   "to accept a slower variant" % old["variant"]]


def _gate_cause(gate):
    rank = " on %s" % gate["rank"] if gate.get("rank") else ""
    return ["cause:    %s%s (phase %s; %s)" % (gate["cause"], rank, gate.get("phase"), gate.get("reason")),
            "evidence: %s" % _evidence(gate),
            "hint:     %s" % gate.get("hint")]


def _speed(perf):
    new, old = perf["new"], perf.get("baseline")
    accept = " (accept length %s)" % new["accept_length"] if new.get("accept_length") else ""
    if not perf.get("enabled"):
        versus = ""
    elif old:
        versus = " vs %s %s tok/s (%s) = %sx (at least %sx required)" % (
            old["variant"], old["output_tokens_per_s"], old["source"], perf["ratio"], perf["min_ratio"])
    else:
        versus = "; no baseline to compare with" + (": %s" % perf["baseline_error"] if perf.get("baseline_error") else "")
    return "speed:    %s %s tok/s%s%s" % (perf["variant"], new["output_tokens_per_s"], accept, versus)


def _rollback(rollback, known_good, unit, leftovers=None):
    leftovers = leftovers or {}
    if not known_good:
        return ("NO KNOWN-GOOD SERVICE EXISTED: nothing to roll back to; %s is stopped and this\n"
                "  host serves nothing until a working variant is deployed." % unit)
    if leftovers and not leftovers.get("released", True):
        return "rolled back to %s: restored but NOT STARTED - %s" % (known_good, leftovers.get("msg"))
    waited = " (after %s s for what %s left behind)" % (_seconds(leftovers.get("elapsed")), unit) \
        if leftovers.get("waited") else ""
    state = rollback.get("state", "not started")
    if state == "healthy":
        return "rolled back to %s: healthy in %s s%s" % (known_good, _seconds(rollback.get("elapsed")), waited)
    return "rolled back to %s: %s%s - %s: %s" % (
        known_good, state, waited, rollback.get("cause", "?"), rollback.get("hint", ""))


def diagnosis(host, variant, outcome, failure="", gate=None, perf=None, rollback=None, known_good=None,
              unit="sglang.service", leftovers=None, cause=None):
    """The text an operator reads first: what happened to the deploy, the cause with the
    journal line that shows it and what to change, the speed, and the rollback's result.
    `known_good` is the known-good service's name, or None when none existed; `leftovers`
    gpu_released's result before it started."""
    if outcome == canary.SKIPPED:
        return failure
    gate, perf = gate or {}, perf or {}
    lines = [_headline(host, variant, outcome, failure, gate, perf, cause)]
    if outcome in ("not_retried", "failed", "check") or cause == deploy_plan.GUARD_ACTED:
        return lines[0]
    if perf.get("verdict") in FAILING_VERDICTS:
        lines += _perf_cause(perf)
    elif gate.get("cause"):
        lines += _gate_cause(gate)
    if gate.get("timeline"):
        lines.append("start-up: %s" % startup.describe_timeline(gate["timeline"], gate.get("known_good_timeline")))
    if perf.get("new") and perf.get("verdict") != "bench_failed":
        lines.append(_speed(perf))
    if outcome == "rolled_back":
        lines.append(_rollback(rollback or {}, known_good, unit, leftovers))
    return "\n  ".join(lines)


def deploy_diagnosis(result, host, rollback=None):
    """diagnosis() of a deploy's outcome (deploy_plan.outcome's result); `rollback`:
    the rollback's health gate and the known-good variant's name (None: none existed)."""
    rollback = rollback or {}
    return diagnosis(host, result["variant"], result["outcome"], result["failure"], result["gate"], result["perf"],
                     rollback.get("gate"), rollback.get("known_good"), result["unit"], rollback.get("leftovers"),
                     result.get("cause"))


def rollback_result(rollback, host, unit, restored=True, check=False):
    """playbooks/rollback.yml's last word: {ok, msg}. `rollback` as for deploy_diagnosis,
    with `guard`: what the host's guard did on its own before (sglang_facts' guard), said first.
    `check`: a check run, which says what it would restore and started nothing to prove."""
    rollback = rollback or {}
    before = guard.said(rollback.get("guard"))
    first = "%s: earlier, %s.\n" % (host, before) if before else ""
    if not restored:
        return {"ok": True, "msg": first + "%s: the known-good service already serves, healthy: left alone" % host}
    if check:
        known_good = rollback.get("known_good") or "the known-good service"
        return {"ok": True, "msg": first + "%s: check mode: would restore %s and start it in place of %s "
                "(nothing was changed; a real run proves it healthy)" % (host, known_good, unit)}
    gate, leftovers = rollback.get("gate") or {}, rollback.get("leftovers") or {}
    return {"ok": gate.get("state") == "healthy",
            "msg": first + "%s: %s" % (host, _rollback(gate, rollback.get("known_good"), unit, leftovers))}


def _health_word(facts):
    unit = facts.get("unit") or {}
    if facts.get("healthy"):
        return "healthy"
    if unit.get("active_state") == "active":
        return "not healthy (%s)" % (facts.get("http_status") or facts.get("http_error"))
    return "not running"


def status(facts, host, last=None):
    """One host's status line (playbooks/status.yml): what runs, its health, the known-good
    service and how the last deploy ended (its report, or none)."""
    facts, last = facts or {}, last or {}
    running = facts.get("deployed") or {}
    known_good = facts.get("known_good_record") or {}
    unit = facts.get("unit") or {}
    pending = facts.get("pending") or {}
    what = ("%s UNVERIFIED (a switch began at %s and was never confirmed)"
            % (str(pending.get("variant") or "?").upper(), deploy_plan.utc(pending.get("started")))
            if pending else str(running.get("variant") or "none").upper())
    kept = str(known_good.get("variant") or "none").upper()
    if facts.get("known_good_problem"):
        kept = ("%s %s" % (str(known_good.get("variant") or "").upper(), facts["known_good_problem"])).strip()
    line = "%s: %s from %s, %s (%s/%s); known-good %s; last deploy: %s %s" % (
        host, what, str(running.get("release") or "-").rstrip("/").rsplit("/", maxsplit=1)[-1],
        _health_word(facts), unit.get("active_state"), unit.get("sub_state"),
        kept, last.get("outcome") or "no report", last.get("time") or "")
    line = line.rstrip()
    group = last.get("group") or {}
    if group.get("name"):
        # (A node other than rank 0 answers /health with SGLang's stand-in 200: rank 0 says the server's.)
        nodes = group.get("nodes") or []
        line += "\n  node %s of server group %s (%s); rank 0's health is the server's" % (
            group.get("node_rank"), group["name"], ", ".join(nodes) or "?")
    if facts.get("guard"):
        line += "\n  the host's guard: " + guard.said(facts["guard"])
    if (facts.get("watch") or {}).get("said"):
        line += "\n  the host's watch: " + facts["watch"]["said"]
    if running.get("timeline") and not pending:
        beside = known_good.get("timeline") if known_good.get("variant") != running.get("variant") else None
        line += "\n  its start-up: " + startup.describe_timeline(running["timeline"], beside)
    if last.get("diagnosis"):
        line += "\n  " + "\n  ".join(str(last["diagnosis"]).splitlines())
    return line.rstrip()
