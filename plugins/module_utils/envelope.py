# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving envelope's values checked by type and range before anything on a host changes,
each problem said under the user's own variable name with the form to use. Names SGLang
knows but this table does not are left to the release's own parser (the deploy's validation).
Pure Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# SGLang 0.5.23 ServerArgs fields that are lengths or counts: whole numbers of at least 1.
COUNTS = ("context_length", "max_running_requests", "max_total_tokens", "max_prefill_tokens",
          "cuda_graph_max_bs", "cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill", "tp_size", "dp_size",
          "pp_size", "ep_size", "speculative_num_steps", "speculative_num_draft_tokens", "speculative_eagle_topk",
          "speculative_ddtree_budget")
# Fractions strictly between 0 and 1.
FRACTIONS = ("mem_fraction_static",)
SUFFIX = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM])\s*$")


def _whole(value):
    """The integer a value means, or None. (A bool is not a count.)"""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        return int(value)
    return None


def _count_problem(where, value):
    number = _whole(value)
    if number is None:
        suffixed = SUFFIX.match(value) if isinstance(value, str) else None
        if suffixed:
            times = 1024 if suffixed.group(2) in "kK" else 1024 * 1024
            return "%s: %r is not a whole number; write %d (%s = %s x %d)" % (
                where, value, int(float(suffixed.group(1)) * times), value.strip(), suffixed.group(1), times)
        return "%s: %r is not a whole number; write an integer of at least 1" % (where, value)
    if number < 1:
        return "%s: %s must be at least 1" % (where, number)
    return None


def _fraction_problem(where, value):
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        return "%s: %r is not a number; write a fraction of GPU memory between 0 and 1, such as 0.88" % (where, value)
    if not 0 < number < 1:
        return "%s: %s must be between 0 and 1 (exclusive), such as 0.88" % (where, number)
    return None


CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _control_problem(where, value):
    """A value written into the unit's ExecStart= line must be one line of printable text: a
    newline there ends the line (systemd then refuses the unit, after the host was touched)."""
    if isinstance(value, str) and CONTROL.search(value):
        return "%s: %r carries a control character (a newline or a tab?); write it on one line" % (where, value)
    return None


def _value_problem(where, key, value):
    problem = _control_problem(where, str(key)) or _control_problem(where, value)
    if problem or key not in COUNTS + FRACTIONS:
        return problem
    return _count_problem(where, value) if key in COUNTS else _fraction_problem(where, value)


def problems(envelope, overrides, names=("sglang_envelope", "sglang_envelope_overrides"), layers=()):
    """Every problem of the server's arguments, each under the variable that gives its value;
    an empty list when there is none. `layers`: more (name, mapping) between the envelope and
    the host's overrides, in server_args' order of precedence (the variant's arguments, the
    extra arguments). tp_size and mem_fraction_static are required (in one or the other)."""
    given = [(names[0], envelope)] + list(layers) + [(names[1], overrides)]
    said = ["%s must be a mapping of SGLang field names to values (got a %s)" % (name, type(value).__name__)
            for name, value in given if value is not None and not isinstance(value, dict)]
    if said:
        return said
    where = {}
    merged = {}
    for name, layer in given:
        for key, value in (layer or {}).items():
            merged[key], where[key] = value, "%s.%s" % (name, key)
    for key in sorted(merged):
        problem = _value_problem(where[key], key, merged[key])
        if problem:
            said.append(problem)
    for key in ("tp_size", "mem_fraction_static"):
        if key not in merged:
            said.append("%s is not set: give it in %s (or %s for this host)" % (key, names[0], names[1]))
    return said


def input_problems(envelope, overrides, model_path, variant, draft_model_path, needs_draft, layers=()):
    """Everything wrong with a deploy's inputs, before any host changes: the server arguments'
    problems (the envelope, `layers`, the overrides), then a missing model path or the draft
    model a variant needs (`needs_draft`: its `draft: true` in sglang_service_variants)."""
    said = problems(envelope, overrides, layers=layers)
    for name, path in (("sglang_model_path", model_path), ("sglang_draft_model_path", draft_model_path)):
        said += [p for p in [_control_problem(name, path)] if p]
    if not model_path:
        said.append("no model path given (sglang_model_path)")
    if needs_draft and not draft_model_path:
        said.append("%s needs a draft model: set sglang_draft_model_path" % variant)
    return said
