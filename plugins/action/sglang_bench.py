# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_bench: a workload_file is read and checked here, on the controller
where it lives (as ansible.builtin.copy finds its src), and sent to the module as its requests.
A file that does not parse fails the task before any request is sent, naming the line and the
field (module_utils/workload.py), never a line of the user's traffic. The documentation is
plugins/modules/sglang_bench.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.inferops.sglang.plugins.module_utils import workload


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if args.get("workload_file"):
            args["workload"] = self.read_workload(args.pop("workload_file"))
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result.update(self._execute_module("inferops.sglang.sglang_bench", module_args=args, task_vars=task_vars,
                                           wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def read_workload(self, name):
        """The requests of the controller's workload file `name` (found as copy finds its src)."""
        try:
            path = self._find_needle("files", name)
        except AnsibleError as exc:
            raise AnsibleActionFail("workload_file %s: %s" % (name, exc))
        try:
            if os.path.getsize(path) > workload.LIMIT_BYTES:
                raise AnsibleActionFail("workload_file %s is %d bytes, above the limit of %d: sample it to fewer "
                                        "requests first" % (path, os.path.getsize(path), workload.LIMIT_BYTES))
            with open(path, "rb") as source:
                text = source.read()
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("workload_file %s cannot be read: %s" % (path, exc.strerror or exc))
        try:
            return [workload.compact(request) for request in workload.read(text, "workload_file %s" % path)]
        except workload.WorkloadError as exc:
            raise AnsibleActionFail(str(exc))
