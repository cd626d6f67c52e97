# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A canary per host class (private to this collection; pure, no Ansible imports).

With the canary on, the first host of each class in the play's order deploys first; the
rest of a class deploy only when that host kept the variant. `phases()` sorts the hosts into
their groups; `follow()` says what a host of the rest deploys - the variant its canary kept -
or that it is skipped, and why (`verdict()`); `rung()` whether the next variant of a canary's
ladder deploys. The sglang_canary action is how a play asks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CANARIES = "sglang_deploy_canary"
REST = "sglang_deploy_rest"
UNCLASSED = "unclassified"
SKIPPED = "skipped"
# A canary that ended so lets the rest of its class go on: it runs (or already ran) the
# variant, healthy, or it only showed what it would do.
GOES_ON = ("deployed", "unchanged", "check")


def phases(play_hosts, classes, enabled, earlier=None, server_groups=None):
    """Where each host deploys: {host: {group, canary, class_canary, earlier}}. `classes` are
    the play hosts' classes, in the same order (empty: no class). With the canary on, the first
    host of each class in the play's order (the inventory's, after --limit) is its class's
    canary, so the same inventory always picks the same host; every other host deploys with
    the rest and knows its class's canary (`class_canary`, None with the canary off).

    `earlier`: the rows of a job that deployed the canaries before this one ({host: row}, the
    artifacts' sglang_outcomes; None: no such job). Then no host of this run is a canary: a
    class's hosts all follow the canary that job deployed (`earlier`: its report, for
    verdict()), and a class that job had no canary for follows none: its hosts are skipped.
    So job slices, which each see only their own hosts, still move a class only after its one
    canary kept the variant.

    `server_groups`: the hosts' server groups, in the same order (empty: a server on one host).
    A node of a server group is never a canary (a canary is one host, and a group changes as
    one): it deploys with the rest, after its class's canary, and a class of groups alone has
    no canary."""
    if earlier is not None:
        return _after_earlier(play_hosts, classes, earlier)
    groups = list(server_groups or [])
    alone = [not (groups[i] if i < len(groups) else "") for i in range(len(play_hosts))]
    first = {}
    for host, host_class, single in zip(play_hosts, classes, alone):
        if single:
            first.setdefault(host_class or UNCLASSED, host)
    said = {}
    for host, host_class in zip(play_hosts, classes):
        canary = first.get(host_class or UNCLASSED) if enabled else None
        said[host] = {"group": CANARIES if canary == host else REST, "canary": canary == host, "class_canary": canary,
                      "earlier": None}
    return said


# The deploy a report of an earlier job's canary stands for (verdict() reads it as this run's).
EARLIER = "an earlier job"


def earlier_report(row):
    """An earlier job's row of a canary (fleet_summary's row: outcome, cause, variant) as the
    canary's report verdict() and the rest read: whether it kept a variant, and which."""
    return {"outcome": row.get("outcome"), "cause": row.get("cause"), "variant": row.get("variant"),
            "ok": row.get("outcome") in GOES_ON, "deploy": EARLIER}


def _after_earlier(play_hosts, classes, earlier):
    # A class's canary in that job: its one host that was not skipped (the rest of a class
    # whose canary kept nothing were skipped), else any of its hosts.
    canaries = {}
    for host in sorted(earlier, key=lambda h: ((earlier[h] or {}).get("outcome") == SKIPPED, h)):
        row = earlier[host] or {}
        canaries.setdefault(row.get("class") or UNCLASSED, (host, row))
    said = {}
    for host, host_class in zip(play_hosts, classes):
        canary, row = canaries.get(host_class or UNCLASSED, (None, None))
        report = earlier_report(row) if row is not None else {"outcome": None, "cause": "no canary of class %s in the "
                                                              "earlier job" % (host_class or UNCLASSED), "ok": False,
                                                              "deploy": EARLIER}
        # (Named as that job's: the canary itself, in a slice, deploys with the rest - converging,
        # or skipped when it kept nothing - not as this run's canary.)
        named = "%s, in %s" % (canary, EARLIER) if canary else NO_CANARY
        said[host] = {"group": REST, "canary": False, "class_canary": named, "earlier": report}
    return said


# The class canary of a host whose class had none in the earlier job (verdict() skips it).
NO_CANARY = "(none)"


def _first_line(text, limit=160):
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "no message"
    return line if len(line) <= limit else line[:limit - 3] + "..."


def verdict(canary, report, failure=None):
    """Whether a host of the rest of a class goes on. `canary` is its class's canary (None:
    no canary ran for the class), `report` what the canary's report said (its
    ansible_facts.sglang_deploy; None when it wrote none), `failure` the message of a task
    that failed the canary before its report. Returns go, cause and msg."""
    if not canary:
        return {"go": True, "cause": None, "msg": "no class canary ran"}
    report = report or {}
    if canary == NO_CANARY:
        cause = report.get("cause") or "no class canary"
        return {"go": False, "cause": cause, "msg": "%s: %s: deploy the class's canary first; this host was not touched"
                % (SKIPPED, cause)}
    outcome = report.get("outcome")
    if outcome in GOES_ON and not failure:
        return {"go": True, "cause": None, "msg": "class canary %s %s" % (canary, outcome)}
    if outcome == "rolled_back":
        cause = "class canary rolled back (%s)" % (report.get("cause") or "?")
    elif outcome == "not_retried":
        cause = "class canary not retried: its configuration rolled back before (%s)" % (report.get("cause") or "?")
    elif outcome:
        cause = "class canary %s (%s)" % (outcome.replace("_", " "), report.get("cause") or _first_line(failure))
    else:
        cause = "class canary failed (%s)" % _first_line(failure)
    return {"go": False, "cause": cause, "msg": "%s: %s (the canary: %s); this host was not touched"
            % (SKIPPED, cause, canary)}


# The outcomes of a ladder's rung after which its next variant deploys: it failed in this deploy.
NEXT_RUNG = ("rolled_back", "not_retried")
# Why a host of the rest is skipped when its canary wrote no report of this deploy.
NO_REPORT = "it ended before its report (unreachable, or interrupted)"


def of_this_deploy(report, deploy_id):
    """The report was written by this deploy (or stands for an earlier job's canary, earlier_report):
    an earlier deploy's report in the same run says nothing about this one."""
    return bool(report) and report.get("deploy") in (deploy_id, EARLIER)


def follow(host, class_canary, report, deploy_id, variant):
    """What a host of the rest of its class deploys: {go, variant, cause, msg}. `class_canary` is
    phases()' (empty, or the host itself: no canary decides), `report` the canary's (its
    sglang_deploy fact of this run, or an earlier job's row as earlier_report made it), `variant`
    what the host deploys unless its canary kept another (its ladder's first). The canary's
    outcome decides, never its `ok` (a canary run with sglang_fail_on_rollback false reports ok
    on a rollback). `msg` names the host: it is the skipped host's report."""
    kept = None
    if not class_canary or class_canary == host:
        said = verdict(None, None)
    elif of_this_deploy(report, deploy_id):
        said = verdict(class_canary, report)
        kept = report.get("variant") if said["go"] else None
    else:
        said = verdict(class_canary, None, NO_REPORT)
    return dict(said, variant=kept or variant, msg="%s: %s" % (host, said["msg"]))


def rung_text(report):
    """A failed rung as the next one's report says it: `ddtree rolled back (kv_pool_oom)`."""
    return "%s %s (%s)" % (report.get("variant"), (report.get("outcome") or "").replace("_", " "), report.get("cause"))


def rung(index, report, deploy_id):
    """Whether rung `index` of a canary's variant ladder deploys: {go, preceded_by, msg}. The
    first always; a later one only when the host's own report of this deploy (its sglang_deploy
    fact) says the rung before failed (NEXT_RUNG). `preceded_by` is what the rungs before said,
    in order, for this rung's report (`ladder`): each report carries its own, so the chain needs
    nothing but the last report."""
    if index == 0:
        return {"go": True, "preceded_by": "", "msg": "the ladder's first variant"}
    report = report or {}
    # (Not of_this_deploy: an earlier job's canary row never stands for the rung before on this host.)
    if report.get("deploy") != deploy_id:
        return {"go": False, "preceded_by": "", "msg": "no report of this deploy from the rung before"}
    if report.get("outcome") not in NEXT_RUNG:
        return {"go": False, "preceded_by": report.get("ladder") or "",
                "msg": "%s %s: the ladder ends there" % (report.get("variant"), report.get("outcome"))}
    said = [text for text in (report.get("ladder"), rung_text(report)) if text]
    return {"go": True, "preceded_by": "; ".join(said), "msg": "%s; the next variant deploys" % rung_text(report)}
