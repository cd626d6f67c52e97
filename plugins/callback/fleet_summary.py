# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_summary
type: aggregate
short_description: One line per host at the end of a deploy, and the same as JSON beside the reports
version_added: "0.2.0"
description:
  - At the end of the playbook, prints one line per host the deploy reached, sorted by host
    name; class, the variant before and after, the outcome, its cause, the speed ratio the
    performance gate measured (new over known-good), and how long the host's deploy took.
  - The rows come from the reports M(inferops.sglang.sglang_report) writes (each deploy's
    last task), so a host whose class canary rolled back appears as C(skipped) with the
    canary's cause. A host that failed before its report (preflight, build, unreachable)
    appears as C(failed) with the failed task's message.
  - A host that became unreachable, or failed, while its switch was under way appears as
    C(unreachable) (or C(failed)) with the switch's state unknown and the time the host's
    guard restores the known-good by itself unless a deploy confirms the switch.
  - Writes the same rows as JSON to C(fleet-summary.json) in the reports folder, and a copy
    named C(fleet-<UTC stamp>.json) beside it.
  - Prints nothing, and writes nothing, in a playbook that wrote no deploy report.
  - With a JSON stdout callback (C(ansible.posix.json), C(ansible.posix.jsonl)) it only writes
    the file, so that the output stays one JSON document.
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = inferops.sglang.fleet_summary);
    it works beside any stdout callback.
author:
  - inferops maintainers (@inferops)
requirements:
  - enable in configuration
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = inferops.sglang.fleet_summary
#
# At the end of `ansible-playbook playbooks/deploy_ddtree.yml`:
#
# SGLANG FLEET SUMMARY (4 hosts; reports/fleet-summary.json)
# host   class      variant           outcome      cause                                speed  time
# ct129  a6000      nextn -> nextn    rolled_back  slower                               0.68x  52 s
# ct130  a6000      nextn -> nextn    skipped      class canary rolled back (slower)    -      1 s
# ct200  blackwell  nextn -> ddtree   deployed     -                                    1.24x  47 s
# ct201  blackwell  nextn -> ddtree   deployed     -                                    1.22x  45 s
"""

import json
import os
import tempfile
import time

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible_collections.inferops.sglang.plugins.module_utils import fleet_summary

# (A tune's last word is its class's result: the canary serves its known-good again.)
REPORT_ACTIONS = ("inferops.sglang.sglang_report", "sglang_report", "inferops.sglang.sglang_tune", "sglang_tune")
# Stdout callbacks whose output is JSON, which a printed table would break.
JSON_STDOUT = ("json", "jsonl")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inferops.sglang.fleet_summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._rows, self._failures, self._folder, self._unreachable = {}, {}, None, set()

    def _take(self, result, failed=False):
        host = result._host.get_name()
        data = result._result
        if result._task.action in REPORT_ACTIONS and isinstance(data.get("summary"), dict):
            self._rows[host] = data["summary"]
            self._folder = data.get("dir") or self._folder
        elif failed and not result._task.ignore_errors:
            self._failures[host] = data.get("msg") or data.get("stderr") or "failed"

    def v2_runner_on_ok(self, result):
        self._take(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._take(result, failed=not ignore_errors)

    def v2_runner_on_unreachable(self, result):
        self._unreachable.add(result._host.get_name())
        self._take(result, failed=True)

    def rows(self):
        """A row per host with a report, and one per host that failed before it wrote one; a
        host whose last report says its switch was under way when it failed says so."""
        rows = dict(self._rows)
        for host, message in self._failures.items():
            if (rows.get(host) or {}).get("outcome") == "pending":
                rows[host] = fleet_summary.unfinished_row(rows[host], message, host in self._unreachable)
            rows.setdefault(host, fleet_summary.failed_row(host, message))
        return list(rows.values())

    def v2_playbook_on_stats(self, stats):
        if not self._rows:
            return
        rows = self.rows()
        where = self._write(rows)
        if str(C.DEFAULT_STDOUT_CALLBACK).rsplit(".", 1)[-1] in JSON_STDOUT:
            return
        self._display.banner("SGLANG FLEET SUMMARY (%d host%s%s)" % (
            len(rows), "" if len(rows) == 1 else "s", "; %s" % where if where else ""))
        for line in fleet_summary.lines(rows):
            self._display.display(line)

    def _write(self, rows):
        """The JSON copy, atomically (a dashboard reading it never sees half a file)."""
        if not self._folder:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        text = json.dumps({"time": stamp, "hosts": sorted(rows, key=lambda data: data["host"] or "")},
                          indent=2, sort_keys=True, default=str) + "\n"
        target = os.path.join(self._folder, "fleet-summary.json")
        try:
            for name in ("fleet-%s.json" % stamp, "fleet-summary.json"):
                fd, tmp = tempfile.mkstemp(dir=self._folder, prefix=".fleet-")
                with os.fdopen(fd, "w") as fh:
                    fh.write(text)
                os.chmod(tmp, 0o644)
                os.rename(tmp, os.path.join(self._folder, name))
        except OSError as exc:
            self._display.warning("fleet summary: could not write %s: %s" % (target, exc))
            return None
        return target
