# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the journal of exactly one invocation of a unit, in one streaming pass.

Pure Python (no Ansible imports). The invocation's own output carries
_SYSTEMD_INVOCATION_ID; systemd's messages about it ("Main process exited", "Failed with
result") carry INVOCATION_ID. Both are read, and nothing from earlier runs.

A process that dies within milliseconds can leave lines without _SYSTEMD_INVOCATION_ID:
journald could no longer look up its cgroup (seen in about 1 start in 8 on systemd 252).
Those lines still carry the unit and the PID, so the main PID of the invocation is read too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import subprocess

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import Classifier

INVOCATION_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def journal_command(invocation_id, journalctl="journalctl", unit=None, main_pid=0, output="cat", lines=None):
    """journalctl for one invocation; with unit and main_pid, also that process's lines
    that journald could not tag with the invocation. `-o cat` (messages only) is what the
    classifier reads: formatting timestamps costs journalctl more than half its time."""
    if not INVOCATION_ID_RE.match(invocation_id or ""):
        raise ValueError("not a systemd invocation id: %r" % (invocation_id,))
    cmd = [journalctl, "--no-pager", "--no-hostname", "--output=" + output]
    if lines:
        cmd.append("--lines=%d" % lines)
    cmd += ["_SYSTEMD_INVOCATION_ID=" + invocation_id, "+", "INVOCATION_ID=" + invocation_id]
    if unit and main_pid and main_pid > 1:
        cmd += ["+", "_SYSTEMD_UNIT=" + unit, "_PID=%d" % main_pid]
    return cmd


def tail_command(invocation_id, lines, journalctl="journalctl", unit=None, main_pid=0):
    """The invocation's last lines with timestamps and senders (journalctl reads them from the end)."""
    return journal_command(invocation_id, journalctl, unit, main_pid, output="short-iso-precise", lines=lines)


def stream_invocation(invocation_id, journalctl="journalctl", unit=None, main_pid=0):
    """Yield the invocation's messages as journalctl prints them, never holding them all:
    a million-line invocation costs the same memory as a short one."""
    proc = subprocess.Popen(journal_command(invocation_id, journalctl, unit, main_pid), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, universal_newlines=True, errors="replace",
                            bufsize=1 << 16)
    try:
        yield from proc.stdout
    finally:
        proc.stdout.close()
        proc.wait()


def classify_stream(messages, **context):
    """Classify an invocation's messages (one pass, flat memory)."""
    classifier = Classifier()
    for message in messages:
        classifier.feed(message)
    return classifier.result(**context)


def follow_command(invocation_id, journalctl="journalctl", unit=None, main_pid=0):
    """journalctl following one invocation from its first line, as JSON (each entry's
    __REALTIME_TIMESTAMP comes with it: the start-up timeline's clock)."""
    cmd = journal_command(invocation_id, journalctl, unit, main_pid, output="json")
    return cmd[:1] + ["--follow", "--lines=all", "--output-fields=MESSAGE"] + cmd[1:]


def entry_message(entry):
    """(seconds since the epoch, message) of one journal JSON entry; a MESSAGE that is not
    valid UTF-8 comes as a list of bytes."""
    message = entry.get("MESSAGE") or ""
    if isinstance(message, list):
        message = bytes(b & 0xff for b in message).decode("utf-8", "replace")
    return int(entry.get("__REALTIME_TIMESTAMP") or 0) / 1e6, message


def follow_invocation(invocation_id, journalctl="journalctl"):
    """A journalctl process following the invocation (follow_command); read its stdout,
    kill it when done."""
    return subprocess.Popen(follow_command(invocation_id, journalctl), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, universal_newlines=True, errors="replace")
