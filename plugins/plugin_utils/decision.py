# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the deploy's decision actions (sglang_plan, sglang_preflight, sglang_outcome,
sglang_rollback_plan, sglang_group, sglang_tune, sglang_tuned, sglang_canary) share: their arguments validated
against their module's DOCUMENTATION (documented_spec: one spec per action), as plain data, and
`elapsed` in every result. Each says what it decides in `decide()`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

from ansible.plugins.action import ActionBase
from ansible_collections.inferops.sglang.plugins.plugin_utils.documented_spec import documented_spec


def plain(value):
    """Ansible's lazy and tagged containers as the plain dicts and lists the pure code expects."""
    if isinstance(value, dict):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class DecisionAction(ActionBase):
    """An action plugin that decides on the controller (module_utils' pure code), reading the
    host with one module call at most."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    # What DOCUMENTATION cannot say of the options (AnsibleModule's mutually_exclusive,
    # required_one_of, required_by, ...), which the module's description says in words.
    RULES = {}

    def run(self, tmp=None, task_vars=None):
        result = super(DecisionAction, self).run(tmp, task_vars)
        started = time.monotonic()
        checked, args = self.validate_argument_spec(argument_spec=documented_spec(sys.modules[type(self).__module__].__file__),
                                                    **self.RULES)
        result.update(self.decide(plain(args), task_vars))
        result["elapsed"] = round(time.monotonic() - started, 2)
        return result

    def decide(self, args, task_vars):
        raise NotImplementedError

    def call(self, module, module_args, task_vars):
        """A module's answer, as plain data (a failed answer has `failed`)."""
        return plain(self._execute_module(module, module_args=module_args, task_vars=task_vars))
