# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which run of ansible-playbook this is, for the actions (they run in a worker forked from it).

A run is the `ansible-playbook` process (the worker's parent) and its start time: the same for
every host and task of one run, different for any other run, even one that reuses the pid. The
deploy lock names its holder by it; a server group's nodes tell their plans of this run from
an earlier run's (facts a cache kept) by it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import os
import socket


def process_start(pid):
    """The kernel's start time of a process (clock ticks since boot), or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return None


def run_id(pid=None):
    """`controller:pid:start` of a run (by default this worker's)."""
    pid = os.getppid() if pid is None else pid
    return "%s:%d:%s" % (socket.gethostname(), pid, process_start(pid))


def run_owner(task_vars):
    """Who holds a lock taken by this run: its controller, user, process and playbook."""
    pid = os.getppid()
    return {"controller": socket.gethostname(), "user": getpass.getuser(), "pid": pid, "run_id": run_id(pid),
            "playbook": os.path.basename(task_vars.get("ansible_play_name") or "") or "ad-hoc"}
