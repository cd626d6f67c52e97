# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin's argument spec, read from its module's DOCUMENTATION (the stub that
ansible-doc shows), as ansible.utils' actions validate theirs: one spec per action, written once,
so the documented options are the checked ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os
import re

import yaml

# What of an option's documentation the argument spec takes (its description is the reader's).
SPEC_KEYS = ("type", "required", "default", "choices", "elements", "aliases")
# Options whose values are never logged, by name (a module's documentation has no no_log).
SECRET = re.compile(r"(^|_)(api_key|password|secret|token)$")
_SPECS = {}


def spec_from_options(options):
    """AnsibleModule's argument_spec for documented `options` (suboptions nested as `options`)."""
    spec = {}
    for name, doc in (options or {}).items():
        entry = dict((key, doc[key]) for key in SPEC_KEYS if key in doc)
        if SECRET.search(name):
            entry["no_log"] = True
        if doc.get("suboptions"):
            entry["options"] = spec_from_options(doc["suboptions"])
        spec[name] = entry
    return spec


def module_path(action_file):
    """The module stub beside an action plugin: plugins/modules/<its name>.py."""
    plugins, name = os.path.split(os.path.dirname(os.path.abspath(action_file)))[0], os.path.basename(action_file)
    return os.path.join(plugins, "modules", os.path.splitext(name)[0] + ".py")


def documentation(path):
    """A module's DOCUMENTATION, parsed, read from its source as ansible-doc reads it (the module
    is not imported: nothing of it runs on the controller)."""
    with open(path) as source:
        tree = ast.parse(source.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            # (libyaml's loader when there is one: the pure-Python one costs each worker ~5 ms a task.)
            return yaml.load(node.value.value, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    raise ValueError("%s has no DOCUMENTATION" % path)


def documented_spec(action_file):
    """The argument spec of the action plugin in `action_file` (its __file__), from its module
    stub's DOCUMENTATION; read once per process."""
    if action_file not in _SPECS:
        _SPECS[action_file] = spec_from_options(documentation(module_path(action_file)).get("options"))
    return _SPECS[action_file]
