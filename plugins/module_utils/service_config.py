# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy runs, from its inputs (private to this collection; pure, no Ansible imports):
the server's arguments, its command line, the files it writes, the model folders it reads,
the service account's layout. The sglang_plan action computes these once, before it reads
the host; deploy_plan then decides from them and from the read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.inferops.sglang.plugins.module_utils import server_group
from ansible_collections.inferops.sglang.plugins.module_utils.server_args import exec_start, to_argv

# Where the argument checker lives on a host (the role installs it, the plan checksums it).
CHECKER_PATH = "/usr/local/lib/inferops-sglang/validate_server_args.py"
# The server argument a variant with a draft model gets from sglang_draft_model_path.
DRAFT_ARG = "speculative_draft_model_path"
# A variant's own key that is not a server argument: it needs a draft model.
DRAFT_KEY = "draft"


class ConfigError(ValueError):
    """A server argument the pinned SGLang version does not have; the message says what to use."""


def needs_draft(variants, variant):
    """Whether a variant serves with a draft model (`draft: true` in sglang_service_variants)."""
    return bool(((variants or {}).get(variant) or {}).get(DRAFT_KEY))


def variant_args(variants, variant, draft_model_path):
    """A variant's server arguments: its own, with the draft model's folder when it has one
    (an unknown variant has none; the plan refuses it by name)."""
    args = dict((k, v) for k, v in ((variants or {}).get(variant) or {}).items() if k != DRAFT_KEY)
    if needs_draft(variants, variant):
        args[DRAFT_ARG] = draft_model_path
    return args


def translate_args(args, version, table):
    """Apply the pinned version's flag changes: renamed keys get their new name, removed ones
    fail with the replacement to use."""
    changes = (table or {}).get(str(version), {})
    out = {}
    for key, value in dict(args).items():
        if key in changes.get("removed", {}):
            raise ConfigError("server argument %s does not exist in SGLang %s: %s"
                              % (key, version, changes["removed"][key]))
        out[changes.get("renamed", {}).get(key, key)] = value
    return out


def server_args(inputs):
    """The server's arguments (SGLang field names): the envelope, the variant's arguments, the
    extra arguments, the host's overrides, its node of a server group, then where it serves
    from and listens, in that order of precedence, translated for the pinned version."""
    requested = dict(inputs.get("envelope") or {})
    for layer in (variant_args(inputs.get("variants"), inputs["variant"], inputs.get("draft_model_path")),
                  inputs.get("extra_args") or {}, inputs.get("overrides") or {}):
        requested.update(layer)
    requested.update(server_group.server_args(inputs.get("server_group")))
    requested.update(model_path=inputs.get("model_path"), host=inputs.get("host"), port=inputs.get("port"))
    return translate_args(requested, inputs.get("version"), inputs.get("flags_by_version"))


def paths(unit, state_dir):
    """The files a deploy writes, by name (deploy_plan.CONFIG)."""
    return {"unit": "/etc/systemd/system/%s" % unit, "env": "%s/sglang.env" % state_dir,
            "secrets": "%s/secrets.yaml" % state_dir}


def secrets_text(api_key):
    """The secrets file SGLang reads with --config (empty without an API key)."""
    return json.dumps({"api-key": api_key}) if api_key else ""


def command_line(inputs, args, files):
    """The server's argv (for the release's own parser) and the unit's ExecStart= line."""
    argv = to_argv(args)
    secrets = ["--config", files["secrets"]] if inputs.get("api_key") else []
    launch = ["%s/bin/python" % inputs.get("release"), "-m", inputs.get("launcher") or "sglang.launch_server"]
    return argv, exec_start([str(word) for word in launch + argv + secrets])


def layout(inputs):
    """The service account and folders sglang_facts checks (known-good/ is sglang_state's)."""
    user, group, state_dir, data_dir = inputs["user"], inputs["group"], inputs["state_dir"], inputs["data_dir"]
    return {"user": user, "group": group, "home": data_dir, "shell": "/usr/sbin/nologin",
            "dirs": [{"path": state_dir, "owner": "root", "group": group, "mode": "0750"},
                     {"path": state_dir + "/rolled-back", "owner": "root", "group": group, "mode": "0750"},
                     {"path": data_dir, "owner": user, "group": group, "mode": "0750"}]}


def model_paths(inputs):
    """The model folders the variant serves from (read once, for the preflight's memory fit)."""
    draft = needs_draft(inputs.get("variants"), inputs["variant"])
    return [inputs.get("model_path")] + ([inputs.get("draft_model_path")] if draft else [])


def launchers(inputs):
    """The modules that launch an SGLang server (a unit to adopt must run one)."""
    launcher = inputs.get("launcher") or "sglang.launch_server"
    return ["sglang.launch_server"] + ([launcher] if launcher != "sglang.launch_server" else [])


def release_marker(release):
    return "%s/.release.json" % release


def read_files(files, release):
    """The files the read checksums: the config files, the release's marker, the checker."""
    return [files[name] for name in ("unit", "env", "secrets")] + [release_marker(release), CHECKER_PATH]
