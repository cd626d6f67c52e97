# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_tuned: each class's variant and envelope from its tune's result
(module_utils/tune.py learned). The documentation is plugins/modules/sglang_tuned.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible_collections.inferops.sglang.plugins.module_utils import tune
from ansible_collections.inferops.sglang.plugins.module_utils.host_state import read_json
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction


class ActionModule(DecisionAction):
    _requires_connection = False

    def decide(self, args, task_vars):
        folder = os.path.abspath(os.path.expanduser(args["dir"]))
        results = dict((c, read_json(os.path.join(folder, "%s.json" % c))) for c in set(args["classes"]) if c)
        chosen, problems = tune.learned(results, args["classes"], folder)
        if problems:
            raise AnsibleActionFail("; ".join(problems))
        return {"changed": False, "tuned": chosen, "dir": folder}
