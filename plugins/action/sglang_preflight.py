# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_preflight: one read of the GPUs (the gpu_facts module, with the
model configs no earlier read holds) and the verdict (module_utils/preflight.py). The
documentation is plugins/modules/sglang_preflight.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import preflight, service_config
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction

GPU_MODULE = "inferops.sglang.gpu_facts"


class ActionModule(DecisionAction):
    def decide(self, args, task_vars):
        # (A variant without a draft model is not held to one: sglang_service_variants' draft: true.)
        draft = args["draft_model_path"] if service_config.needs_draft(args["variants"], args["variant"]) else ""
        wanted = [p for p in (args["model_path"], draft) if p]
        answer = self.call(GPU_MODULE, {"models": [p for p in wanted if p not in args["models"]]}, task_vars)
        if answer.get("failed"):
            return answer
        found = answer.get("ansible_facts") or {}
        models = dict(args["models"], **(found.get("model_configs") or {}))
        verdict = preflight.preflight(
            found["gpu"], task_vars.get("inventory_hostname"), args["host_class"], args["gpu_model"],
            args["envelope"], models, args["model_path"], draft, args["attention_backend_sm"], args["check_fit"],
            args["unit"], args["adopt"], args["nnodes"])
        fit = verdict["fit"]
        said = {"changed": False, "problems": verdict["problems"], "fit": fit, "ansible_facts": {"gpu": found["gpu"]},
                "msg": fit["explanation"] if fit else "memory fit not checked"}
        if verdict["problems"]:
            said.update(failed=True, msg="%s Nothing was changed." % " ".join(verdict["problems"]))
        return said
