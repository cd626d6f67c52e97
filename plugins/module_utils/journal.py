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

import collections
import re
import subprocess

from ansible_collections.inferops.sglang.plugins.module_utils.sglang_failures import Classifier

INVOCATION_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def journal_command(invocation_id, journalctl="journalctl", unit=None, main_pid=0):
    """journalctl for one invocation; with unit and main_pid, also that process's lines
    that journald could not tag with the invocation."""
    if not INVOCATION_ID_RE.match(invocation_id or ""):
        raise ValueError("not a systemd invocation id: %r" % (invocation_id,))
    cmd = [journalctl, "--no-pager", "--no-hostname", "--output=short-iso-precise",
           "_SYSTEMD_INVOCATION_ID=" + invocation_id, "+", "INVOCATION_ID=" + invocation_id]
    if unit and main_pid and main_pid > 1:
        cmd += ["+", "_SYSTEMD_UNIT=" + unit, "_PID=%d" % main_pid]
    return cmd


def message_of(line):
    """The message part of a short-iso-precise line: after `TIMESTAMP IDENT[PID]: `."""
    rest = line.partition(" ")[2]
    head, sep, message = rest.partition(": ")
    if not sep or " " in head:
        return line
    return message


class InvocationReader:
    """Classifies each line's message and keeps the last `tail_lines` whole lines."""

    def __init__(self, tail_lines):
        self.classifier = Classifier()
        self.tail = collections.deque(maxlen=max(tail_lines, 0))

    def feed(self, line):
        line = line.rstrip("\n")
        self.tail.append(line)
        self.classifier.feed(message_of(line))

    def result(self, **context):
        out = self.classifier.result(**context)
        out["tail"] = list(self.tail)
        return out


def stream_invocation(invocation_id, journalctl="journalctl", unit=None, main_pid=0):
    """Yield the invocation's journal lines as journalctl prints them, never holding them
    all: a million-line invocation costs the same memory as a short one."""
    proc = subprocess.Popen(journal_command(invocation_id, journalctl, unit, main_pid), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, universal_newlines=True, errors="replace",
                            bufsize=1 << 16)
    try:
        yield from proc.stdout
    finally:
        proc.stdout.close()
        proc.wait()


def read_lines(lines, tail_lines=200, **context):
    reader = InvocationReader(tail_lines)
    for line in lines:
        reader.feed(line)
    return reader.result(**context)
