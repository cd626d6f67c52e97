# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary's rows, from the per-host reports (private to this collection; pure).

The fleet_summary callback prints one line per host at the end of the play and writes the
same rows as JSON beside the reports; `row()` and `lines()` are all it decides."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils.watch import RESTORED

# The outcomes after which the host runs the deploy's variant.
RUNS_VARIANT = ("deployed", "unchanged")
COLUMNS = ("host", "class", "variant", "outcome", "cause", "speed", "time")
NONE = "-"


def after(report):
    """What the host serves once the deploy ended: the variant when it was kept, the
    known-good after a rollback, else what it ran before."""
    if report.get("outcome") in RUNS_VARIANT:
        return report.get("variant")
    # (The known-good is named by its algorithm, NEXTN; variants are named in lower case.)
    known_good = report.get("known_good")
    return known_good.lower() if known_good else report.get("before")


def row(report):
    """One host's summary, as data (the JSON copy) from its report."""
    perf, end = report.get("perf") or {}, watch_end(report)
    data = {"host": report.get("host"), "class": report.get("class") or None,
            "before": report.get("before"), "after": after(report), "variant": report.get("variant"),
            "outcome": report.get("outcome"), "ratio": perf.get("ratio"),
            "cause": cause(report, end),
            "seconds": report.get("seconds")}
    if report.get("group"):   # a node of a server group
        data.update(group=report["group"].get("name"), node_rank=report["group"].get("node_rank"))
    if end:
        data["watch"] = end
        if end["outcome"] == RESTORED:
            data["after"] = end["restored"] or data["after"]
    return data


def this_deploys_watch(watched, config_id):
    """How the host's watch of this deploy's switch (`config_id`) ended, from what sglang_guard's
    state=watched returned (its `watch`), or None: none was waited for, or the wait was an earlier
    deploy's of the same run (a ladder's rung that failed before its own wait keeps the last)."""
    if not watched or not config_id or watched.get("config_id") != config_id:
        return None
    return watched


def watch_line(watched, watching_until):
    """The report's line about the host's watch: how it ended, when the play waited for it, else
    until when it runs (None when no watch runs)."""
    if watched and watched.get("said"):
        return watched["said"]
    return "the host watches it until " + watching_until if watching_until else None


def watch_fails_the_host(watched, fail_on_rollback):
    """A watch that restored the known-good fails the host as a rollback does (unless the play
    said not to fail on a rollback)."""
    return bool(watched) and watched.get("outcome") == RESTORED and fail_on_rollback


def watch_end(report):
    """How the host's watch of the deployed server ended, when the play waited for it
    (sglang_watch_wait): {outcome, cause, restored}, or None while it runs or when none ran."""
    watch = report.get("watch") or {}
    if not watch.get("outcome"):
        return None
    return {"outcome": watch["outcome"], "cause": (watch.get("breach") or {}).get("cause"),
            "restored": watch.get("restored")}


# The key of the job's artifacts (set_stats data, which ansible-runner and AWX keep) that maps
# each host to its fleet-summary row.
ARTIFACT = "sglang_outcomes"


def artifact(data):
    """What a task returns as `ansible_stats` (as ansible.builtin.set_stats does, aggregated over
    the run's hosts) so that a job's artifacts say how each host ended: {ARTIFACT: {host: row}}.
    A later row of the same host (a tune's after its tries) replaces the earlier one."""
    return {"data": {ARTIFACT: {data["host"]: data}}, "per_host": False, "aggregate": True}


def rollback_row(host, host_class, rollback, restored, said):
    """playbooks/rollback.yml's row for the job's artifacts: `left_alone` (the known-good already
    served, healthy), `restored`, or `failed` (the known-good is not healthy: the line that says
    so is the cause). `rollback` and `restored` as for diagnosis.rollback_result, `said` its
    result."""
    known_good = (rollback.get("known_good") or "").lower() or None
    outcome = "left_alone" if not restored else ("restored" if said["ok"] else "failed")
    last = (said.get("msg") or "").strip().splitlines()
    return {"host": host, "class": host_class or None, "before": None, "after": known_good if said["ok"] else None,
            "variant": known_good, "outcome": outcome, "cause": None if said["ok"] else (last[-1][:120] if last else None),
            "ratio": None, "seconds": (rollback.get("gate") or {}).get("elapsed")}


def cause(report, end):
    """The report's cause; a canary's later variant also says why the ladder came down to it, and
    a watch that restored the known-good (`end`, watch_end's) what it found."""
    said = [report["cause"]] if report.get("cause") else []
    if report.get("ladder"):
        said.append("after " + report["ladder"])
    if end and end["outcome"] == RESTORED:
        said.append("the watch restored %s: %s" % (end["restored"] or "the known-good", end["cause"]))
    return "; ".join(said) or None


def failed_row(host, message):
    """A host that failed before its deploy wrote a report (preflight, build, unreachable)."""
    first = (message or "").strip().splitlines()
    return {"host": host, "class": None, "before": None, "after": None, "variant": None,
            "outcome": "failed", "cause": first[0][:120] if first else "no message", "ratio": None, "seconds": None}


def unfinished_row(data, message, unreachable):
    """A host whose deploy ended (unreachable, or failed) while its switch was under way: its
    last report says the switch was pending, so what it runs now is not known."""
    first = (message or "").strip().splitlines()
    return dict(data, outcome="unreachable" if unreachable else "failed",
                cause="%s; %s" % (first[0][:80] if first else "no message", data.get("cause") or "state unknown"))


def _cells(data):
    ratio, seconds = data.get("ratio"), data.get("seconds")
    return (data["host"] or NONE, data.get("class") or NONE,
            "%s -> %s" % (data.get("before") or NONE, data.get("after") or NONE),
            data.get("outcome") or NONE, data.get("cause") or NONE,
            NONE if ratio is None else "%.2fx" % ratio, NONE if seconds is None else "%.0f s" % seconds)


def by_server(rows):
    """One row per server: a server group's nodes as one, named `group (rank 0, rank 1, ...)`,
    with rank 0's variant, speed and cause, the slowest node's time, and the nodes' outcomes
    when they differ (`deployed/rolled_back`)."""
    servers, groups = [], {}
    for data in rows:
        if data.get("group"):
            groups.setdefault(data["group"], []).append(data)
        else:
            servers.append(data)
    for name, nodes in groups.items():
        nodes = sorted(nodes, key=lambda data: (data.get("node_rank") is None, data.get("node_rank") or 0))
        outcomes = dict.fromkeys(data.get("outcome") for data in nodes)   # distinct, in rank order
        seconds = [data["seconds"] for data in nodes if data.get("seconds") is not None]
        causes = [data["cause"] for data in nodes if data.get("cause")]
        servers.append(dict(nodes[0], host="%s (%s)" % (name, ", ".join(data["host"] or NONE for data in nodes)),
                            outcome="/".join(str(o) for o in outcomes), cause=nodes[0].get("cause") or
                            (causes[0] if causes else None), seconds=max(seconds) if seconds else None))
    return servers


def lines(rows):
    """The table the callback prints: a header and one aligned line per server (a server
    group's nodes on one), by name."""
    table = [COLUMNS] + [_cells(data) for data in sorted(by_server(rows), key=lambda data: data["host"] or "")]
    widths = [max(len(cells[column]) for cells in table) for column in range(len(COLUMNS))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip() for cells in table]
