# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's own guard over a switch. The host, not the controller, decides how a switch ends
when nobody else does.

While a switch is pending (pending.json, written by the deploy before the first file of the
switch changes), three units of the host's systemd hold it:

- the follower (`<stem>-guard-follow.service`, started by the arm) watches the switched unit
  (systemd's own state: failed, inactive, auto-restarting, restarted again) and the verdict of
  the deploy's health gate, which runs on the host too (verdict.json, written by sglang_health
  the moment it reaches one). A new server that fails is restored within the grace (at most
  15 s) unless a controller took the failure over first (the rollback re-arms the guard with
  phase `rollback`): the controller's handler rolls back when it is there, the host when not;
- the timer fires at the deadline (the gate's own, plus a margin): a switch that nobody
  confirmed is restored then. A healthy new server that nobody confirms is safe meanwhile;
- the boot unit: a host that boots with a switch pending restores at once (the reboot ended
  the deploy, nothing can confirm the switch any more).

Each of them restores the same way as the rollback (tasks/restore.yml): the known-good's files
back, the switched unit stopped, its processes and GPU memory gone, start-limit state cleared,
the known-good started, proven healthy and settled; retried with a backoff; and the deploy lock
of the controller that went away released. What it did goes to the journal and guard.json.

Why units on disk, not `systemd-run` transient ones: a transient unit is lost with a reboot,
and a host that reboots mid-switch would keep running the ungated variant.

This file runs in two places: inside the sglang_guard module (which arms and disarms), and on
the host by the guard's units, beside a copy of the pure module_utils it imports (no Ansible
there). Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

from ansible_collections.inferops.sglang.plugins.module_utils import gateway as gateway_rules, guard_link, host_state
from ansible_collections.inferops.sglang.plugins.module_utils import watch as watching
from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import Classifier
from ansible_collections.inferops.sglang.plugins.module_utils.adoption import display_name
from ansible_collections.inferops.sglang.plugins.module_utils.gpu_leftovers import describe_leftovers, leftovers
from ansible_collections.inferops.sglang.plugins.module_utils.journal import (
    classify_stream, journal_command, stream_invocation,
)
from ansible_collections.inferops.sglang.plugins.module_utils.host_processes import (
    process_title, process_unit, unit_processes,
)
from ansible_collections.inferops.sglang.plugins.module_utils.nvidia_smi import NvidiaSmiError, read_gpus
from ansible_collections.inferops.sglang.plugins.module_utils.systemd_state import (
    FAILED, judge, parse_show, show_command, unit_status,
)

try:
    from http.client import HTTPConnection, HTTPException, HTTPSConnection
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by this collection
    raise

PENDING = "pending.json"
RESULT = "guard.json"
LOCK = "guard.lock"
# The health gate's verdict on the host (sglang_health's verdict_path), for the follower.
VERDICT = "verdict.json"
LIB_DIR = "/usr/local/lib/inferops-sglang/guard"
# The module_utils the guard's program imports on the host (pure, standard library only).
PROGRAM_MODULES = ("guard.py", "guard_link.py", "host_state.py", "systemd_state.py", "host_processes.py", "nvidia_smi.py",
                   "gpu_leftovers.py", "adoption.py", "journal.py", "sglang_failures.py", "watch.py", "gateway.py")
# What the guard's run decides, by name. CONFIRM: a server group's node whose rank 0 ended the
# switch without a restore, while this node serves with the group (rank 0's confirmation is the group's).
IDLE, WAIT, RESTORE, CONFIRM = "idle", "wait", "restore", "confirm"
# Why it runs: its timer (the deadline), a boot, or the follower (a failure it saw). A restore the
# controller handed over (phase RESTORE: its rollback) is ROLLBACK, whichever of them runs it.
# GROUP: another node of the server group restores (guard_link), so this one does.
DEADLINE, BOOT, FOLLOW, ROLLBACK, GROUP = "deadline", "boot", "follow", "rollback", "group"
# The watch after the gates (watch.json, written as the deploy confirms the switch): the follower
# goes on probing the confirmed server and restores the known-good on a breach (module_utils/watch).
WATCH, WATCHED = "watch.json", "watch"
# A server group's node other than rank 0 holds its confirmation's watch options in its switch's
# record (sglang_guard hold) until rank 0's guard says the group's switch is confirmed.
HELD_WATCH = "held_watch"
CLEAN, RESTORED, SUPERSEDED = watching.CLEAN, watching.RESTORED, watching.SUPERSEDED
# The phases of a switch a new server's failure is judged in: its gate, and a server group's node
# the controller confirmed (HELD: until rank 0, confirmed last, confirms the group).
GATE, HELD = "gate", "held"
# Seconds past its deadline a linked node waits for rank 0's guard to decide for the group.
HUB_LATE = 60.0
# The phase of a switch whose rollback the controller handed to the host: restore at once (the
# follower; the timer fires this many seconds later at most, a backstop).
RESTORE_PHASE, RESTORE_BACKSTOP = "restore", 5.0
# Seconds a failure waits for a controller to take it over, when the arm names none; the most allowed.
GRACE, GRACE_MAX = 15.0, 15.0
# A known-good that does not come up is started again after these pauses (seconds), then given up, and said.
RETRY_BACKOFF = (5.0, 20.0)
# The follower's look at the unit and the verdict (seconds).
FOLLOW_POLL = 0.5
# What guard.json says from the moment a run decides to restore until it ended.
UNFINISHED = "the guard's run did not finish"


def guard_stem(unit):
    """The name the guard's units of `unit` begin with (sglang.service: sglang-guard)."""
    return (unit[:-len(".service")] if unit.endswith(".service") else unit) + "-guard"


def guard_units(unit):
    """(timer, deadline service, boot service) names of the guard of `unit`."""
    stem = guard_stem(unit)
    return stem + ".timer", stem + ".service", stem + "-boot.service"


def follower_unit(unit):
    return guard_stem(unit) + "-follow.service"


def clock(epoch):
    """A time as the guard's messages and the timer say it (UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def short_clock(epoch):
    return time.strftime("%H:%M:%S", time.gmtime(epoch))


def observe(pending, status, verdict, first_new):
    """What failed in the pending switch, in one sentence, or None. Pure.

    `status`: the switched unit's systemd_state.unit_status now. `verdict`: the health gate's
    (VERDICT), or None. `first_new`: (invocation id, NRestarts) of the first start seen after
    the arm, or None while the unit still runs the invocation it ran at the arm (the restart
    has not happened yet: the old server is not judged)."""
    if verdict and float(verdict.get("time") or 0) >= float(pending.get("armed_at") or 0) \
            and verdict.get("state") in ("failed", "timeout"):
        return "its health gate said %s%s: %s" % (
            verdict["state"], " (cause %s)" % verdict["cause"] if verdict.get("cause") else "", verdict.get("reason"))
    if first_new is None:
        return None
    verdict_now, reason = judge(status, first_new[0], first_new[1])
    return "%s: %s" % (pending.get("unit", "the unit"), reason) if verdict_now == FAILED else None


def decide(pending, reason, now, failing=None, spoke=None):
    """What a run of the guard does: (IDLE | WAIT | RESTORE | CONFIRM, why). `reason`: DEADLINE
    (the timer), BOOT, FOLLOW (the follower) or GROUP (another node of the server group restores).
    `failing`: {why, since} once the follower saw the switch fail (observe), or what the group
    said. `spoke`: for a server group's node other than rank 0, {linked, since, serving}: its
    link to rank 0's guard (guard_link), since when it is lost, and whether this node serves.
    Pure: a table test covers it."""
    if not pending:
        return IDLE, "no switch is pending: the deploy confirmed it or rolled it back"
    variant, phase = pending.get("variant", "?").upper(), pending.get("phase", GATE)
    if phase == RESTORE_PHASE:
        return RESTORE, "the controller rolled %s back%s and handed its restore to the host" % (
            variant, " (%s)" % pending["cause"] if pending.get("cause") else "")
    if reason == BOOT:
        return RESTORE, "the host restarted during %s's %s" % (variant, phase)
    if reason == GROUP:
        return RESTORE, "%s; the server group restores as one" % failing["why"]
    deadline = float(pending.get("deadline") or 0)
    if now + 1 >= deadline:
        if spoke is not None:
            return spoke_at_deadline(variant, phase, deadline, spoke, now)
        return RESTORE, "the controller did not confirm %s's %s by its deadline %s" % (variant, phase, clock(deadline))
    if phase not in (GATE, HELD) or not failing:
        # (A rollback under way is the controller's: its own deadline stands.)
        return WAIT, "the deadline %s is not reached yet" % clock(deadline)
    grace = min(float(pending.get("grace") or GRACE), GRACE_MAX)
    if now - float(failing["since"]) >= grace:
        return RESTORE, "%s failed (%s) at %s, and no controller took it over within %.0f s" % (
            variant, failing["why"], short_clock(failing["since"]), grace)
    return WAIT, "%s failed (%s); a controller may take it over until %s" % (
        variant, failing["why"], short_clock(float(failing["since"]) + grace))


def spoke_at_deadline(variant, phase, deadline, spoke, now):
    """A server group's node other than rank 0, past its deadline. Linked, it leaves the decision
    to rank 0's guard (the group's, confirmed last), which tells it. Alone, it judges itself once a
    failure that rank 0's restore caused had time to show (twice the grace): a node that still
    serves with the group runs what rank 0 runs, so rank 0's switch ended without a restore."""
    if spoke.get("linked"):
        if now < deadline + HUB_LATE:
            return WAIT, "rank 0's guard decides for the server group at its deadline"
        return RESTORE, "rank 0's guard did not decide for the server group by %s" % clock(deadline + HUB_LATE)
    judge_at = max(deadline, float(spoke.get("since") or 0)) + 2 * GRACE_MAX
    if now < judge_at:
        return WAIT, "rank 0's guard is out of reach; this node judges alone at %s" % short_clock(judge_at)
    if spoke.get("serving") and phase in (GATE, HELD):
        return CONFIRM, ("rank 0's guard ended the switch without a restore, and this node serves %s with the group: "
                         "the group's switch holds" % variant)
    return RESTORE, "rank 0's guard is out of reach, and %s" % (
        "the controller's rollback did not end" if phase not in (GATE, HELD) else "this node does not serve %s" % variant)


def ended_on(config_id, pending, result):
    """The guard's result when the switch `config_id` ended by its run (nothing pending any more),
    whether on its own or as the controller's handed-over restore, else None. `pending` and
    `result`: the state folder's PENDING and RESULT, or None."""
    if pending or not config_id:
        return None
    result = result or {}
    return result if (result.get("pending") or {}).get("config_id") == config_id else None


def restoring(config_id, pending, result):
    """The pending switch `config_id` when a guard run is restoring it now (its result, written as
    it began, not yet how it ended), else None. Read without the lock, which that run holds."""
    if not pending or pending.get("config_id") != config_id or not result:
        return None
    began = (result.get("pending") or {}).get("armed_at")
    mine = (result.get("pending") or {}).get("config_id") == config_id and began == pending.get("armed_at")
    return pending if mine and result.get("error") == UNFINISHED else None


def fired_on(config_id, pending, result):
    """The guard's result when it acted on the switch `config_id` on its own (not a restore the
    controller handed it), else None."""
    ended = ended_on(config_id, pending, result)
    return ended if ended and ended.get("reason") != ROLLBACK else None


def as_rollback(result):
    """The guard's restore in the shape of the rollback's result (diagnosis.rollback_result and
    deploy_diagnosis): the known-good's gate, its name, and what the failed unit left behind."""
    healthy = bool(result.get("healthy"))
    gate = {"state": "healthy" if healthy else "failed", "elapsed": result.get("seconds", 0.0),
            "unit": result.get("unit")}
    if not healthy:
        # (The known-good's own journal names the cause when it started and failed, as the gate's would.)
        named = result.get("diagnosis") or {}
        gate.update(cause=named.get("cause") or "restore_failed", hint=named.get("hint") or result.get("error"))
        gate.update((key, named[key]) for key in ("evidence", "phase", "rank") if named.get(key))
    waited = float(result.get("leftovers_waited") or 0.0)
    leftovers = {"released": not result.get("leftovers"), "msg": result.get("leftovers"), "waited": waited >= 0.5,
                 "elapsed": waited}
    rollback = {"restored": True, "gate": gate, "known_good": result.get("known_good"), "leftovers": leftovers}
    # (Said as sglang_gateway says it: the report reads the rejoin's msg, whoever made it.)
    if result.get("rejoined"):
        rollback["rejoined"] = {"changed": True, "msg": "%s: back in rotation (put back by the host's guard)"
                                % result["rejoined"]}
    elif result.get("rejoin_error"):
        rollback["rejoined"] = {"changed": False, "msg": "the host's guard could not put it back: %s"
                                % result["rejoin_error"]}
    return rollback


def known_good_name(state_dir):
    """The known-good's name as the rollback says it (adoption.display_name), or None when none exists."""
    folder = host_state.known_good_dir(state_dir)
    record = host_state.read_json(os.path.join(folder, host_state.META)) if folder else None
    return display_name(record) if isinstance(record, dict) else None


def unfinished_rollback(unit, waited):
    """The rollback's result when the host's restore did not end within the wait (as_rollback's shape)."""
    stem = guard_stem(unit)
    return {"restored": True, "known_good": "the known-good", "leftovers": {},
            "gate": {"state": "unfinished", "elapsed": waited, "cause": "restore_unfinished",
                     "hint": "the host's guard still restores it after %.0f s: journalctl -u '%s*' says how far it is; "
                             "playbooks/status.yml says when it ends" % (waited, stem)}}


def acted_on_failure(result):
    """The guard restored because the new server failed (not because nobody confirmed it)."""
    return bool(result) and result.get("reason") == FOLLOW


def acted_for_the_group(result):
    """The guard restored because its server group's link said so (another node's guard)."""
    return bool(result) and result.get("reason") == GROUP


def rotation_said(result):
    if result.get("rejoined"):
        return ", and put it back into the gateway's rotation"
    if result.get("kept_out"):
        return (", and left it out of the gateway's rotation, as its controller asked (a tune between its tries): "
                "the tune, the next deploy or rollback.yml puts it back")
    if result.get("rejoin_error"):
        return (", but it is OUT OF THE GATEWAY'S ROTATION since %s (%s): the next deploy or rollback.yml puts it "
                "back" % (short_clock(float(result.get("out_of_rotation_since") or result["time"])),
                          result["rejoin_error"]))
    return ""


def said(result):
    """The sentence the next deploy, status.yml and rollback.yml repeat about a guard that acted."""
    if not result:
        return None
    tries = " after %d tries" % result["attempts"] if result.get("attempts", 1) > 1 else ""
    alone = "" if result.get("reason") == ROLLBACK else " by itself"
    if result.get("reason") == WATCHED and result.get("healthy"):
        return ("the watch restored %s at %s: %s, healthy in %.1f s%s%s"
                % (result.get("restored", "the known-good").upper(), short_clock(result["time"]), result["why"],
                   result.get("seconds", 0.0), tries, rotation_said(result)))
    if result.get("healthy"):
        return ("%s at %s; the host restored %s%s, healthy in %.1f s%s%s"
                % (result["why"], short_clock(result["time"]), result.get("restored", "the known-good").upper(),
                   alone, result.get("seconds", 0.0), tries, rotation_said(result)))
    named = (result.get("diagnosis") or {}).get("cause")
    return ("%s at %s; the host tried to restore %s%s%s and it is NOT healthy: %s%s"
            % (result["why"], short_clock(result["time"]), (result.get("restored") or "the known-good").upper(),
               alone, tries, result.get("error") or "see journalctl -u %s" % result.get("unit", "sglang.service"),
               " (cause %s)" % named if named else ""))


def timer_text(unit, deadline):
    _timer, service, _boot = guard_units(unit)
    return ("# inferops.sglang: restores the known-good %s unless the deploy confirms its switch by this time\n"
            "[Unit]\nDescription=inferops.sglang guard of %s (deadline)\n\n"
            "[Timer]\nOnCalendar=%s\nAccuracySec=1s\nRemainAfterElapse=no\nUnit=%s\n"
            % (unit, unit, clock(deadline), service))


def service_text(unit, python, state_dir, reason):
    """The unit of one of the guard's runs. A run that fails (its program could not run, the
    disk was full) is started again by systemd until it ends: the promise is not given up."""
    installed = "\n[Install]\nWantedBy=multi-user.target\n" if reason == BOOT else ""
    kind = "simple" if reason == FOLLOW else "oneshot"
    # (The follower is ordered after the unit it watches, so a shutdown stops it first: a reboot
    # never looks to the watch like a stop of the server on purpose, which would end it.)
    after = "network.target %s" % unit if reason == FOLLOW else "network.target"
    return ("# inferops.sglang: the guard of %s (%s)\n[Unit]\nDescription=inferops.sglang guard of %s (%s)\n"
            "After=%s\nStartLimitIntervalSec=0\n\n[Service]\nType=%s\nSyslogIdentifier=%s\n"
            "ExecStart=%s %s/sglang-guard --state-dir %s --reason %s\nRestart=on-failure\nRestartSec=5\n"
            # (A stop that hangs - seen in a container whose cgroup did not report empty - costs 10 s, not 90.)
            "TimeoutStopSec=10\n%s"
            % (unit, reason, unit, reason, after, kind, guard_stem(unit), python, LIB_DIR,
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


def write_json(path, record, mode=0o644):
    host_state.put_file(path, host_state.dump_json(record).encode("utf-8"), mode, 0, 0)


# -- what runs on the host, from the guard's units ----------------------------------------------

def say(line):
    """A line to the journal at once (the guard's stdout is journald's, buffered otherwise)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def systemctl(*args):
    proc = subprocess.run(["systemctl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout.strip()


def run_command(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False, env=dict(os.environ, LC_ALL="C"))
    return proc.returncode, proc.stdout, proc.stderr


def read_unit(unit):
    _rc, out, _err = run_command(show_command(unit))
    return unit_status(parse_show(out))


def api_key(state_dir):
    """The known-good's API key (its secrets file, restored with it), for its health endpoint."""
    try:
        with open(os.path.join(state_dir, "secrets.yaml")) as fh:
            return json.load(fh).get("api-key") or ""
    except (OSError, ValueError, AttributeError):
        return ""


# What a request to a server or a gateway can raise: no answer, a refused or reset connection, a
# bad URL, a bad status line or an incomplete read. Each is a failed probe, never a crash.
HTTP_ERRORS = (OSError, ValueError, HTTPException)


def bearer(key):
    """The Authorization header for an API key ({} without one)."""
    return {"Authorization": "Bearer " + key} if key else {}


def http_call(method, url, headers=None, body=None, timeout=10.0):
    """One request (plain http.client: no Ansible on the host's side): (status, body bytes).
    Raises one of HTTP_ERRORS."""
    parts = urlsplit(url)
    https = parts.scheme == "https"
    conn = (HTTPSConnection if https else HTTPConnection)(parts.hostname, parts.port or (443 if https else 80),
                                                          timeout=timeout)
    try:
        conn.request(method, parts.path or "/", body, headers or {})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def at_path(url, path):
    """The server's `url` (its health URL, say) with another path."""
    parts = urlsplit(url)
    return "%s://%s%s" % (parts.scheme or "http", parts.netloc, path)


def healthy(url, key, timeout):
    """One probe of the health endpoint."""
    try:
        return http_call("GET", url, bearer(key), timeout=timeout)[0] == 200
    except HTTP_ERRORS:
        return False


def last_line_at(invocation):
    """When the invocation's journal last said anything (epoch seconds), or None."""
    try:
        _rc, out, _err = run_command(journal_command(invocation, output="json", lines=1))
        return int(json.loads(out.strip().splitlines()[-1])["__REALTIME_TIMESTAMP"]) / 1e6
    except (ValueError, KeyError, IndexError, OSError):
        return None


def quiet_for(began, since, stall):
    """What a start that has said nothing for longer than `stall` seconds (the gate's stall floor)
    says, or None: a known-good that cannot meet its ranks (a server group's link cut) fails its
    try then, not at the health timeout."""
    if not stall or not began["invocation_id"]:
        return None
    quiet = time.time() - max(last_line_at(began["invocation_id"]) or since, since)
    return "it said nothing for %.0f s (the stall limit, sglang_service_health_stall)" % quiet \
        if quiet > stall else None


def wait_healthy(unit, url, key, timeout, settle, stall=0.0):
    """Poll the known-good's health until it answered 200 and still answers `settle` seconds
    later (as the deploy's gate), its start fails, or `timeout` seconds pass: (healthy, error).
    The start is judged as the gate judges it (systemd_state.judge): a crash that systemd
    restarts (auto-restart) fails it at once, as a unit left failed does; so does a start that
    says nothing for `stall` seconds before its first 200 (quiet_for)."""
    start, delay, first, since = time.monotonic(), 0.2, None, time.time()
    began = read_unit(unit)
    while time.monotonic() - start < timeout + settle:
        now = time.monotonic()
        if healthy(url, key, 5.0):
            first = now if first is None else first
            if now - first >= settle:
                return True, None
        elif first is not None:
            return False, "%s answered 200, then stopped answering within its %.0f s settle" % (url, settle)
        verdict, why = judge(read_unit(unit), began["invocation_id"], began["n_restarts"])
        why = why if verdict == FAILED else (quiet_for(began, since, stall) if first is None else None)
        if why:
            return False, "%s did not start: %s (journalctl -u %s)" % (unit, why, unit)
        if first is None and now - start >= timeout:
            break
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    return False, "%s did not answer 200 on %s within %d s" % (unit, url, timeout)


def wait_released(unit, timeout, tolerance_mib):
    """Wait until the stopped unit's processes and the GPU memory nobody holds are gone, as the
    rollback does (gpu_released): None once they are, else what is still there."""
    binary = shutil.which("nvidia-smi")
    started, pause = time.monotonic(), 0.25
    while True:
        try:
            gpu = read_gpus(run_command, binary, 30, process_unit, process_title) if binary else \
                {"devices": [], "processes": []}
        except NvidiaSmiError as exc:
            return "cannot read the GPUs: %s" % exc
        found = leftovers(unit, unit_processes(unit), gpu["devices"], gpu["processes"], tolerance_mib)
        waited = time.monotonic() - started
        if found["released"]:
            return None
        if waited >= timeout:
            return describe_leftovers(unit, found, waited)
        time.sleep(pause)
        pause = min(pause * 2, 2.0)


def known_good_url(record, pending):
    args = (record or {}).get("server_args") or {}
    host = args.get("host") or pending.get("host", "127.0.0.1")
    return "http://%s:%s/health" % (host, args.get("port") or pending.get("port", 30000))


def start_known_good(state_dir, pending, record, said, link=None):
    """One start of the known-good: the switched unit stopped, its leftovers gone (the seconds
    waited go to `said`), every node of a server group stopped too (`link`'s barrier), the
    known-good's start-limit state cleared, started, healthy and settled: (healthy, error, unit)."""
    unit = pending["unit"]
    adopted = (record or {}).get("adopted") or {}
    target = adopted.get("unit") or unit
    systemctl("stop", unit)
    began = time.monotonic()
    left = wait_released(unit, float(pending.get("leftovers_timeout", 60)), int(pending.get("tolerance_mib", 1024)))
    said["leftovers_waited"] = round(said.get("leftovers_waited", 0.0) + time.monotonic() - began, 1)
    if left:
        said["leftovers"], said["diagnosis"] = left, None
        return False, left, target
    said.pop("leftovers", None)
    if link is not None:
        said["group_barrier"] = guard_link.barrier(link, float(pending.get("leftovers_timeout", 60)) + 30)
    if adopted:
        systemctl("disable", unit)
    systemctl("reset-failed", target)
    systemctl("enable", target)
    systemctl("start", target)
    ok, error = wait_healthy(target, known_good_url(record, pending), api_key(state_dir),
                             float(pending.get("timeout", 600)), float(pending.get("settle", 0)),
                             float(pending.get("stall") or 0))
    said["diagnosis"] = None if ok else diagnose(target)
    return ok, error, target


def diagnose(unit):
    """Why the known-good's last start failed, from its whole journal, by the deploy gate's own
    classifier: {cause, hint, evidence, phase, rank}, or None when systemd names no start."""
    invocation = read_unit(unit)["invocation_id"]
    try:
        found = classify_stream(stream_invocation(invocation, unit=unit), state="failed")
    except (ValueError, OSError):
        return None
    if found["cause"] in (None, "unknown"):
        return None   # (no signature: the guard's own words say what it saw)
    return {"cause": found["cause"], "hint": found["hint"], "evidence": found["evidence"][:1],
            "phase": found["phase"], "rank": found["rank"]}


def never_switched(pending, status):
    """The unit still runs the invocation it ran when the guard was armed, and serves: the
    restart never happened (the controller went away before it). A restore the controller handed
    over always restarts: what runs is what it rolls back (rollback.yml's, too)."""
    return bool(pending.get("invocation")) and status["invocation_id"] == pending["invocation"] and \
        status["active_state"] == "active" and pending.get("phase") != RESTORE_PHASE


def restore(state_dir, pending, sleep=time.sleep, link=None):
    """The rollback's restore, done by the host: the known-good's files and record back, then
    its start (start_known_good), tried again after each pause of RETRY_BACKOFF. A server the
    switch never restarted gets its files back and keeps running - unless it is a server
    group's node (`link`): every node stops before any starts. Returns the result."""
    unit = pending["unit"]
    problem = host_state.known_good_problem(state_dir, unit)
    folder = host_state.known_good_dir(state_dir)
    if folder is None and pending.get("phase") == RESTORE_PHASE:
        # The controller's rollback of a first deploy: the failed server stops rather than crash-loops.
        systemctl("stop", unit)
        return {"restored": None, "known_good": None, "healthy": False, "unit": unit, "attempts": 0,
                "error": "no known-good service existed; %s is stopped" % unit}
    if problem or folder is None:
        # Nothing better to run than what runs: it is left as it is, and said.
        return {"restored": None, "known_good": None, "healthy": False, "unit": unit, "attempts": 0,
                "error": "the known-good is %s; %s was left running" % (problem or "missing", unit)}
    record = host_state.read_json(os.path.join(folder, host_state.META))
    entries = host_state.restore_entries(pending["unit_dir"], unit, state_dir, int(pending["gid"]), record)
    targets = [(name, path, mode, uid, gid) for _kind, name, path, mode, uid, gid in entries]
    started = time.monotonic()
    record, _changed = host_state.restore_known_good(state_dir, targets)
    systemctl("daemon-reload")
    name = ((record or {}).get("adopted") or {}).get("unit") or (record or {}).get("variant") or "known-good"
    url, said = known_good_url(record, pending), {"attempts": 0, "known_good": display_name(record)}
    if link is None and never_switched(pending, read_unit(unit)) and not (record or {}).get("adopted") and \
            healthy(url, api_key(state_dir), 5.0):
        ok, error, target = True, None, unit
    else:
        for pause in (0.0,) + RETRY_BACKOFF:
            sleep(pause)
            said["attempts"] += 1
            # (The group's barrier once: a later try restarts this node's known-good alone.)
            ok, error, target = start_known_good(state_dir, pending, record, said, link if pause == 0.0 else None)
            if ok:
                break
            say("inferops.sglang guard: the known-good %s did not come up (try %d): %s" % (name, said["attempts"], error))
    return dict(said, restored=name, healthy=ok, error=error, unit=target, seconds=round(time.monotonic() - started, 1))


# Seconds the rejoin waits for a removal still draining in the gateway to end, and then for the
# gateway to route to the worker added again.
REJOIN_WAIT = 30.0


def rejoin(gateway, worker_key, sleep=time.sleep):
    """Put the worker drained for the switch back into the gateway's rotation, as sglang_gateway
    does (gateway_rules.put_back), each wait at most REJOIN_WAIT seconds. None, or why it could not."""
    body = dict({"url": gateway["worker_url"]}, **({"api_key": worker_key} if worker_key else {}))
    headers = dict({"Content-Type": "application/json"}, **bearer(gateway.get("api_key")))

    def post():
        status, _body = http_call("POST", gateway["url"].rstrip("/") + "/workers", headers, json.dumps(body))
        return None if status in (200, 201, 202, 409) else "%s answered HTTP %d to POST /workers" % (gateway["url"], status)
    try:
        outcome, last = gateway_rules.put_back(lambda: worker_entry(gateway, headers), post,
                                               lambda done: gateway_waits(done, sleep))
    except HTTP_ERRORS + (KeyError,) as exc:
        return "%s could not be reached: %s" % (gateway["url"], exc)
    if outcome == gateway_rules.REFUSED:
        return last
    if outcome == gateway_rules.STILL_DRAINED:
        return "%s still drained %s after %.0f s" % (gateway["url"], gateway["worker_url"], REJOIN_WAIT)
    if outcome == gateway_rules.NOT_ROUTED:
        return "%s did not route to %s within %.0f s of POST /workers" % (
            gateway["url"], gateway["worker_url"], REJOIN_WAIT)
    return None


def worker_entry(gateway, headers):
    """The gateway's entry for the worker (smg's GET /workers), or None."""
    _status, listing = gateway_call("GET", gateway["url"], "/workers", headers)
    return gateway_rules.find_worker(listing, gateway["worker_url"])


def gateway_waits(done, sleep):
    """Look until done() holds, at most REJOIN_WAIT seconds: whether it did."""
    deadline, pause = time.monotonic() + REJOIN_WAIT, 0.2
    while not done():
        if time.monotonic() >= deadline:
            return False
        sleep(pause)
        pause = min(pause * 1.5, 2.0)
    return True


def back_in_rotation(state_dir, pending, result):
    """After a healthy restore, the worker the switch drained goes back behind its gateway; when
    it cannot, the result says since when it is out of rotation (status.yml repeats it)."""
    gateway = pending.get("gateway") or {}
    if not gateway.get("url") or not result.get("healthy"):
        return {}
    if result.get("reason") == ROLLBACK and pending.get("rejoin") is False:
        # (Its controller handed the restore over and keeps the worker out: a tune between its tries.)
        return {"rejoined": None, "kept_out": True, "out_of_rotation_since": gateway.get("drained_at")}
    error = rejoin(gateway, api_key(state_dir))
    if error is None:
        return {"rejoined": gateway["worker_url"]}
    return {"rejoined": None, "out_of_rotation_since": gateway.get("drained_at"), "rejoin_error": error}


def lock_still_held(pending):
    """The deploy lock of the switch's run is known and still held by that run."""
    lock = pending.get("lock") or {}
    if not lock.get("path") or not lock.get("run_id"):
        return False
    return (host_state.read_json(lock["path"]) or {}).get("run_id") == lock["run_id"]


def controller_done(pending):
    """The switch's controller is done with the host: its deploy lock (this run's) is released,
    or was never known."""
    return not lock_still_held(pending)


def may_act(record, now):
    """The watch acts on a breach once the deploy that confirmed the switch is done with the host
    (its rejoin to the gateway and its record of what runs, which would undo the restore, come
    after the confirmation), or once the grace after the watch began passed (that controller went
    away)."""
    grace = min(float(record.get("grace") or GRACE), GRACE_MAX)
    return controller_done(record) or now - float(record["watch_started"]) >= grace


def release_deploy_lock(pending):
    """The deploy lock of the switch's controller, which went away: released (with its marker,
    as deploy_lock does), so the next deploy needs no sglang_break_lock. True when released."""
    if not lock_still_held(pending):
        return False
    path = pending["lock"]["path"]
    with open(path + ".released", "w") as fh:
        fh.write("%.6f\n" % time.time())
    os.unlink(path)
    return True


def remember_failure(state_dir, pending, failing):
    """A new server that failed is on the record as a rolled-back configuration, as the
    controller's rollback records it: a re-run of exactly it is not retried. For a restore its
    controller handed over (remember), that controller's own record, written since the switch
    began, is kept: the guard's stands in only for a controller gone before it wrote it."""
    path = host_state.rolled_back_path(state_dir, pending["config_id"])
    if pending.get("phase") == RESTORE_PHASE:
        if os.path.exists(path) and os.path.getmtime(path) >= float(pending.get("started") or 0):
            return
        cause = pending.get("cause")
    else:
        verdict = host_state.read_json(os.path.join(state_dir, VERDICT)) or {}
        mine = float(verdict.get("time") or 0) >= float(pending.get("armed_at") or 0)
        cause = verdict.get("cause") if mine else None
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "variant": pending.get("variant"),
              "cause": cause or (failing or {}).get("cause") or "unit_failed", "by": "the host's guard", "why": (failing or {}).get("why")}
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path), 0o750)
    write_json(path, record)


def end_pending(state_dir, unit, run=None, watched=False):
    """The switch is confirmed: the guard's timer is disabled and nothing is pending (the follower
    ends by itself within a second, once it reads so). Its boot unit is disabled too, unless the
    switch is `watched`: a host that reboots during the watch resumes it at boot (resume_watch).
    `run(*args)` runs systemctl (the module's fails on an error); the guard's own run goes on
    whatever systemctl says. The caller holds the lock."""
    run = run or systemctl
    timer, _service, boot = guard_units(unit)
    run("disable", "--now", timer)
    if not watched:
        run("disable", boot)
    os.unlink(os.path.join(state_dir, PENDING))


def act(state_dir, reason, failing=None, now=None, link=None, spoke=None):
    """Decide under the guard's lock, and restore (or, a server group's node, confirm) when the
    decision says so. `link`: the follower's link to the server group's other guards. Returns
    the line it says."""
    with Locked(state_dir):
        pending = read_pending(state_dir)
        action, why = decide(pending, reason, time.time() if now is None else now, failing, spoke)
        if action == CONFIRM:
            return confirm_with_the_group(state_dir, pending, why)
        if action != RESTORE:
            return "inferops.sglang guard (%s): %s; nothing to do" % (reason, why)
        # (A handed-over restore is the controller's rollback, whoever of the guard's units runs it.)
        reason = ROLLBACK if pending.get("phase") == RESTORE_PHASE else reason
        result = {"time": time.time(), "why": why, "reason": reason, "pending": pending, "healthy": False,
                  "restored": None, "unit": pending.get("unit"), "error": UNFINISHED}
        # Said before the restore begins: a run that dies midway leaves its trace, and systemd runs it again.
        write_json(os.path.join(state_dir, RESULT), result)
        failed = reason == FOLLOW or bool((failing or {}).get("failed"))
        if link is not None:
            result["group_told"] = tell_the_group(link, reason, why, failed)
        result.update(restore(state_dir, pending, link=link))
        result.update(back_in_rotation(state_dir, pending, result))
        # (The controller that handed its restore over releases its own lock, once it read the result.)
        result["lock_released"] = reason != ROLLBACK and release_deploy_lock(pending)
        if failed or (reason == ROLLBACK and pending.get("remember")):
            remember_failure(state_dir, pending, failing)
        write_json(os.path.join(state_dir, RESULT), result)
        end_pending(state_dir, pending["unit"])
        return "inferops.sglang guard (%s): %s" % (reason, said(result))


def tell_the_group(link, reason, why, failed):
    """Before this node restores, the server group's other guards hear it: rank 0's tells every
    node to restore; another node's own decision goes to rank 0's, which restores the group (a
    restore the group asked for is not told back). The ranks it reached."""
    kind = FOLLOW if failed else reason
    if link.is_hub:
        return link.say(guard_link.RESTORE, why, kind)
    return link.say(guard_link.FAILED, why, kind) if reason != GROUP else []


def node_name(pending, rank):
    nodes = (pending.get("group") or {}).get("nodes") or []
    return "%s (rank %d)" % (nodes[rank], rank) if rank < len(nodes) else "rank %d" % rank


def group_failing(pending, word, rank, why, kind):
    """What a word of the server group's link means to this node: {why, since, failed}."""
    who = node_name(pending, rank)
    said_why = ("%s's guard restores the server group (%s)" % (who, why)) if word == guard_link.RESTORE else \
        ("%s restores (%s)" % (who, why))
    return {"why": said_why, "since": time.time(), "failed": kind == FOLLOW, "cause": "group_node_failed"}


def confirm_with_the_group(state_dir, pending, why):
    """A server group's node whose rank 0 confirmed the switch (the group's, confirmed last): the
    guard ends as the controller's own confirmation would, and the watch its confirmation asked
    for (held in the switch's record until now) begins. The caller holds the lock."""
    options = pending.get(HELD_WATCH)
    if options:
        begin_watch(state_dir, dict((k, v) for k, v in pending.items() if k != HELD_WATCH), options, time.time())
    end_pending(state_dir, pending["unit"], watched=bool(options))
    return "inferops.sglang guard (group): %s; confirmed" % why


def confirmed_by_rank_0(state_dir, config_id):
    """Rank 0's guard said its controller confirmed the switch: so is this node's, held or not."""
    with Locked(state_dir):
        pending = read_pending(state_dir)
        if not pending or pending.get("config_id") != config_id or pending.get("phase", GATE) not in (GATE, HELD):
            return "inferops.sglang guard (group): rank 0 confirmed the switch; nothing pending here"
        return confirm_with_the_group(state_dir, pending, "rank 0's controller confirmed %s, the server group's switch"
                                      % pending.get("variant", "?").upper())


def linked(state_dir, pending):
    """The server group's link of this node's follower (guard_link), or None for a server on one
    host, or when rank 0's guard cannot listen (said: each node then guards itself alone)."""
    group = pending.get("group")
    if not group:
        return None
    try:
        link = guard_link.open_link(group, group.get("key"))
    except (OSError, ValueError, KeyError) as exc:
        say("inferops.sglang guard (follow): no link to the server group's other guards (%s): this node guards "
            "itself alone" % exc)
        return None
    where = "%s:%s" % (guard_link.hub_address(group), group["port"])
    say("inferops.sglang guard (follow): %s" % (
        "rank 0's guard listens for server group %s's other guards at %s" % (group["name"], where) if link.is_hub
        else "%s follows rank 0's guard at %s" % (node_name(pending, int(group["node_rank"])), where)))
    return link


def spoke_state(link, pending, state_dir, now):
    """decide's `spoke` for a server group's node other than rank 0, else None. Whether it serves
    is only asked once it is alone past its deadline."""
    if link is None or link.is_hub:
        return None
    since = link.alone_since()
    state = {"linked": since is None, "since": since, "serving": None}
    if since is not None and now + 1 >= float(pending.get("deadline") or 0):
        state["serving"] = read_unit(pending["unit"])["active_state"] == "active" and healthy(
            known_good_url({}, pending), api_key(state_dir), 5.0)
    return state


def relay_confirmation(link, last, state_dir):
    """Rank 0's switch is not pending any more: when its controller confirmed it (not a rollback,
    not this guard's restore), the server group's other guards hear that the group's is confirmed."""
    if link is None or not link.is_hub or not last or last.get("phase", GATE) not in (GATE, HELD):
        return None
    if ended_on(last["config_id"], None, read_result(state_dir)):
        return None
    return link.say(guard_link.CONFIRMED, "%s confirmed" % last.get("variant", "?").upper())


# -- the watch after the gates --------------------------------------------------------------------

def read_watch(state_dir):
    return host_state.read_json(os.path.join(state_dir, WATCH))


def watching_now(record, config_id=None):
    """The watch `record` still runs (and watches the switch `config_id`, when given)."""
    return bool(record) and not record.get("ended") and (config_id is None or record.get("config_id") == config_id)


def begin_watch(state_dir, pending, options, now):
    """The confirmed switch's watch, for the follower (the caller holds the lock, and ends the
    switch): the switch's own record (its restore: the known-good, the unit, the gateway) and the
    watch's options (duration, interval, limits, baseline, gateway, metrics). Returns it."""
    record = dict(pending, watch=dict(options), watch_started=now, until=now + float(options["duration"]))
    write_json(os.path.join(state_dir, WATCH), record, 0o600)
    return record


def end_watch(state_dir, outcome, why, breach=None):
    """The running watch ends (the caller holds the lock): how, why, when. Returns its record, or
    None when none ran."""
    record = read_watch(state_dir)
    if not watching_now(record):
        return None
    record.update(ended=time.time(), outcome=outcome, ended_why=why, breach=breach)
    write_json(os.path.join(state_dir, WATCH), record, 0o600)
    return record


def resume_refused(record, now):
    """Why the watch `record`, running when the host went down, does not go on at its boot `now`,
    or None: its time ran out meanwhile, or it watched a server group's node (its peers' watches
    saw the node go, and act as the group's). Pure: a table test covers it."""
    if now >= float(record["until"]):
        return "the host was down when its time ran out (it booted at %s)" % short_clock(now)
    if record.get("group"):
        return ("the host rebooted at %s: a server group's node does not watch alone (its peers' watches saw it "
                "go)" % short_clock(now))
    return None


def resume_watch(state_dir, now=None):
    """The boot unit's run with no switch pending: the watch that ran when the host went down goes
    on - its follower starts again, and first waits for the server to come back (watch) - unless
    resume_refused says why not. The boot unit is disabled once no watch runs. Returns the line
    it says."""
    now = time.time() if now is None else now
    with Locked(state_dir):
        record = read_watch(state_dir)
        boot = guard_units(record["unit"])[2] if record else None
        if not watching_now(record):
            if boot:
                systemctl("disable", boot)
            return "inferops.sglang guard (boot): no switch is pending and no watch runs; nothing to do"
        variant = (record.get("variant") or "?").upper()
        why = resume_refused(record, now)
        if why:
            end_watch(state_dir, SUPERSEDED, why)
            systemctl("disable", boot)
            return "inferops.sglang guard (boot): the watch of %s ended: %s" % (variant, why)
        record["resumed_at"] = now
        write_json(os.path.join(state_dir, WATCH), record, 0o600)
    systemctl("start", "--no-block", follower_unit(record["unit"]))
    return "inferops.sglang guard (boot): the watch of %s goes on until %s, once the server is back" % (
        variant, short_clock(float(record["until"])))


def watch_summary(record):
    """The last watch as sglang_facts returns it (no gateway key): what, until when, how it ended."""
    if not record:
        return None
    keys = ("config_id", "variant", "watch_started", "until", "ended", "outcome", "ended_why", "breach")
    said = dict((key, record.get(key)) for key in keys)
    return dict(said, said=watch_said(record))


def watch_said(record, now=None):
    """What status.yml says of the last watch: running until when, how it ended, or None."""
    if not record:
        return None
    variant = (record.get("variant") or "?").upper()
    if watching_now(record) and (now or time.time()) > float(record["until"]) + 60:
        return "the watch of %s did not end by %s: its follower stopped (a reboot?)" % (
            variant, short_clock(float(record["until"])))
    if watching_now(record):
        return "watching %s until %s%s" % (variant, short_clock(float(record["until"])), resumed_said(record))
    if record.get("outcome") == CLEAN:
        return "the watch of %s ended clean at %s" % (variant, short_clock(float(record["ended"])))
    if record.get("outcome") == SUPERSEDED:
        return "the watch of %s ended at %s: %s" % (variant, short_clock(float(record["ended"])), record.get("ended_why"))
    return None   # (restored: guard.json says it, with the restore)


def resumed_said(record):
    """" (resumed after the host's reboot at ...)" for a watch resumed at boot, else ""."""
    if not record.get("resumed_at"):
        return ""
    return " (resumed after the host's reboot at %s)" % short_clock(record["resumed_at"])


class WatchedJournal(object):
    """The unit's journal since the watch began, read on from where the last probe stopped (its
    cursor), through the gate's classifier: every rank's lines, each restart's too."""

    def __init__(self, unit, since):
        self.unit, self.since, self.cursor = unit, since, None
        self.classifier = Classifier()

    def command(self):
        argv = ["journalctl", "-u", self.unit, "-o", "cat", "--no-pager", "--show-cursor"]
        return argv + (["--after-cursor", self.cursor] if self.cursor else ["--since", "@%d" % int(self.since)])

    def read(self):
        """The classifier's result over every line so far ({cause, rank, evidence}), or None."""
        _rc, out, _err = run_command(self.command())
        for line in out.splitlines():
            if line.startswith("-- cursor: "):
                self.cursor = line[len("-- cursor: "):].strip()
            else:
                self.classifier.feed(line)
        found = self.classifier.result()
        return found if found["cause"] else None


def generation(url, key, timeout):
    """One real generation through SGLang's /health_generate (a one-token request; SGLang answers
    503 once its scheduler did not answer within its own 20 s): ("ok", None) or ("failed", why)."""
    began = time.monotonic()
    try:
        status, _body = http_call("GET", at_path(url, "/health_generate"), bearer(key), timeout=timeout)
    except HTTP_ERRORS as exc:
        return "failed", "GET /health_generate: no answer in %.1f s (%s)" % (time.monotonic() - began, exc)
    return ("ok", None) if status == 200 else \
        ("failed", "GET /health_generate answered %d after %.1f s" % (status, time.monotonic() - began))


def metrics_text(url, key, timeout):
    """SGLang's /metrics (Prometheus text), or "" when it does not answer."""
    try:
        status, body = http_call("GET", at_path(url, "/metrics"), bearer(key), timeout=timeout)
    except HTTP_ERRORS:
        return ""
    return body.decode("utf-8", "replace") if status == 200 else ""


def server_environment(state_dir):
    """The server's environment file (its unit's EnvironmentFile), or "" when unreadable."""
    try:
        with open(os.path.join(state_dir, "sglang.env")) as fh:
            return fh.read()
    except OSError:
        return ""


def probe(record, journal, key, waits):
    """One look at the confirmed server, for watch.observe(); its generation waits `waits` s."""
    options = record["watch"]
    status = read_unit(record["unit"])
    said = {"time": time.time(), "unit": status["active_state"], "result": status["result"],
            "restarts": status["n_restarts"], "diagnosis": journal.read(), "generation": None, "metrics": None}
    if status["active_state"] == "active":
        said["generation"], said["generation_evidence"] = generation(options["url"], key, waits)
        if options.get("metrics"):
            said["metrics"] = watching.metrics_figures(metrics_text(options["url"], key, 10.0))
    return said


def watch(state_dir, config_id, sleep=time.sleep, link=None):
    """The follower, once the deploy confirmed the switch `config_id` with a watch: a probe each
    interval until the watch's time runs out (ended clean), its record is ended by another (a new
    switch), or a breach, which restores the known-good (act_on_breach). A server group's node
    keeps its guards' `link` while it watches: its breach restores every node, and another node's
    restores it. Returns the line it says, or None when no watch of this switch runs."""
    record = read_watch(state_dir)
    if not watching_now(record, config_id):
        return None
    options, variant = record["watch"], (record.get("variant") or "?").upper()
    thresholds = watching.limits(options.get("limits"))
    interval = float(options.get("interval") or thresholds["interval"])
    key = api_key(state_dir)   # (the server's, written by its deploy: it does not change while it runs)
    waits = watching.generation_timeout(server_environment(state_dir))
    if record.get("resumed_at"):
        # (After a reboot: the server starts with the host; the watch goes on once it is back.)
        lost = not_back(record, key)
        if lost:
            return act_on_breach(state_dir, record, lost, link)
    journal = WatchedJournal(record["unit"], record.get("resumed_at") or record["watch_started"])
    state, held = watching.fresh(), None
    # (systemd's automatic restarts so far: one after this is a crash, never a stop on purpose.)
    restarts = read_unit(record["unit"])["n_restarts"]
    say("inferops.sglang guard (watch): watching %s until %s, a probe each %.0f s" % (
        variant, short_clock(float(record["until"])), interval))
    while True:
        heard = word_within(link, interval, sleep)
        if heard:
            return act_on_breach(state_dir, record, group_breach(record, heard), link, told=True)
        now_record = read_watch(state_dir)
        if not watching_now(now_record, config_id):
            return "inferops.sglang guard (watch): the watch of %s ended: %s" % (
                variant, (now_record or {}).get("ended_why") or "its record is gone")
        if time.time() >= float(record["until"]):
            with Locked(state_dir):
                ended = end_watch(state_dir, CLEAN, "its time ran out with no breach")
            return "inferops.sglang guard (watch): %s" % watch_said(ended or now_record)
        looked = probe(record, journal, key, waits)
        if watching.stopped_cleanly(looked, restarts):
            with Locked(state_dir):
                ended = end_watch(state_dir, SUPERSEDED, "%s was stopped cleanly at %s (a stop or a restart, not a failure): "
                                  "nothing restored" % (record["unit"], short_clock(looked["time"])))
            return "inferops.sglang guard (watch): %s" % watch_said(ended or now_record)
        state, breach = watching.observe(state, looked, thresholds, options.get("baseline"))
        # (A breach is kept - a journal line is read once - until the watch may act on it.)
        held = held or breach
        if held and may_act(record, looked["time"]):
            return act_on_breach(state_dir, record, held, link)


def not_back(record, key):
    """A watch resumed at boot: the watched server, started with the host, back healthy as the
    deploy's gate judges a start (its health timeout, its stall floor); None, or the breach when
    it does not come back."""
    ok, error = wait_healthy(record["unit"], at_path(record["watch"]["url"], "/health"), key,
                             float(record.get("timeout", 600)), 0.0, float(record.get("stall") or 0))
    if ok:
        return None
    named = diagnose(record["unit"]) or {}
    evidence = watching.first_evidence(named) or error
    return watching.found(named.get("cause") or watching.UNIT_DOWN, {"time": time.time()}, evidence, named.get("rank"),
                          "%s did not come back after the host's reboot" % (record.get("variant") or "?").upper())


# The watch of a server group's node hears its link this often between its probes.
HEAR_EVERY = 0.5


def word_within(link, interval, sleep):
    """Wait one probe interval; a server group's node listens to its link meanwhile: the word
    that makes it restore (another node's restore, or a node's failure at rank 0's), or None."""
    if link is None:
        sleep(interval)
        return None
    waited = 0.0
    while True:
        heard = link.next_word()
        if heard and heard[0] in (guard_link.RESTORE, guard_link.FAILED):
            return heard
        if waited >= interval:
            return None
        step = min(HEAR_EVERY, interval - waited)
        sleep(step)
        waited += step


def group_breach(record, heard):
    """Another node's word as this node's watch says it: the group restores as one."""
    word, rank, why, kind = heard
    named = group_failing(record, word, rank, why, kind)
    return {"cause": "group_node_failed", "time": named["since"], "evidence": why or None, "rank": None,
            "why": named["why"]}


def breach_said(breach):
    """A breach as the watch says it: cause, rank, evidence."""
    return "%s%s%s" % (breach["why"], " on %s" % breach["rank"] if breach.get("rank") and breach["rank"] not in
                       breach["why"] else "", " (%s)" % breach["evidence"] if breach.get("evidence") else "")


def drain(record):
    """The worker out of its gateway's rotation before the restore, as sglang_gateway's drain
    (DELETE /workers/{id}); its requests in flight are on the failed server, and end with it.
    The record's gateway, as a switch's drained one, for back_in_rotation. None, or why not."""
    gateway = (record.get("watch") or {}).get("gateway") or {}
    if not gateway.get("url"):
        return None
    headers = bearer(gateway.get("api_key"))
    record["gateway"] = dict(gateway, drained_at=time.time())
    try:
        worker = worker_entry(gateway, headers)
        if worker is not None:
            gateway_call("DELETE", gateway["url"], "/workers/%s" % worker["id"], headers)
    except HTTP_ERRORS + (KeyError,) as exc:
        # (A gateway that cannot be told never holds the restore back: the server is broken.)
        return "%s could not be reached: %s" % (gateway["url"], exc)
    return None


def gateway_call(method, base, path, headers):
    """One call to the gateway's API: (status, its JSON object or None)."""
    status, body = http_call(method, base.rstrip("/") + path, headers)
    return status, json.loads(body.decode("utf-8")) if body.strip().startswith(b"{") else None


def act_on_breach(state_dir, record, breach, link=None, told=False):
    """The watch's breach: under the guard's lock, the worker out of rotation, the switch's one
    restore (the known-good the deploy kept), back in rotation, the configuration on the record
    as rolled back, and the watch ended. A server group's node (`link`) tells the other nodes
    first, unless the breach is what one told it (`told`), and its restore waits at the group's
    barrier, as the switch's does. Returns the line it says."""
    with Locked(state_dir):
        if not watching_now(read_watch(state_dir), record["config_id"]):
            return "inferops.sglang guard (watch): the watch ended meanwhile; nothing to do"
        why = breach_said(breach)
        result = {"time": time.time(), "why": why, "reason": WATCHED, "pending": record, "breach": breach,
                  "healthy": False, "restored": None, "unit": record.get("unit"), "error": UNFINISHED}
        write_json(os.path.join(state_dir, RESULT), result)
        say("inferops.sglang guard (watch): %s: the host restores the known-good" % why)
        if link is not None:
            result["group_told"] = tell_the_group(link, GROUP if told else WATCHED, why, True)
        result["drain_error"] = drain(record)
        result.update(restore(state_dir, record, link=link))
        result.update(back_in_rotation(state_dir, record, result), lock_released=False)
        remember_failure(state_dir, record, {"why": why, "cause": breach["cause"]})
        write_json(os.path.join(state_dir, RESULT), result)
        end_watch(state_dir, RESTORED, why, breach)
    return "inferops.sglang guard (watch): %s" % said(result)


def follow(state_dir, poll=FOLLOW_POLL):
    """The follower: watch the pending switch until it ends, and restore when it failed and no
    controller took it over (decide), or when its server group's other guards say so. Returns
    the line it says."""
    first_new, failing, link, last = None, None, None, None
    try:
        while True:
            pending = read_pending(state_dir)
            if not pending:
                told = relay_confirmation(link, last, state_dir)
                # (A confirmed switch with a watch: this follower watches it; one started with no
                # switch pending takes up a watch that runs, as after its own restart.)
                watched = watch(state_dir, last["config_id"] if last else (read_watch(state_dir) or {}).get("config_id"),
                                link=link)
                if watched and read_pending(state_dir):
                    # A rollback's arm ended the watch and handed its restore over: this follower
                    # takes it up (the arm only starts one that is not running), on a link of its own.
                    say(watched)
                    link = close_link(link)
                    first_new, failing, last = None, None, None
                    continue
                return watched or "inferops.sglang guard (follow): the switch ended (confirmed or rolled back)%s; " \
                    "nothing to do" % ("; told ranks %s it is the group's" % ", ".join(map(str, told)) if told else "")
            if last is None:
                link = linked(state_dir, pending)
            last = pending
            status = read_unit(pending["unit"])
            if first_new is None and status["invocation_id"] and status["invocation_id"] != pending.get("invocation"):
                first_new = (status["invocation_id"], status["n_restarts"])
            if failing is None:
                why = observe(pending, status, host_state.read_json(os.path.join(state_dir, VERDICT)), first_new)
                failing = {"why": why, "since": time.time()} if why else None
                if failing:
                    say("inferops.sglang guard (follow): %s" % why)
            heard = link.next_word() if link is not None else None
            if heard and heard[0] == guard_link.CONFIRMED:
                confirmed = confirmed_by_rank_0(state_dir, pending["config_id"])
                return watch(state_dir, pending["config_id"], link=link) or confirmed
            if heard:
                return act(state_dir, GROUP, group_failing(pending, *heard), link=link)
            now = time.time()
            spoke = spoke_state(link, pending, state_dir, now)
            # (The deadline first: what acts then is the timer's reason, whoever acts, a failure seen or not.)
            if decide(pending, DEADLINE, now, spoke=spoke)[0] != WAIT:
                return act(state_dir, DEADLINE, failing, link=link, spoke=spoke)
            if decide(pending, FOLLOW, now, failing, spoke)[0] == RESTORE:
                return act(state_dir, FOLLOW, failing, link=link, spoke=spoke)
            time.sleep(poll)
    finally:
        close_link(link)


def close_link(link):
    """The server group's link closed (rank 0's port freed); None, the link it leaves."""
    if link is not None:
        link.close()
    return None


def follower_runs(pending):
    """A server group's follower is what acts for it at the deadline (it speaks for the node on the
    group's link): the timer's run leaves it to a follower that runs."""
    if not pending or not pending.get("group"):
        return False
    return systemctl("is-active", follower_unit(pending["unit"]))[1] == "active"


def main(argv):
    """The guard units' entry point (the launcher sglang_guard writes calls it): (exit code, line)."""
    state_dir, reason = "/etc/sglang", DEADLINE
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag == "--state-dir":
            state_dir = args.pop(0)
        elif flag == "--reason":
            reason = args.pop(0)
    if reason == FOLLOW:
        return 0, follow(state_dir)
    if reason == BOOT and not read_pending(state_dir):
        return 0, resume_watch(state_dir)
    if reason == DEADLINE and follower_runs(read_pending(state_dir)):
        return 0, "inferops.sglang guard (deadline): the follower speaks for this node of the server group; it acts"
    # (A run that raised exits non-zero: systemd runs it again, and the switch is still pending.)
    return 0, act(state_dir, reason)
