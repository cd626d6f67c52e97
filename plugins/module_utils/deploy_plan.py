# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of a deploy, as plain functions of what the deploy wants and what
sglang_facts read on the host (private to this collection; pure, no Ansible imports).

`plan()` runs once after the host is read and says what the switch does: converged or not,
which files to write, whether to snapshot the running service as known-good (and with which
record), whether to validate, restart and daemon-reload, and whether an earlier rollback of
this configuration stops the run. `outcome()` runs once after the gates and says how the
deploy ended, why, and whether to roll back. The role's tasks only read named fields."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import time

from ansible_collections.inferops.sglang.plugins.module_utils import adoption, envelope, guard, service_config, watch
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import describe, stop_command
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import (
    FAILING_VERDICTS, judge, recorded_baseline,
)

# The files a deploy writes, by name. The order is the one config_id has always hashed.
CONFIG = ("unit", "env", "secrets")

DEPLOYED, UNCHANGED, ROLLED_BACK = "deployed", "unchanged", "rolled_back"
NOT_RETRIED, CHECK, FAILED = "not_retried", "check", "failed"
OUTCOMES = (DEPLOYED, UNCHANGED, ROLLED_BACK, NOT_RETRIED, CHECK, FAILED)
# How a deploy may end without failing the play (rolled-back ones only when asked).
GOOD_OUTCOMES = (DEPLOYED, UNCHANGED, CHECK)
TOLERATED_OUTCOMES = (ROLLED_BACK, NOT_RETRIED)
BAD_ARGUMENT = "bad_argument"
# The host's guard restored the known-good before this deploy confirmed its switch (its
# deadline passed while the gates still ran): the host is back, nothing to roll back.
GUARD_ACTED = "guard_acted_first"
# A task failed after the restart, outside the gates (the rollback's restore, say): what runs
# is not known; the host's guard, still armed, restores the known-good at its deadline.
AFTER_RESTART = "failed_after_restart"
# A task of the switch failed after the restart, outside the gates (a module error, a host that
# refused a command): the service it restarted is not proven, so it is rolled back; the
# configuration is not to blame, so it is not remembered (a re-run tries it again).
TASK_FAILED = "task_failed"
# A node of a server group passed its own gates but another node did not (or did not say): one
# node down is the whole server down, so every node rolls back (and remembers the configuration,
# unless what fell was a link: LINK_LOST).
GROUP_NODE_FAILED = "group_node_failed"
# A node of a server group cannot reach rank 0 where the ranks meet (sglang_link, after the
# gates): its ranks lost the others (or never met them), whatever its own gate saw.
LINK_LOST = "link_lost"
# What a node's own gate says when it only waited on the others (a hung collective, a
# rendezvous never completed, a peer's connection closed under its ranks): in a group, the node
# that fell first is the cause.
WAITED_CAUSES = ("stalled", "health_lost", "health_check_failed", "timeout", "peer_died", "rendezvous_timeout")


class PlanError(ValueError):
    """The plan was asked with inputs it cannot decide from (a bug in the caller)."""


class InputError(ValueError):
    """The deploy cannot go on as asked (its inputs, or the host: a port held by another
    process); the message says what to change."""


def config_id(desired):
    """The name of a configuration (unit, env and secrets texts) for the record of rolled-back
    ones: the same texts always give the same 16 hex digits."""
    missing = [name for name in CONFIG if name not in desired]
    if missing:
        raise PlanError("desired lacks %s" % ", ".join(missing))
    texts = json.dumps([desired[name] for name in CONFIG])
    return hashlib.sha256(texts.encode("utf-8")).hexdigest()[:16]


def sha1(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def stale_files(desired, paths, checksums):
    """Which files hold other bytes than this deploy's. The secrets file counts only when the
    deploy has an API key: without one the unit does not read it, and a left-over file must
    not make every re-run look like a change."""
    stale = {}
    for name in CONFIG:
        current = checksums.get(paths[name])
        wanted = desired[name]
        stale[name] = bool(wanted or name != "secrets") and current != sha1(wanted)
    return stale


def restart_pending(paths, facts):
    """A config file changed after the running process started (a deploy stopped between its
    write and its restart): what answers is not what the files say."""
    written = set(facts.get("restart_pending") or ())
    return any(paths[name] in written for name in CONFIG)


def not_retried(facts, restarts, retry):
    """The record of an earlier rollback of exactly this configuration, when this deploy
    would restart into it again; None when the deploy goes on (a record whose rollback was not
    the configuration's fault says `retry`)."""
    record = facts.get("rolled_back")
    if retry or not restarts or (record or {}).get("retry"):
        return None
    return record


def snapshot_record(facts, paths):
    """What the known-good snapshot records about the running service it keeps."""
    record = dict(facts.get("deployed") or {})
    record.update({
        "proven_healthy_by": facts.get("url"),
        "invocation_id": (facts.get("unit") or {}).get("invocation_id"),
        "has_secrets": facts["checksums"].get(paths["secrets"]) is not None,
    })
    return record


def unverified(facts, paths):
    """Why what runs is not known to have passed its gates (None when it is): a switch a deploy
    began and never confirmed (its pending record), or our files that no longer hash to the
    deploy record of what passed (written since, by hand or by a deploy that never finished).
    A record older than 0.3.0 names no hashes and is taken at its word."""
    pending = facts.get("pending")
    if pending:
        return ("a switch to %s began at %s and was never confirmed (its gates did not pass)"
                % (str(pending.get("variant") or "?").upper(), utc(pending.get("started"))))
    deployed = facts.get("deployed") or {}
    hashes = deployed.get("config_sha1")
    if not hashes:
        return None
    checksums = facts.get("checksums") or {}
    differ = [paths[name] for name in CONFIG if name in hashes and checksums.get(paths[name], hashes[name]) != hashes[name]]
    if differ:
        return ("%s differ from the deploy record of the %s that passed its gates"
                % (", ".join(differ), str(deployed.get("variant") or "?").upper()))
    return None


def utc(epoch):
    """A record's epoch seconds as the messages say them."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(epoch)))
    except (TypeError, ValueError):
        return "?"


def snapshot_files(adopt, paths, checksums):
    """The files the known-good snapshot keeps: the adopted unit's, else our unit, env and secrets."""
    if adopt:
        return [f["path"] for f in adopt["files"]]
    return [paths[name] for name in CONFIG if checksums.get(paths[name]) is not None]


def re_base(health_url):
    """The server's base URL from its health URL (what the bench measures)."""
    url = health_url or ""
    return url[:-len("/health")] if url.endswith("/health") else url


def stop_message(variant, record):
    return ("this exact %s configuration was rolled back on %s (cause %s); the running service was left alone. "
            "Change the configuration, or set sglang_retry_rolled_back=true to try it again."
            % (variant.upper(), record.get("time", "?"), record.get("cause", "?")))


def converged_gate(facts):
    """The health facts of a converged host, in sglang_health's shape, for the report."""
    gate = dict((key, facts.get(key)) for key in ("unit", "url", "http_status", "http_error"))
    gate.update({"state": "healthy", "cause": None, "elapsed": 0.0})
    return gate


def needs_read(facts, lock, files, config_id=None):
    """Whether the host must be read (again) before the plan: never read, read by someone
    else without these files (a partial read) or for another configuration (an earlier
    deploy of the same run: its rollback record is another's), or a run released the deploy
    lock after the read (another one, or this run's earlier deploy: it may have changed the host)."""
    facts, lock = facts or {}, lock or {}
    read_at = facts.get("read_at")
    if read_at is None or any(path not in (facts.get("checksums") or {}) for path in files):
        return True
    if config_id is not None and facts.get("config_id") != config_id:
        return True
    return bool(lock.get("broken")) or (lock.get("last_released") or 0) >= read_at


def argument_layers(wants):
    """The variant's own server arguments and the extra ones, under the names the inventory
    gives them: they reach ExecStart= too, so they are checked as the envelope is."""
    variant = wants.get("variant")
    own = (wants.get("variants_given") or {}).get(variant)
    if isinstance(own, dict):
        own = dict((k, v) for k, v in own.items() if k != service_config.DRAFT_KEY)
    return [("sglang_service_variants.%s" % variant, own), ("sglang_service_extra_args", wants.get("extra_args"))]


def input_problem(wants):
    """What is wrong with the deploy's own inputs, said as the fix (None when nothing is):
    checked by the plan, after the read-only read and before anything on the host changes.
    `wants` names variant and variants, release, and what envelope.input_problems checks
    (envelope, overrides, model_path, draft_model_path, draft: the variant has a draft model)."""
    variants = list(wants.get("variants") or ())
    problems = []
    if wants.get("variant") not in variants:
        problems.append("unknown variant %s (have %s): set sglang_variant to one of them"
                        % (wants.get("variant"), ", ".join(variants)))
    if not wants.get("release"):
        problems.append("no release given (sglang_service_release_dir)")
    problems += envelope.input_problems(wants.get("envelope"), wants.get("overrides"), wants.get("model_path"),
                                        wants.get("variant"), wants.get("draft_model_path"), wants.get("draft"),
                                        layers=argument_layers(wants))
    try:
        # (The watch's limits are used once the gates passed: checked now, before anything changes.)
        watch.limits(wants.get("watch_limits"))
    except ValueError as exc:
        problems.append("%s: fix sglang_watch_limits" % exc)
    if not problems:
        return None
    return "%s: bad deploy inputs, nothing was changed: %s." % (wants.get("host", "?"), "; ".join(problems))


def port_problem(wants, facts):
    """A process outside the managed unit listening on the port this deploy's server binds
    (the new server could not bind it, and a health gate would hear the other one): said as
    the fix, or None."""
    unit = wants.get("unit", "sglang.service")
    ours = [name for name in (unit, wants.get("adopt")) if name]
    # A holder whose process the read could not see is not known to be another's.
    others = [h for h in facts.get("port_holders") or () if h.get("pid") and h.get("unit") not in ours]
    if not others:
        return None
    named = "; ".join(describe(h) for h in others)
    stops = sorted(set(stop_command(h) for h in others))
    units = sorted(set(h["unit"] for h in others if h.get("unit")))
    adopt = (", adopt it as the known-good service (sglang_service_adopt: %s, the docs guide \"Bringing a hand-made host "
             "under the collection\")" % units[0]) if len(units) == 1 else ""
    return ("%s: port %s is held by %s, not %s: the new server could not bind it. Stop it (%s)%s, or choose another "
            "port (sglang_service_port). Nothing was changed."
            % (wants.get("host", "?"), wants.get("port", "?"), named, unit, "; ".join(stops), adopt))


def plan(wants, facts):
    """The switch's decisions. `wants`: host, variant and variants (the names there are),
    release, model_path, port, desired (unit/env/secrets texts), paths (the same names -> paths),
    release_marker, checker ({path, sha1}), what input_problem checks,
    retry_rolled_back, perf_gate ({enabled, baseline, workload, ...}); `facts`: sglang_facts'
    ansible_facts.sglang. A converged host's plan carries its outcome as `ended`."""
    problem = input_problem(wants) or adoption.problem(wants, facts) or port_problem(wants, facts)
    if problem:
        raise InputError(problem)
    adopt = adoption.adopting(wants, facts)
    desired, paths, checksums = wants["desired"], wants["paths"], facts["checksums"]
    stale = stale_files(desired, paths, checksums)
    differs = any(stale.values())
    pending = restart_pending(paths, facts)
    doubt = unverified(facts, paths)
    # What runs unverified is treated as not healthy: a re-run restarts into this and gates it.
    healthy = bool(facts.get("healthy")) and not facts.get("pending")
    release_present = checksums.get(wants["release_marker"]) is not None
    locked_by = facts.get("locked_by")
    converged = healthy and not differs and release_present and locked_by is None and not pending and doubt is None
    # (Not only a write restarts into it: an adopted host keeps the failed unit's files, stopped.)
    earlier = not_retried(facts, differs or pending or not healthy or doubt is not None, wants.get("retry_rolled_back"))
    # A stopped run touches nothing: no write, no snapshot, no restart, no gate (the outcome says why).
    go = earlier is None
    write = [name for name in CONFIG if stale[name]] if go else []
    changes = bool(write)
    # What serves now, and becomes the known-good: the hand-made unit being adopted (whenever
    # the deploy goes on, as it is stopped), else ours when its files change.
    serving = adopt["healthy"] if adopt else healthy
    snapshot = go and serving if adopt else changes and healthy and not pending and doubt is None
    if not adopt and go and changes and healthy and not pending and doubt:
        # Files edited since their deploy passed: they would become the known-good unproven.
        raise InputError("%s: the running service cannot become the known-good: %s. Nothing was changed. Run "
                         "playbooks/rollback.yml to bring the known-good back, or deploy again what runs."
                         % (wants.get("host", "?"), doubt))
    checker = wants.get("checker") or {}
    perf_gate = wants.get("perf_gate") or {}
    recorded = recorded_baseline(facts.get("deployed"), perf_gate.get("workload"))
    restart = go and (differs or pending or not healthy or doubt is not None)
    decided = {
        "config_id": config_id(desired),
        "config_sha1": dict((name, sha1(desired[name])) for name in CONFIG if desired[name] or name != "secrets"),
        "converged": converged,
        "gate": converged_gate(facts) if converged else None,
        "stale": stale,
        "changes": changes,
        "write": write,
        "write_paths": [paths[name] for name in write],
        "release_present": release_present,
        "build": not release_present,
        "restart_pending": pending,
        "locked_by": locked_by,
        "prepare": bool(facts.get("layout_drift")),
        "install_checker": bool(checker) and checksums.get(checker.get("path")) != checker.get("sha1"),
        "stop": {"cause": earlier.get("cause"), "record": earlier,
                 "message": stop_message(wants.get("variant", "?"), earlier)} if earlier else None,
        "validate": go,
        "health_gate": go,
        "snapshot": snapshot,
        "snapshot_files": snapshot_files(adopt, paths, checksums) if snapshot else [],
        "snapshot_record": (adoption.record(adopt) if adopt else snapshot_record(facts, paths)) if snapshot else None,
        "adopt": {"unit": adopt["unit"]} if adopt and go else None,
        "adopted_from": adopt["unit"] if adopt else (facts.get("deployed") or {}).get("adopted_from"),
        "measure_baseline": bool(perf_gate.get("enabled")) and serving and changes
        and (perf_gate.get("baseline") == "measure" or recorded is None),
        "baseline_url": re_base(adopt["url"] if adopt else facts.get("url")),
        "recorded_baseline": recorded,
        "running_variant": (adopt or facts.get("deployed") or {}).get("variant") or "known-good",
        # What the host ran before this deploy, for the report and the fleet summary (None: nothing of ours).
        "before": before(adopt, facts),
        "unverified": doubt,
        # What the host's guard did on its own since the last switch, said first in the report.
        "earlier": ("%s: earlier, %s." % (wants.get("host", "?"), guard.said(facts["guard"])))
        if facts.get("guard") else None,
        # Which of the guard's results that is: once a report said it, no later one repeats it.
        "guard_time": (facts.get("guard") or {}).get("time"),
        "restart": restart,
        "would": would_change(write, [paths[name] for name in write], restart, wants.get("unit", "sglang.service"),
                              adopt["unit"] if adopt and go else None, go and not release_present),
        "daemon_reload": "unit" in write,
    }
    # A converged host's deploy has ended here: the report needs nothing more.
    decided["ended"] = outcome(decided, {"variant": wants.get("variant", "?"),
                                         "unit": wants.get("unit", "sglang.service")}) if converged else None
    return decided


def before(adopt, facts):
    """What the host ran before this deploy, as the report and the fleet summary say it (None:
    nothing of ours). A pending switch runs its variant, unverified."""
    pending = facts.get("pending")
    if pending and not adopt:
        return "%s (unverified)" % pending.get("variant")
    return (adopt or facts.get("deployed") or {}).get("variant")


def rollback_plan(facts, host, unit, unit_path, state_dir):
    """What playbooks/rollback.yml does, from sglang_facts' read: restore (True) unless the
    known-good service already serves - healthy, from its own unit, on the known-good's
    bytes. InputError when the host keeps no known-good service."""
    if facts.get("known_good_problem"):
        raise InputError("%s: the known-good service is %s. Nothing was restored and the running service was not "
                         "touched. Put the missing files back, or deploy a working variant (playbooks/deploy_nextn.yml) "
                         "to take a new known-good." % (host, facts["known_good_problem"]))
    if not facts.get("known_good"):
        raise InputError("%s: NO KNOWN-GOOD SERVICE on this host (%s/known-good/ is empty): nothing to roll back "
                         "to. Deploy a working variant, e.g. playbooks/deploy_nextn.yml." % (host, state_dir))
    record, kept = facts.get("known_good_record") or {}, facts.get("known_good_files") or {}
    if record.get("adopted"):
        seen = facts.get("adopted") or {}
        ours_running = (facts.get("unit") or {}).get("active_state") == "active"
        intact = all(kept.get(f.get("name")) == f.get("sha1") for f in seen.get("files") or ()) \
            and len(seen.get("files") or ()) == len(record["adopted"]["files"])
        serving = bool(seen.get("healthy")) and intact and not ours_running
    else:
        serving = bool(facts.get("healthy")) and (facts.get("checksums") or {}).get(unit_path) == kept.get(unit)
    # A pending switch is restored whatever it answers: it never passed its gates.
    return {"restore": not serving or bool(facts.get("pending")), "known_good": record.get("variant")}


def would_change(write, write_paths, restart, unit, adopt=None, build=False):
    """What a deploy would do, said in check mode (where it does nothing). A release it would
    build is not there to check the command line with: said, not checked."""
    steps = ["build the release (its parser then checks the command line)"] if build else []
    steps += ["keep %s as the known-good, stop and disable it" % adopt] if adopt else []
    steps += ["write " + ", ".join(write_paths)] if write else []
    if restart:
        steps.append("restart " + unit)
    return ("would " + " and ".join(steps) if steps else "would change nothing") + "; nothing was changed (check mode)"


BOOKKEEPING = ("ansible_facts", "invocation", "changed", "failed_when_result", "_ansible_no_log")


def task_result(result):
    """A module's result without Ansible's own keys, as a report keeps it."""
    return dict((k, v) for k, v in (result or {}).items() if k not in BOOKKEEPING)


def ran(result):
    """A registered task result, or None when the task did not run."""
    return None if not result or result.get("skipped") else result


def validation_failure(version, release, variant, validation):
    """The message of a command line the release's own parser rejected (its last line of
    stderr is SGLang's own error); None when it was accepted or not checked."""
    if not validation or validation.get("skipped") or not validation.get("rc"):
        return None
    lines = (validation.get("stderr") or "").strip().splitlines()
    return ("SGLang %s (%s) rejects the %s command line; the running service was not touched: %s"
            % (version, release.rstrip("/").rsplit("/", 1)[-1], variant, lines[-1] if lines else ""))


def _ended(name, cause, rollback, failure="", perf=None, gate=None, blameless=False):
    """`blameless`: a rollback that is not the configuration's fault (a re-run tries it again)."""
    return {"outcome": name, "cause": cause, "rollback": rollback, "failure": failure, "perf": perf, "gate": gate,
            "blameless": blameless}


def _decide(the_plan, run):
    """How a deploy that got this far ended: the first of a stop before the switch, a rejected
    command line, check mode, a failed gate, a slow variant, a failed task, nothing
    restarted, deployed."""
    gate, restarted = ran(run.get("gate")), bool(run.get("restarted"))
    perf_run = ran(run.get("perf"))
    perf = judge(run["perf_gate"], perf_run, run.get("baseline"), run["variant"]) if perf_run else None
    if the_plan.get("stop"):
        return _ended(NOT_RETRIED, the_plan["stop"]["cause"], False, the_plan["stop"]["message"])
    fired = run.get("guard_fired")
    if fired and not guard.acted_on_failure(fired):
        peer = group_failure(run.get("group"), run.get("group_said"), run["variant"], run.get("since"))
        if peer and guard.acted_for_the_group(fired):
            # A server group's guard restored this node because another node's new server failed
            # (its guard said so first, the controller still reading rank 0's gate): that node's
            # failure, as when the controller rolls the group back.
            return _ended(ROLLED_BACK, GROUP_NODE_FAILED, True, peer["text"], perf, gate, peer["blameless"])
        return _ended(ROLLED_BACK, GUARD_ACTED, False, "the host's guard restored the known-good before this deploy "
                      "confirmed the switch (%s); raise sglang_guard_margin above what the gates take"
                      % guard.said(fired), perf, gate)
    rejected = validation_failure(run["version"], run["release"], run["variant"], ran(run.get("validation")))
    if rejected:
        return _ended(FAILED, BAD_ARGUMENT, False, rejected)
    if run.get("check_mode"):
        return _ended(CHECK, None, False, the_plan["would"])
    link = run.get("link")
    if restarted and link and link.get("ok") is False:
        return _ended(ROLLED_BACK, LINK_LOST, True, link.get("msg") or "", perf, gate, blameless=True)
    peer = group_failure(run.get("group"), run.get("group_said"), run["variant"], run.get("since"))
    if gate and gate.get("state") != "healthy":
        if peer and peer["first"] and gate.get("cause") in WAITED_CAUSES:
            # This node only waited for the one that fell: the cause is that node's.
            return _ended(ROLLED_BACK, GROUP_NODE_FAILED, True, peer["text"], perf, gate, peer["blameless"])
        # (A gate of a server this deploy did not restart only re-checked it: its configuration,
        # often the known-good's own, is not to blame for what it found.)
        return _ended(ROLLED_BACK, gate.get("cause"), True, perf=perf, gate=gate, blameless=not restarted)
    if perf and perf["verdict"] in FAILING_VERDICTS:
        return _ended(ROLLED_BACK, perf["verdict"], True, perf=perf, gate=gate)
    if run.get("failure"):
        # A task failed on its own (not a gate): a service it restarted is not proven.
        return _ended(ROLLED_BACK if restarted else FAILED, TASK_FAILED if restarted else None, restarted,
                      run["failure"], perf, gate, blameless=True)
    if peer and restarted:
        return _ended(ROLLED_BACK, GROUP_NODE_FAILED, True, peer["text"], perf, gate, peer["blameless"])
    return _ended(DEPLOYED if restarted else UNCHANGED, None, False, perf=perf, gate=gate)


def node_word(group, ended, variant, at, link=None):
    """What a node of a server group tells the others once its own gates are judged (its
    sglang_node_outcome fact): how it ended, why, where its start stopped, and why its link to
    rank 0 is broken (sglang_link's error), if it is."""
    gate = ended.get("gate") or {}
    stall = gate.get("stall") or {}
    broken = link and link.get("ok") is False
    return {"host": group["nodes"][group["node_rank"]], "node_rank": group["node_rank"], "variant": variant,
            "at": at, "outcome": ended["outcome"], "rollback": ended["rollback"], "cause": ended["cause"],
            "failure": ended.get("failure") or "", "phase": stall.get("phase") or gate.get("phase"),
            "last_line": stall.get("last_line") or "",
            "link": (link.get("error") or "its address is not rank 0's own") if broken else None}


def _order(word):
    """Which node's word is the cause: a broken link first (the others' hangs follow from it),
    then a node that failed by itself or never joined, then one that only waited."""
    if word["cause"] == LINK_LOST:
        return 0
    if word["cause"] in WAITED_CAUSES and not _did_not_join(word):
        return 2
    return 1


def _fell(word):
    """A node's word says it did not pass (a stall is only a consequence when another fell first)."""
    return word["outcome"] not in GOOD_OUTCOMES


def _did_not_join(word):
    return word["cause"] == "stalled" and word.get("phase") == "parallel" and \
        "Init parallel begin." not in word["last_line"]


def _why(word, group):
    if word["cause"] == LINK_LOST:
        return "lost its link to rank 0 at %s (%s)" % (group["dist_init_addr"], word.get("link") or "?")
    if _did_not_join(word):
        return "did not join distributed init (its start stalled before it; last line: %s)" % (
            word["last_line"] or "none")
    return "%s (%s)" % (word["outcome"].replace("_", " "), word["cause"] or word["failure"] or "?")


def group_failure(group, said, variant, since):
    """Why every node of the server group must roll back, naming the node and its rank, or None.
    `said`: each node's word (node_word), in rank order; one missing, of another variant or
    older than this deploy's plan (`since`) did not say how its switch ended. A node whose link
    to rank 0 broke is named first, then one that fell by itself, then one that only waited.
    Returns {text, first, blameless}: `first` when that node failed first (its link, by itself,
    never joined, or went silent), not only waited as this one may have; `blameless` when its
    link broke (the configuration is not to blame: not remembered as rolled back)."""
    if not group:
        return None
    own, words, silent = group["node_rank"], [], []
    for rank, word in enumerate(said or []):
        if rank == own:
            continue
        if not word or word.get("variant") != variant or float(word.get("at") or 0) < float(since or 0):
            silent.append("%s (rank %d)" % (group["nodes"][rank], rank))
        elif _fell(word):
            words.append(word)
    if not words and not silent:
        return None
    ordered = sorted(words, key=lambda w: (_order(w), w["node_rank"]))
    named = ["%s (rank %d) %s" % (w["host"], w["node_rank"], _why(w, group)) for w in ordered[:1]]
    named += ["%s did not say how its switch ended (unreachable or interrupted)" % node for node in silent[:1]]
    first = bool(silent) or bool(ordered and _order(ordered[0]) < 2)
    return {"text": "server group %s: %s; the group rolls back as one" % (group["name"], "; ".join(named)),
            "first": first, "blameless": bool(ordered and ordered[0]["cause"] == LINK_LOST)}


def deployed_perf(ended, run):
    """The speed deployed.json records: this run's measurement of the new service, else (a
    host left as it was) the figure recorded before."""
    new = (ended["perf"] or {}).get("new")
    if new:
        return dict(new, measured_at=run.get("now"))
    return run.get("running_perf") if ended["outcome"] == UNCHANGED else None


def deployed_timeline(ended, run):
    """The start-up timeline deployed.json records (the next gate's stall limits): this
    run's start of the new service, else (a host left as it was) the one recorded before."""
    started = (run.get("gate") or {}).get("timeline")
    if started and ended["outcome"] == DEPLOYED:
        return started
    return run.get("running_timeline")


def outcome(the_plan, run):
    """The deploy's end, after the gates. `run`: check_mode, variant, version, release,
    validation (the checker's result), restarted (the restart ran), gate (sglang_health's
    result), perf_gate (the settings), perf (sglang_bench's result for the new service),
    baseline (settle_baseline's), failure (a failed task's message), fail_on_rollback,
    server_args and now (for the record). Returns outcome, cause, rollback, failure, perf
    (the gate's judged result), ok (the play goes on), remember (record this configuration
    as rolled back) and record (sglang_state's arguments for what the host now runs, or None)."""
    if the_plan.get("converged"):
        ended = _ended(UNCHANGED, None, False, gate=the_plan["gate"])
    else:
        ended = _decide(the_plan, run)
    tolerated = not run.get("fail_on_rollback", True) and ended["outcome"] in TOLERATED_OUTCOMES
    ended["ok"] = ended["outcome"] in GOOD_OUTCOMES or tolerated
    # The host serves, healthy, without a rollback: the new server passed the gates, or the deploy
    # stopped before it restarted anything. (Back into a gateway's rotation then; after a
    # rollback, once the known-good is healthy.)
    ended["serves"] = ended["outcome"] in (DEPLOYED, UNCHANGED) or (ended["outcome"] == FAILED and not ended["rollback"])
    # (A switch the guard undid because its deadline came first has nothing to roll back; one a
    # failed task undid, or a server group's whose link to rank 0 broke, did not fail by its
    # configuration: both not remembered.)
    ended["remember"] = ended["rollback"] and not ended.pop("blameless")
    ended["variant"], ended["unit"] = run.get("variant", "?"), run.get("unit", "sglang.service")
    # (A try - the tune's - is never what the host runs: the known-good comes back after it.)
    ended["record_deployed"] = ended["outcome"] in (DEPLOYED, UNCHANGED) and not the_plan.get("converged") \
        and not run.get("trial")
    ended["deployed_perf"] = deployed_perf(ended, run) if ended["record_deployed"] else None
    ended["record"] = host_record(the_plan, ended, run)
    return ended


def host_record(the_plan, ended, run):
    """What sglang_state records on the host once the deploy ended: what runs now (deployed),
    the configuration that was rolled back (so a re-run does not crash it again), or nothing."""
    if ended["rollback"]:
        rolled_back = {"time": run.get("now"), "variant": run.get("variant"), "cause": ended["cause"] or "?",
                       "release": run.get("release")}
        if not ended["remember"]:
            # Not the configuration's fault (a task failed, a group's link broke): on the record,
            # and a re-run tries it again. (Every rollback writes one, in sglang_outcome's decision.)
            rolled_back["retry"] = True
        return {"config_id": the_plan["config_id"], "rolled_back": rolled_back}
    if ended["record_deployed"]:
        deployed = {"variant": run.get("variant"), "release": run.get("release"),
                    "server_args": run.get("server_args"), "perf": ended["deployed_perf"],
                    "timeline": deployed_timeline(ended, run),
                    # What passed the gates, by name and by hash: a later snapshot checks the files against it.
                    "config_id": the_plan.get("config_id"), "config_sha1": the_plan.get("config_sha1")}
        if the_plan.get("adopted_from"):
            deployed["adopted_from"] = the_plan["adopted_from"]
        return {"deployed": deployed}
    return None
