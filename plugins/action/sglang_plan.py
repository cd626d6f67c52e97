# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of sglang_plan: what this deploy runs (module_utils/service_config.py), one
read of the host when the last one no longer stands (the sglang_facts module), and the plan
(module_utils/deploy_plan.py). The documentation is plugins/modules/sglang_plan.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import pwd
import time

from ansible import constants
from ansible.errors import AnsibleActionFail
from ansible.template import trust_as_template
from ansible_collections.inferops.sglang.plugins.module_utils import canary, deploy_plan, server_group, service_config
from ansible_collections.inferops.sglang.plugins.plugin_utils.decision import DecisionAction, plain
from ansible_collections.inferops.sglang.plugins.plugin_utils.run import run_id

FACTS_MODULE = "inferops.sglang.sglang_facts"


def ansible_managed(name, path):
    """`ansible_managed` as ansible.builtin.template sets it for a template (ansible-core's
    DEFAULT_MANAGED_STR, its {host}, {uid} and {file} filled in, and strftime at the template's
    mtime), made here: ansible-core asks collections to inline what they need of its template
    variables rather than call its internals. The role's templates use no other."""
    stat = os.stat(path)
    try:
        owner = pwd.getpwuid(stat.st_uid).pw_name
    except KeyError:
        owner = stat.st_uid
    text = constants.config.get_config_value("DEFAULT_MANAGED_STR").format(host=os.uname()[1], uid=owner, file=name)
    return time.strftime(text, time.localtime(stat.st_mtime))


def refuse_bad_inputs(host, args):
    """Bad inputs are refused first, under the inventory's names (an envelope that is not a
    mapping included), before anything is made of them."""
    problem = deploy_plan.input_problem(dict(
        args, host=host, variants=list(args["variants"]), variants_given=args["variants"],
        draft=service_config.needs_draft(args["variants"], args["variant"])))
    if problem:
        raise AnsibleActionFail(problem)


class ActionModule(DecisionAction):
    def decide(self, args, task_vars):
        host = task_vars.get("inventory_hostname")
        skip = self.canary_verdict(args)
        refuse_bad_inputs(host, args)
        config = self.config(host, args, task_vars)
        facts, read = self.facts(args, config, task_vars)
        if facts.get("failed"):
            return facts
        try:
            # (A skipped host is not planned: only what it runs is said, in its report.)
            decided = deploy_plan.plan(config["wants"], facts) if skip is None else self.skipped(args, facts, skip)
        except deploy_plan.InputError as exc:
            raise AnsibleActionFail(str(exc))
        desired = config["wants"]["desired"]
        decided.update(
            server_args=config["server_args"], argv=config["argv"], files=config["files"],
            read=read, skip=skip, layout=service_config.layout(args),
            # The texts of the files to write (the plan's `write`), for sglang_state. Not the
            # secrets file's: a task result is printed (-v, callbacks); sglang_state's own
            # no_log option takes it from the API key.
            write_config=dict((name, desired[name]) for name in decided.get("write") or () if name != "secrets"),
            config_id=config["wants"]["config_id"], perf_gate=self.perf_gate(args),
            running_perf=(facts.get("deployed") or {}).get("perf"),
            # The known-good's own start on this host: the health gate's stall limits.
            running_timeline=(facts.get("deployed") or {}).get("timeline"),
            started=args["started"] if args["started"] is not None else time.time(), changed=False)
        facts_out = {"sglang": facts} if read else {}
        if args["server_group"]:
            # What the other nodes check before any of them changes: a node cannot restart alone.
            facts_out["sglang_node_plan"] = {"restart": bool(decided.get("restart")), "variant": args["variant"],
                                             "run": run_id(), "release": os.path.basename(args["release"].rstrip("/"))}
        if facts_out:
            decided["ansible_facts"] = facts_out
        return decided

    @staticmethod
    def perf_gate(args):
        """A node of a server group other than rank 0 has no API to measure: rank 0's gate is the group's."""
        group = args["server_group"]
        if group and not group.get("face"):
            return dict(args["perf_gate"], enabled=False, record=False)
        return args["perf_gate"]

    def config(self, host, args, task_vars):
        """What the deploy runs: the server's arguments, its command line, the files' texts."""
        try:
            server_args = service_config.server_args(args)
        except service_config.ConfigError as exc:
            raise AnsibleActionFail("%s: %s. Nothing was changed." % (host, exc))
        problem = server_group.parallel_problem(args["server_group"], server_args)
        if problem:
            raise AnsibleActionFail(problem)
        files = service_config.paths(args["unit"], args["state_dir"])
        argv, exec_start = service_config.command_line(args, server_args, files)
        wants = self.wants(host, args, self.desired(args, task_vars, exec_start), files)
        return {"server_args": server_args, "argv": argv, "files": files, "wants": wants}

    def facts(self, args, config, task_vars):
        """The host's read: this run's, while it stands, else one read now. Returns (facts, read now)."""
        facts = plain((task_vars.get("ansible_facts") or {}).get("sglang") or {})
        files, wants = config["files"], config["wants"]
        if not deploy_plan.needs_read(facts, args["lock"], service_config.read_files(files, args["release"]),
                                      wants["config_id"]):
            return facts, False
        return self.read(args, files, wants, task_vars), True

    @staticmethod
    def canary_verdict(args):
        """A host of the rest of its class whose canary did not keep the variant is skipped, as
        sglang_canary decided (canary.follow), before anything is read: None when it goes on."""
        said = args["canary_verdict"] or {}
        return None if said.get("go", True) else {"cause": said.get("cause"), "msg": said.get("msg")}

    @staticmethod
    def skipped(args, facts, skip):
        """The plan of a host its class canary stopped: untouched, its report says why."""
        ended = {"outcome": canary.SKIPPED, "cause": skip["cause"], "failure": skip["msg"], "rollback": False,
                 "ok": True, "gate": None, "perf": None, "variant": args["variant"], "unit": args["unit"]}
        return {"before": deploy_plan.before(None, facts), "ended": ended, "converged": False, "earlier": None}

    def desired(self, args, task_vars, exec_start):
        """The unit, env and secrets texts this deploy wants: the role's templates, rendered with
        the task's variables, the ExecStart= line made here and the release's name."""
        extra = {"__sglang_service_exec_start": exec_start, "__sglang_service_release": args["release"]}
        rendered = {name: self.render(template, task_vars, extra)
                    for name, template in (("unit", args["unit_template"]), ("env", args["env_template"]))}
        rendered["secrets"] = service_config.secrets_text(args["api_key"])
        return rendered

    def render(self, name, task_vars, extra):
        """One of the role's templates, as the ansible.builtin.template lookup renders it, but over
        a shallow copy of the variables: the lookup deep-copies every variable of the task first
        (hostvars, the first plan's result...), which cost each plan about 0.1 s of controller CPU."""
        path = self._find_needle("templates", name)
        searchpath = [os.path.dirname(path)]
        for folder in task_vars.get("ansible_search_path", []):
            searchpath += [os.path.join(folder, "templates"), folder]
        variables = dict(task_vars)
        variables.setdefault("ansible_managed", ansible_managed(name, path))
        variables.update(extra)
        templar = self._templar.copy_with_new_env(available_variables=variables, searchpath=searchpath)
        return str(templar.template(trust_as_template(self._loader.get_text_file_contents(path)),
                                    escape_backslashes=False))

    def checker_sha1(self, name):
        with open(self._find_needle("files", name), "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()

    def wants(self, host, args, desired, files):
        """What the plan decides from, besides the host's read (deploy_plan.plan)."""
        return {
            "host": host, "variant": args["variant"], "variants": list(args["variants"]),
            "draft": service_config.needs_draft(args["variants"], args["variant"]),
            "envelope": args["envelope"], "overrides": args["overrides"], "model_path": args["model_path"],
            "draft_model_path": args["draft_model_path"], "release": args["release"], "port": args["port"],
            "desired": desired, "paths": files, "release_marker": service_config.release_marker(args["release"]),
            "checker": {"path": service_config.CHECKER_PATH, "sha1": self.checker_sha1(args["checker"])},
            "unit": args["unit"], "adopt": args["adopt"], "launchers": service_config.launchers(args),
            "retry_rolled_back": args["retry_rolled_back"], "perf_gate": args["perf_gate"],
            "config_id": deploy_plan.config_id(desired),
        }

    def read(self, args, files, wants, task_vars):
        """One read-only call to the host (sglang_facts): what runs, its files' checksums, the
        records, the model configs, the lock."""
        module_args = {
            "unit": args["unit"], "url": "http://%s:%s/health" % (args["host"], args["port"]),
            "state_dir": args["state_dir"], "files": service_config.read_files(files, args["release"]),
            "config_id": wants["config_id"], "models": [p for p in service_config.model_paths(args) if p],
            "layout": service_config.layout(args), "lock": args["lock_path"], "launchers": wants["launchers"]}
        if args["adopt"]:
            module_args["adopt"] = args["adopt"]
        answer = self.call(FACTS_MODULE, module_args, task_vars)
        if answer.get("failed"):
            return answer
        return (answer.get("ansible_facts") or {}).get("sglang") or {}
