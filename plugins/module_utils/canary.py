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


def phases(play_hosts, classes, enabled):
    """Where each host deploys: {host: {group, canary, class_canary}}. `classes` are the play
    hosts' classes, in the same order (empty: no class). With the canary on, the first host of
    each class in the play's order (the inventory's, after --limit) is its class's canary, so
    the same inventory always picks the same host; every other host deploys with the rest and
    knows its class's canary (`class_canary`, None with the canary off)."""
    first = {}
    for host, host_class in zip(play_hosts, classes):
        first.setdefault(host_class or UNCLASSED, host)
    said = {}
    for host, host_class in zip(play_hosts, classes):
        canary = first[host_class or UNCLASSED] if enabled else None
        said[host] = {"group": CANARIES if canary == host else REST, "canary": canary == host, "class_canary": canary}
    return said


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
