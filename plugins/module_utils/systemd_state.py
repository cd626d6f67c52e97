# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a systemd unit's state from `systemctl show` and judge one invocation of it.

Pure Python (no Ansible imports). The judgement is what `systemctl is-active` cannot
give: a Type=simple unit is "active" the moment its process starts, so a server that
dies two seconds later, or that systemd is quietly restarting, must be caught from the
unit's own counters (InvocationID, NRestarts) and states.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SHOW_PROPERTIES = (
    "Id", "LoadState", "ActiveState", "SubState", "Result", "ExecMainCode", "ExecMainStatus",
    "ExecMainPID", "MainPID", "InvocationID", "NRestarts", "ExecMainStartTimestampMonotonic",
    "ExecStart", "Restart",
)

# waitid(2) si_code values systemd stores in ExecMainCode.
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3

STARTING, RUNNING, FAILED = "starting", "running", "failed"


def show_command(unit, systemctl="systemctl"):
    return [systemctl, "show", unit, "--property=" + ",".join(SHOW_PROPERTIES)]


def parse_show(text):
    """`systemctl show` output (KEY=VALUE lines) as a dict; values may contain '='."""
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    return props


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def unit_status(props):
    """The properties the health gate reports, with normalised names and types."""
    code = _int(props.get("ExecMainCode"))
    status = _int(props.get("ExecMainStatus"))
    return {
        "load_state": props.get("LoadState", ""),
        "active_state": props.get("ActiveState", ""),
        "sub_state": props.get("SubState", ""),
        "result": props.get("Result", ""),
        "exit_status": status,
        "exit_code": {CLD_EXITED: "exited", CLD_KILLED: "killed", CLD_DUMPED: "dumped"}.get(code, ""),
        "signal": status if code in (CLD_KILLED, CLD_DUMPED) else None,
        "main_pid": _int(props.get("MainPID")),
        "exec_main_pid": _int(props.get("ExecMainPID")),
        "invocation_id": props.get("InvocationID", ""),
        "n_restarts": _int(props.get("NRestarts")),
        "exec_start": props.get("ExecStart", ""),
        "restart": props.get("Restart", ""),
        "started_monotonic_us": _int(props.get("ExecMainStartTimestampMonotonic")),
    }


def judge(status, since_invocation, baseline_restarts):
    """(verdict, reason) for the invocation `since_invocation` of a unit.

    FAILED as soon as the state cannot become healthy without a new start: the unit is
    failed, inactive/dead, auto-restarting, or already on another invocation or restart.
    """
    if status["load_state"] and status["load_state"] != "loaded":
        return FAILED, "unit is %s" % status["load_state"]
    if since_invocation and status["invocation_id"] and status["invocation_id"] != since_invocation:
        return FAILED, "unit was restarted (invocation %s replaced %s)" % (
            status["invocation_id"], since_invocation)
    if status["n_restarts"] > baseline_restarts:
        return FAILED, "systemd restarted the unit (NRestarts %d, was %d)" % (
            status["n_restarts"], baseline_restarts)
    if status["sub_state"] == "auto-restart":
        return FAILED, "unit is waiting to be restarted after a failure (auto-restart)"
    active = status["active_state"]
    if active == "failed":
        return FAILED, "unit failed (result %s)" % (status["result"] or "unknown")
    if active in ("inactive", "deactivating"):
        return FAILED, "unit is %s/%s" % (active, status["sub_state"])
    if active == "active":
        return RUNNING, "unit is active/%s" % status["sub_state"]
    return STARTING, "unit is %s/%s" % (active, status["sub_state"])


def exec_start_argv(exec_start):
    """argv of the first command in systemd's ExecStart property
    (`{ path=/x ; argv[]=/x --a 1 ; ignore_errors=no ; ... }`)."""
    marker = "argv[]="
    start = exec_start.find(marker)
    if start < 0:
        return []
    rest = exec_start[start + len(marker):]
    end = rest.find(" ; ")
    return (rest if end < 0 else rest[:end]).split()
