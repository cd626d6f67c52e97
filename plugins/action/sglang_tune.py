# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_tune: the tune's next try from the tries so far (module_utils/tune.py),
and, once it is over, the class's result written where the inventory reads it. The
documentation is plugins/modules/sglang_tune.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.action.sglang_report import write_atomically
from ansible_collections.inferops.sglang.plugins.module_utils import fleet_summary, tune
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction


class ActionModule(DecisionAction):
    _requires_connection = False

    def decide(self, args, task_vars):
        problems = tune.bounds_problems(args["bounds"], args["min_context"], args["envelope"])
        if not args["variants"]:
            problems.append("sglang_tune_variants is empty: name the variants to try, such as [ddtree, dflash]")
        if problems:
            raise AnsibleActionFail("the tune of class %s cannot start: %s" % (args["host_class"], "; ".join(problems)))
        attempts = list(args["attempts"])
        if args["last"]:
            last = args["last"]
            attempts.append(tune.attempt_from_report(args["report"] or {}, last["variant"], last["envelope"],
                                                     last.get("why", "")))
        started = args["started"] or time.time()
        left = args["time_limit"] - (time.time() - started)
        planned = tune.plan(args["variants"], args["envelope"], args["bounds"], args["min_context"], attempts,
                            args["max_tries"], left)
        if args["finish"] and not planned["done"]:
            planned = dict(planned, next=None, done=True, stopped=planned["stopped"] or "the tune was stopped")
        first = tune.first_envelope(args["envelope"], args["bounds"])
        out = dict(planned, attempts=attempts, started=started, changed=False,
                   planned=["%s %s: %s, then down by what each start says (at most %d tries, %.0f s)"
                            % (args["host_class"], v, tune.envelope_text(first), args["max_tries"], args["time_limit"])
                            for v in args["variants"]])
        if planned["done"]:
            out.update(self.result(dict(args, started=started), planned, attempts, task_vars))
        return out

    def result(self, args, planned, attempts, task_vars):
        """The class's result (and its file, with `dir`), and the table."""
        chosen = tune.winner(planned["variants"], args["known_good"])
        data = dict(chosen, **{"class": args["host_class"], "known_good": args["known_good"],
                               "bounds": args["bounds"], "min_context": args["min_context"], "attempts": attempts,
                               "stopped": planned["stopped"], "seconds": round(time.time() - args["started"], 1),
                               "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        summary = tune.summary_row(task_vars.get("inventory_hostname"), data, time.time() - args["started"])
        out = {"result": data, "table": tune.table([data]).splitlines(), "path": None, "summary": summary,
               "ansible_stats": fleet_summary.artifact(summary)}
        if args["dir"] and not self._task.check_mode:
            folder = os.path.abspath(os.path.expanduser(args["dir"]))
            path = os.path.join(folder, "%s.json" % args["host_class"])
            try:
                if not os.path.isdir(folder):
                    os.makedirs(folder, 0o755)
                write_atomically(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
            except OSError as exc:
                raise AnsibleActionFail("could not write the tune's result in %s: %s" % (folder, exc))
            out["path"] = path
        return out
