# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the collection's configuration model into what a host runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter has its own documentation beside this file: plugins/filter/<filter>.yml.

from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.module_utils import canary, deploy_plan, guard, release
from ansible_collections.inferops.sglang.plugins.module_utils import envelope as envelope_check
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import describe, stop_command
from ansible_collections.inferops.sglang.plugins.module_utils.memory_fit import estimate, explain
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import FAILING_VERDICTS, settle_baseline
from ansible_collections.inferops.sglang.plugins.module_utils.server_args import (
    ServerArgsError, exec_start, to_argv,
)


def sglang_argv(args):
    try:
        return to_argv(dict(args))
    except ServerArgsError as exc:
        raise AnsibleFilterError(str(exc))


def sglang_exec_start(argv):
    """An argv list as one systemd ExecStart= line (% and $ escaped, quoted where needed)."""
    return exec_start([str(word) for word in argv])


def sglang_release_id(version, patch_sha256s, install=None):
    """`<version>-<12 hex>` of the patch checksums and what the build installs."""
    return release.release_id(str(version), [str(s) for s in patch_sha256s], _plain(install))


def sglang_git_commit(ls_remote, ref):
    """The commit `git ls-remote` names for a ref; fails when the remote has no such ref."""
    commit = release.git_commit(ls_remote, str(ref))
    if commit is None:
        raise AnsibleFilterError("the git remote has no ref %s: set sglang_build_git_ref to a branch, tag or commit "
                                 "it has" % ref)
    return commit


def sglang_translate_args(args, version, table):
    """Apply the pinned version's flag changes: renamed keys get their new name, removed
    ones fail with the replacement to use."""
    changes = (table or {}).get(str(version), {})
    out = {}
    for key, value in dict(args).items():
        if key in changes.get("removed", {}):
            raise AnsibleFilterError("server argument %s does not exist in SGLang %s: %s"
                                     % (key, version, changes["removed"][key]))
        out[changes.get("renamed", {}).get(key, key)] = value
    return out


def sglang_fit(model_cfg, draft_cfg, envelope, gpu_memory_mib):
    result = estimate(model_cfg, draft_cfg or None, envelope, gpu_memory_mib)
    result["context"] = envelope.get("context_length")
    result["explanation"] = explain(result)
    return result


def _gpu_problems(host, host_class, gpus, gpu_model, envelope, backend_sm):
    names = sorted(set(d["name"] for d in gpus["devices"]))
    problems = []
    if names != [gpu_model] or gpus["count"] < int(envelope["tp_size"]):
        problems.append("%s (class %s) has %sx %s; the class needs %s, at least tp_size=%s of them." % (
            host, host_class, gpus["count"], " + ".join(names) or "no GPU", gpu_model, envelope["tp_size"]))
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
        problems.append("%s: %s holds memory on %s, which this deploy needs and %s does not own. Stop it (%s)%s, or "
                        "deploy where those GPUs are free." % (host, describe(first), where, unit, stop_command(first),
                                                               adopt_it))
    return problems


def preflight(gpus, host, host_class, gpu_model, envelope, models, model_path, draft_model_path="",
              backend_sm=None, check_fit=True, unit="sglang.service", adopt=""):
    """Everything that stops a deploy before the host changes, at once: the GPUs are not the
    class's cards or too few, the attention backend does not run on them, a model folder has
    no config.json, the envelope's memory lower bound does not fit, a process outside the
    managed `unit` (and the hand-made unit being adopted, `adopt`) holds memory on a GPU the
    deploy needs. `gpus` is gpu_facts'
    ansible_facts.gpu, `models` sglang_facts' folder -> config.json. Returns {problems: [...],
    fit: the estimate or None}."""
    problems = _gpu_problems(host, host_class, gpus, gpu_model, envelope, backend_sm or {})
    problems += _tenant_problems(host, gpus, envelope["tp_size"], unit, adopt)
    wanted = [model_path] + ([draft_model_path] if draft_model_path else [])
    missing = [path for path in wanted if not (models or {}).get(path)]
    if missing:
        problems.append("%s: no model at %s (no config.json there). Copy the model to the host or fix sglang_model_path "
                        "/ sglang_draft_model_path." % (host, " or ".join(missing)))
    fit = None
    if check_fit and not missing and gpus["devices"]:
        fit = sglang_fit(models[model_path], models.get(draft_model_path) if draft_model_path else {}, envelope,
                         min(d["memory_total_mib"] for d in gpus["devices"]))
        if not fit["fits"]:
            problems.append("%s: the envelope cannot fit: %s." % (host, fit["explanation"]))
    return {"problems": problems, "fit": fit}


def sglang_preflight(gpus, check):
    """The preflight's verdict; `check` holds preflight()'s arguments by name (one dict, so the
    role's call stays short)."""
    try:
        return preflight(_plain(gpus), **_plain(check))
    except TypeError as exc:
        raise AnsibleFilterError("sglang_preflight: %s" % exc)


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
    if outcome == "failed":
        return "%s: %s deploy stopped before the service was restarted: %s" % (host, variant, failure)
    if cause == deploy_plan.GUARD_ACTED:
        return "%s: %s deploy undone: %s" % (host, name, failure)
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
    return ["cause:    %s (phase %s; %s)" % (gate["cause"], gate.get("phase"), gate.get("reason")),
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


def sglang_diagnosis(host, variant, outcome, failure="", gate=None, perf=None, rollback=None, known_good=None,
                     unit="sglang.service", leftovers=None, cause=None):
    """The text an operator reads first: what happened to the deploy, the cause with the
    journal line that shows it and what to change, the speed, and the rollback's result.
    `known_good` is the known-good service's name, or None when none existed; `leftovers`
    gpu_released's result before it started."""
    gate, perf = gate or {}, perf or {}
    lines = [_headline(host, variant, outcome, failure, gate, perf, cause)]
    if outcome in ("not_retried", "failed", "check") or cause == deploy_plan.GUARD_ACTED:
        return lines[0]
    if perf.get("verdict") in FAILING_VERDICTS:
        lines += _perf_cause(perf)
    elif gate.get("cause"):
        lines += _gate_cause(gate)
    if perf.get("new") and perf.get("verdict") != "bench_failed":
        lines.append(_speed(perf))
    if outcome == "rolled_back":
        lines.append(_rollback(rollback or {}, known_good, unit, leftovers))
    return "\n  ".join(lines)


def _plain(value):
    """Ansible's lazy containers as the plain dicts and lists the pure code expects."""
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def sglang_config_id(desired):
    try:
        return deploy_plan.config_id(_plain(desired))
    except deploy_plan.PlanError as exc:
        raise AnsibleFilterError("sglang_config_id: %s" % exc)


def sglang_deploy_plan(facts, wants):
    """What the switch does, from sglang_facts' fact and what the deploy wants."""
    try:
        return deploy_plan.plan(_plain(wants), _plain(facts))
    except deploy_plan.InputError as exc:
        raise AnsibleFilterError(str(exc))
    except (deploy_plan.PlanError, KeyError) as exc:
        raise AnsibleFilterError("sglang_deploy_plan: missing input %s" % exc)


def sglang_needs_read(facts, lock, files, config_id=None):
    """Whether the deploy must read the host (again) before it plans."""
    return deploy_plan.needs_read(_plain(facts), _plain(lock), _plain(files), config_id)


def sglang_deploy_outcome(plan, run):
    """How the deploy ended, after the gates."""
    try:
        return deploy_plan.outcome(_plain(plan), _plain(run))
    except KeyError as exc:
        raise AnsibleFilterError("sglang_deploy_outcome: missing input %s" % exc)


def sglang_perf_baseline(run, plan, measured_at):
    """The performance gate's baseline from sglang_bench's run on the running service (or
    the figure the plan found recorded with it)."""
    plan = _plain(plan)
    return settle_baseline(deploy_plan.ran(_plain(run)), plan["recorded_baseline"], plan["running_variant"].upper(),
                           measured_at)


def sglang_deploy_diagnosis(result, host, rollback=None):
    """sglang_diagnosis of a deploy's outcome (sglang_deploy_outcome's result); `rollback`:
    the rollback's health gate and the known-good variant's name (None: none existed)."""
    result, rollback = _plain(result), _plain(rollback) or {}
    return sglang_diagnosis(host, result["variant"], result["outcome"], result["failure"], result["gate"],
                            result["perf"], rollback.get("gate"), rollback.get("known_good"), result["unit"],
                            rollback.get("leftovers"), result.get("cause"))


def sglang_rollback_plan(facts, check):
    """What playbooks/rollback.yml does (restore or leave alone); `check`: host, unit,
    unit_path, state_dir. Fails, saying so, when the host keeps no known-good service."""
    try:
        return deploy_plan.rollback_plan(_plain(facts), **_plain(check))
    except deploy_plan.InputError as exc:
        raise AnsibleFilterError(str(exc))


def sglang_rollback_result(rollback, host, unit, restored=True):
    """playbooks/rollback.yml's last word: {ok, msg}. `rollback` as for sglang_deploy_diagnosis,
    with `guard`: what the host's guard did on its own before (sglang_facts' guard), said first."""
    rollback = _plain(rollback) or {}
    before = guard.said(rollback.get("guard"))
    first = "%s: earlier, %s.\n" % (host, before) if before else ""
    if not restored:
        return {"ok": True, "msg": first + "%s: the known-good service already serves, healthy: left alone" % host}
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


def sglang_status(facts, host, last=None):
    """One host's status line (playbooks/status.yml): what runs, its health, the known-good
    service and how the last deploy ended (its report, or none)."""
    facts, last = _plain(facts) or {}, _plain(last) or {}
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
    if facts.get("guard"):
        line += "\n  the host's guard: " + guard.said(facts["guard"])
    if last.get("diagnosis"):
        line += "\n  " + "\n  ".join(str(last["diagnosis"]).splitlines())
    return line.rstrip()


def sglang_envelope_problems(envelope, overrides=None):
    """The envelope's and the host's overrides' problems by type and range, each under the
    user's variable name (module_utils/envelope.py); [] when there is none."""
    return envelope_check.problems(_plain(envelope), _plain(overrides))


def sglang_input_problems(inputs):
    """A deploy's input problems (envelope.input_problems): `inputs` names envelope, overrides,
    model_path, variant and draft_model_path."""
    inputs = _plain(inputs) or {}
    return envelope_check.input_problems(inputs.get("envelope"), inputs.get("overrides"), inputs.get("model_path"),
                                         inputs.get("variant", "nextn"), inputs.get("draft_model_path"))


def sglang_task_result(result):
    """A module's result without Ansible's bookkeeping keys (ansible_facts, invocation, ...)."""
    return deploy_plan.task_result(_plain(result))


def sglang_prunable(found, keep, in_use):
    """The old release folders to remove (never one in use)."""
    return release.prunable(_plain(found), keep, _plain(in_use))


def sglang_gateway_rejoin(drained, ended, rollback_gate=None):
    """Whether the worker goes back into the gateway's rotation (deploy_plan.rejoin_gateway)."""
    return deploy_plan.rejoin_gateway(_plain(drained), _plain(ended), _plain(rollback_gate))


def sglang_class_group(host_class):
    """The inventory group of a host class's hosts in a deploy (canary.class_group)."""
    return canary.class_group(str(host_class or ""))


def sglang_deploy_phase(host, host_class, play_hosts, groups, enabled=False):
    """Which group a host deploys in: its class's canary or the rest (canary.phase)."""
    members = (groups or {}).get(canary.class_group(str(host_class or "")), [])
    return canary.phase(str(host), [str(h) for h in play_hosts], [str(h) for h in members], bool(enabled))


def sglang_canary_verdict(host, phase, hostvars):
    """Whether a host goes on after its class's canary (canary.verdict): the canary is the one
    this deploy's phase names; what it ended with is its sglang_deploy fact, or the failure
    its play kept."""
    name = (_plain(phase) or {}).get("class_canary")
    if not name or name == str(host):
        return canary.verdict(None, None)
    there = hostvars[name]
    failure = _plain(there.get("__sglang_deploy_failure")) or {}
    if failure.get("msg"):
        # Failed in this deploy: its sglang_deploy fact, if any, is an earlier deploy's.
        return canary.verdict(name, failure.get("summary"), failure["msg"])
    facts = _plain(there.get("ansible_facts") or {})
    return canary.verdict(name, facts.get("sglang_deploy"))


def sglang_install_source(install, wheelhouse=""):
    """Where a release build installs from (the package index, the wheelhouse, git), for its failures."""
    return release.install_source(_plain(install) or {}, wheelhouse)


def sglang_failure_text(result):
    """A failed task's output, error and message in one line."""
    return release.failure_text(_plain(result))


class FilterModule(object):
    def filters(self):
        return {
            "sglang_argv": sglang_argv,
            "sglang_exec_start": sglang_exec_start,
            "sglang_release_id": sglang_release_id,
            "sglang_git_commit": sglang_git_commit,
            "sglang_translate_args": sglang_translate_args,
            "sglang_fit": sglang_fit,
            "sglang_preflight": sglang_preflight,
            "sglang_diagnosis": sglang_diagnosis,
            "sglang_config_id": sglang_config_id,
            "sglang_deploy_plan": sglang_deploy_plan,
            "sglang_install_source": sglang_install_source,
            "sglang_gateway_rejoin": sglang_gateway_rejoin,
            "sglang_class_group": sglang_class_group,
            "sglang_deploy_phase": sglang_deploy_phase,
            "sglang_canary_verdict": sglang_canary_verdict,
            "sglang_rollback_plan": sglang_rollback_plan,
            "sglang_rollback_result": sglang_rollback_result,
            "sglang_deploy_outcome": sglang_deploy_outcome,
            "sglang_perf_baseline": sglang_perf_baseline,
            "sglang_task_result": sglang_task_result,
            "sglang_status": sglang_status,
            "sglang_envelope_problems": sglang_envelope_problems,
            "sglang_input_problems": sglang_input_problems,
            "sglang_deploy_diagnosis": sglang_deploy_diagnosis,
            "sglang_needs_read": sglang_needs_read,
            "sglang_prunable": sglang_prunable,
            "sglang_failure_text": sglang_failure_text,
        }
