# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes a deploy's report on the controller, in the worker process itself: four small
files per host per deploy are not worth four module runs (about 0.7 s each)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible_collections.inferops.sglang.plugins.module_utils.fleet_summary import (
    artifact, row, this_deploys_watch, watch_fails_the_host, watch_line)
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import read_json


def write_atomically(path, text):
    """Readers (dashboards tailing latest.json) never see half a report."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".report-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(to_bytes(text))
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        needed = ("dir",) if args.get("read") else ("dir", "name", "report", "text")
        missing = [name for name in needed if args.get(name) in (None, "")]
        if missing:
            raise AnsibleActionFail("sglang_report needs %s" % ", ".join(missing))
        # Relative to where ansible-playbook runs, not to the (installed) collection.
        top = os.path.abspath(os.path.expanduser(args["dir"]))
        folder = os.path.join(top, args.get("host") or task_vars.get("inventory_hostname"))
        if args.get("read"):
            result.update(changed=False, report=read_json(os.path.join(folder, "latest.json")))
            return result
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        report = dict(args["report"])
        if args.get("started") not in (None, ""):
            report["seconds"] = round(time.time() - float(args["started"]), 1)
        watched = this_deploys_watch(args.get("watch"), args.get("config_id"))
        if "watch" in args:
            report["watch"] = watched
        line = watch_line(watched, report.get("watching_until"))
        said = "\n".join(part for part in (args["text"].rstrip("\n"), line) if part) if line else args["text"]
        data = json.dumps(report, indent=4, sort_keys=True, default=str) + "\n"
        text = said.rstrip("\n") + "\n"
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, 0o755)
            paths = []
            # (A deploy still under way is not history yet: only its latest.* say it.)
            history = [] if boolean(args.get("in_progress", False), strict=True) else [
                ("%s-%s.json" % (stamp, args["name"]), data), ("%s-%s.txt" % (stamp, args["name"]), text)]
            latest = [("latest.json", data), ("latest.txt", text)]
            if self._task.check_mode:
                # What a deploy would do is not what the host ran: the last deploy's report stays.
                history, latest = [], [("check.json", data), ("check.txt", text)]
            for name, content in history + latest:
                paths.append(os.path.join(folder, name))
                write_atomically(paths[-1], content)
        except OSError as exc:
            raise AnsibleActionFail("could not write the report in %s: %s" % (folder, exc))
        summary = row(dict({"host": task_vars.get("inventory_hostname")}, **report))
        # The fact says which deploy wrote it and whether it ended well (a later play reads it: the
        # rest of a class after its canary, deploy.yml's last play).
        ok = boolean(args.get("ok", not boolean(args.get("fail", False), strict=True)), strict=True)
        ok = ok and not watch_fails_the_host(watched, boolean(args.get("fail_on_rollback", True), strict=True))
        fact = dict(summary, deploy=str(args["deploy"]) if args.get("deploy") else None, ok=ok, msg=said)
        # (ansible_stats: the job's artifacts, as set_stats gives them; Ansible keeps them only
        # from a task that did not fail, hence `fail` is best left to a task of its own.)
        result.update(changed=False, paths=paths, msg=said, summary=summary, dir=top,
                      ansible_facts={"sglang_deploy": fact}, ansible_stats=artifact(summary))
        if boolean(args.get("fail", False), strict=True):
            result["failed"] = True
        return result
