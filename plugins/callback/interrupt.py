# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: interrupt
type: aggregate
short_description: A Ctrl-C of ansible-playbook is never lost
version_added: "0.4.0"
description:
  - ansible-core turns a Ctrl-C (SIGINT) into a C(KeyboardInterrupt) in the controller's main
    thread, which ends the run with C(User interrupted execution). When the signal arrives while
    the controller forks a worker for a task, Python runs that handler inside the fork's
    C(after_in_parent) hooks, where an exception is printed as C(Exception ignored in) and
    dropped; the run then goes on as if no Ctrl-C had come (in ansible-core 2.19, about one
    Ctrl-C in four on a playbook of short tasks).
  - This callback remembers each SIGINT. When the interrupt it raised was dropped, it raises it
    again at the controller's next step in its main thread (the next task, include, worker
    start, play or the closing stats), so that the run stops there with
    C(User interrupted execution), before the next task of any host starts.
  - A deploy stopped this way leaves its host as any interrupted deploy does (the deploy lock
    says so; the host's guard restores the known-good of a switch under way).
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = inferops.sglang.interrupt); it works
    beside any stdout callback and prints nothing.
author:
  - inferops maintainers (@inferops)
requirements:
  - enable in configuration
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = inferops.sglang.fleet_summary, inferops.sglang.interrupt
"""

import signal
import threading

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inferops.sglang.interrupt"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._interrupted = False

    def v2_playbook_on_start(self, playbook):
        # By now the task queue manager installed its handler (it raises KeyboardInterrupt and
        # sets SIGINT back to the default, so that a second Ctrl-C ends the process at once).
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._remembering(handler))

    def _remembering(self, handler):
        def on_sigint(signum, frame):
            self._interrupted = True
            handler(signum, frame)
        return on_sigint

    def _raise_if_dropped(self, *_args, **_kwargs):
        # Only the main thread: a KeyboardInterrupt in the results thread would end that thread,
        # not the run.
        if self._interrupted and threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt()

    # The controller's steps in its main thread: each raises a dropped interrupt again.
    v2_playbook_on_play_start = v2_playbook_on_task_start = v2_playbook_on_handler_task_start = _raise_if_dropped
    v2_playbook_on_include = v2_runner_on_start = v2_playbook_on_stats = _raise_if_dropped
