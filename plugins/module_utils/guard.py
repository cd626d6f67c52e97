# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's own guard over a switch: while a switch is pending (pending.json, written by the
deploy before it restarts the service), a timer of the host's systemd fires at the gate's
deadline, and a unit of the host's runs at every boot. Either one restores the known-good
service, by the same restore the rollback uses (host_state.restore_known_good), and proves it
healthy, unless the deploy confirmed the switch first (it removes pending.json).

Why units on disk, not `systemd-run` transient ones: a transient timer is lost with a reboot,
and a host that reboots mid-switch would keep running the ungated variant. A boot is handled
at once, not at the deadline: the reboot ended the deploy's connection, so nobody can confirm
the switch any more, and the known-good is what the host should serve.

This file runs in two places: inside the sglang_guard module (which arms and disarms), and on
the host by the guard's units, as a script beside a copy of host_state.py (no Ansible there).
Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import json
import os
import subprocess
import time

try:
    from ansible_collections.inferops.sglang.plugins.module_utils import host_state
except ImportError:  # the guard's own run on the host: host_state.py is copied beside this file
    import host_state  # pylint: disable=import-error

try:
    from http.client import HTTPConnection
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by this collection
    raise

PENDING = "pending.json"
RESULT = "guard.json"
LOCK = "guard.lock"
LIB_DIR = "/usr/local/lib/inferops-sglang/guard"
# What the guard's run decides, by name.
IDLE, WAIT, RESTORE = "idle", "wait", "restore"


def guard_units(unit):
    """(timer, deadline service, boot service) names of the guard of `unit`."""
    stem = unit[:-len(".service")] if unit.endswith(".service") else unit
    return stem + "-guard.timer", stem + "-guard.service", stem + "-guard-boot.service"


def clock(epoch):
    """A time as the guard's messages and the timer say it (UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def short_clock(epoch):
    return time.strftime("%H:%M:%S", time.gmtime(epoch))


def decide(pending, reason, now):
    """What a run of the guard does: (IDLE | WAIT | RESTORE, why). `reason`: 'deadline' (the
    timer) or 'boot'. Pure: a table test covers it."""
    if not pending:
        return IDLE, "no switch is pending: the deploy confirmed it or rolled it back"
    if reason == "boot":
        return RESTORE, "the host restarted during %s's %s" % (pending.get("variant", "?").upper(),
                                                               pending.get("phase", "gate"))
    if now + 1 < float(pending.get("deadline") or 0):
        return WAIT, "the deadline %s is not reached yet" % clock(float(pending["deadline"]))
    return RESTORE, "the controller did not confirm %s's %s by its deadline %s" % (
        pending.get("variant", "?").upper(), pending.get("phase", "gate"), clock(float(pending.get("deadline") or 0)))


def fired_on(config_id, pending, result):
    """The guard's result when it already acted on the switch `config_id` (nothing pending any
    more), else None. `pending` and `result`: the state folder's PENDING and RESULT, or None."""
    if pending or not config_id:
        return None
    result = result or {}
    return result if (result.get("pending") or {}).get("config_id") == config_id else None


def said(result):
    """The sentence the next deploy, status.yml and rollback.yml repeat about a guard that acted."""
    if not result:
        return None
    if result.get("healthy"):
        return ("%s at %s; the host restored %s by itself, healthy in %.1f s"
                % (result["why"], short_clock(result["time"]), result.get("restored", "the known-good").upper(),
                   result.get("seconds", 0.0)))
    return ("%s at %s; the host tried to restore %s by itself and it is NOT healthy: %s"
            % (result["why"], short_clock(result["time"]), (result.get("restored") or "the known-good").upper(),
               result.get("error") or "see journalctl -u %s" % result.get("unit", "sglang.service")))


def timer_text(unit, deadline):
    timer, service, _boot = guard_units(unit)
    return ("# inferops.sglang: restores the known-good %s unless the deploy confirms its switch by this time\n"
            "[Unit]\nDescription=inferops.sglang guard of %s (deadline)\n\n"
            "[Timer]\nOnCalendar=%s\nAccuracySec=1s\nRemainAfterElapse=no\nUnit=%s\n"
            % (unit, unit, clock(deadline), service))


def service_text(unit, python, state_dir, reason):
    installed = "\n[Install]\nWantedBy=multi-user.target\n" if reason == "boot" else ""
    return ("# inferops.sglang: the guard of %s (%s)\n[Unit]\nDescription=inferops.sglang guard of %s (%s)\n"
            "After=network.target\n\n[Service]\nType=oneshot\nSyslogIdentifier=%s\n"
            "ExecStart=%s %s/sglang-guard --state-dir %s --reason %s\n%s"
            % (unit, reason, unit, reason, guard_units(unit)[1][:-len(".service")], python, LIB_DIR,
               state_dir, reason, installed))


class Locked(object):
    """The guard's lock (state_dir/guard.lock): one arm, disarm or run at a time."""

    def __init__(self, state_dir):
        self.path = os.path.join(state_dir, LOCK)
        self.fh = None

    def __enter__(self):
        self.fh = open(self.path, "a")
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def read_pending(state_dir):
    return host_state.read_json(os.path.join(state_dir, PENDING))


def read_result(state_dir):
    return host_state.read_json(os.path.join(state_dir, RESULT))


def write_json(path, record):
    host_state.put_file(path, host_state.dump_json(record).encode("utf-8"), 0o644, 0, 0)


# -- what runs on the host, from the guard's units ----------------------------------------------

def systemctl(*args):
    proc = subprocess.run(["systemctl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout.strip()


def unit_state(unit):
    _rc, out = systemctl("show", "-p", "ActiveState", "--value", unit)
    return out


def api_key(state_dir):
    """The known-good's API key (its secrets file, restored with it), for its health endpoint."""
    try:
        with open(os.path.join(state_dir, "secrets.yaml")) as fh:
            return json.load(fh).get("api-key") or ""
    except (OSError, ValueError, AttributeError):
        return ""


def healthy(url, key, timeout):
    """One probe of the health endpoint (plain http.client: no Ansible on the host's side)."""
    parts = urlsplit(url)
    headers = {"Authorization": "Bearer " + key} if key else {}
    conn = HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request("GET", parts.path or "/", headers=headers)
        return conn.getresponse().status == 200
    except (OSError, ValueError):
        return False
    finally:
        conn.close()


def wait_healthy(unit, url, key, timeout):
    """Poll the known-good's health until 200, its unit fails, or `timeout` seconds pass:
    (healthy, error)."""
    start, delay = time.monotonic(), 0.2
    while time.monotonic() - start < timeout:
        if healthy(url, key, 2.0):
            return True, None
        if unit_state(unit) == "failed":
            return False, "%s failed while it started (journalctl -u %s)" % (unit, unit)
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    return False, "%s did not answer 200 on %s within %d s" % (unit, url, timeout)


def known_good_url(record, pending):
    args = (record or {}).get("server_args") or {}
    host = args.get("host") or pending.get("host", "127.0.0.1")
    return "http://%s:%s/health" % (host, args.get("port") or pending.get("port", 30000))


def restore(state_dir, pending):
    """The rollback's restore, done by the host: the known-good's files and record back, the
    switched unit stopped, the known-good started and proven healthy. Returns the result."""
    unit = pending["unit"]
    problem = host_state.known_good_problem(state_dir, unit)
    folder = host_state.known_good_dir(state_dir)
    if problem or folder is None:
        # Nothing better to run than what runs: it is left as it is, and said.
        return {"restored": None, "healthy": False, "unit": unit,
                "error": "the known-good is %s; %s was left running" % (problem or "missing", unit)}
    record = host_state.read_json(os.path.join(folder, host_state.META))
    entries = host_state.restore_entries(pending["unit_dir"], unit, state_dir, int(pending["gid"]), record)
    targets = [(name, path, mode, uid, gid) for _kind, name, path, mode, uid, gid in entries]
    started = time.monotonic()
    record, _changed = host_state.restore_known_good(state_dir, targets)
    adopted = (record or {}).get("adopted") or {}
    systemctl("daemon-reload")
    systemctl("stop", unit)
    if adopted:
        systemctl("disable", unit)
    target = adopted.get("unit") or unit
    systemctl("enable", target)
    systemctl("start", target)
    ok, error = wait_healthy(target, known_good_url(record, pending), api_key(state_dir), pending.get("timeout", 600))
    name = adopted.get("unit") or (record or {}).get("variant") or "known-good"
    return {"restored": name, "healthy": ok, "error": error, "unit": target,
            "seconds": round(time.monotonic() - started, 1)}


def disarm_units(unit):
    timer, service, boot = guard_units(unit)
    systemctl("disable", "--now", timer)
    systemctl("disable", boot)


def run(state_dir, reason, now=None):
    """One run of the guard on the host (its units' ExecStart). Returns the line it says."""
    with Locked(state_dir):
        pending = read_pending(state_dir)
        action, why = decide(pending, reason, time.time() if now is None else now)
        if action != RESTORE:
            return "inferops.sglang guard (%s): %s; nothing to do" % (reason, why)
        result = restore(state_dir, pending)
        result.update({"time": time.time(), "why": why, "reason": reason, "pending": pending})
        write_json(os.path.join(state_dir, RESULT), result)
        os.unlink(os.path.join(state_dir, PENDING))
        disarm_units(pending["unit"])
        return "inferops.sglang guard (%s): %s" % (reason, said(result))


def main(argv):
    """The guard units' entry point (the launcher sglang_guard writes calls it): (exit code, line)."""
    state_dir, reason = "/etc/sglang", "deadline"
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag == "--state-dir":
            state_dir = args.pop(0)
        elif flag == "--reason":
            reason = args.pop(0)
    line = run(state_dir, reason)
    return (1 if "NOT healthy" in line else 0), line
