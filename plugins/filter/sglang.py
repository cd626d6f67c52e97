# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the collection's configuration model into what a host runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sglang_argv
short_description: Server arguments (a dict) to an sglang.launch_server argv
version_added: "0.1.0"
description:
  - Turns a dict of SGLang server arguments (field names such as C(mem_fraction_static)) into
    the argv list, sorted by flag so an unchanged configuration renders the same.
  - C(true) becomes a bare flag, C(false) and C(null) are left out, lists repeat after one flag.
options:
  _input:
    description: The server arguments.
    type: dict
    required: true
author:
  - inferops maintainers (@inferops)
"""

EXAMPLES = r"""
- name: Render the argv
  ansible.builtin.debug:
    msg: "{{ {'tp_size': 2, 'mem_fraction_static': 0.88} | inferops.sglang.sglang_argv }}"
"""

RETURN = r"""
_value:
  description: The argv words.
  type: list
  elements: str
"""

import hashlib

from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.module_utils.memory_fit import estimate, explain
from ansible_collections.inferops.sglang.plugins.module_utils.server_args import (
    ServerArgsError, exec_start, to_argv,
)


def sglang_argv(args):
    try:
        return to_argv(dict(args))
    except ServerArgsError as exc:
        raise AnsibleFilterError(str(exc))


def sglang_exec_start(argv):
    """An argv list as one systemd ExecStart= line (% and $ escaped, quoted where needed)."""
    return exec_start([str(word) for word in argv])


def sglang_release_id(version, patch_sha256s):
    """`<version>-<sha256 of the ordered patch checksums, 12 hex>`: a release changes name
    whenever the version or any patch (or their order) changes."""
    digest = hashlib.sha256("\n".join(patch_sha256s).encode("utf-8")).hexdigest()
    return "%s-%s" % (version, digest[:12])


def sglang_translate_args(args, version, table):
    """Apply the pinned version's flag changes: renamed keys get their new name, removed
    ones fail with the replacement to use."""
    changes = (table or {}).get(str(version), {})
    out = {}
    for key, value in dict(args).items():
        if key in changes.get("removed", {}):
            raise AnsibleFilterError("server argument %s does not exist in SGLang %s: %s"
                                     % (key, version, changes["removed"][key]))
        out[changes.get("renamed", {}).get(key, key)] = value
    return out


def sglang_fit(model_cfg, draft_cfg, envelope, gpu_memory_mib):
    result = estimate(model_cfg, draft_cfg or None, envelope, gpu_memory_mib)
    result["context"] = envelope.get("context_length")
    result["explanation"] = explain(result)
    return result


class FilterModule(object):
    def filters(self):
        return {
            "sglang_argv": sglang_argv,
            "sglang_exec_start": sglang_exec_start,
            "sglang_release_id": sglang_release_id,
            "sglang_translate_args": sglang_translate_args,
            "sglang_fit": sglang_fit,
        }
