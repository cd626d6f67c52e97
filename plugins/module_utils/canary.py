# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A canary per host class (private to this collection; pure, no Ansible imports).

With the canary on, the first host of each class in the play's order deploys first; the
rest of a class deploy only when that host kept the variant. `phases()` sorts the hosts into
their groups, `verdict()` says whether a host of the rest goes on or is skipped, and why."""

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
