# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server arguments as data -> `sglang.launch_server` argv, quoted for systemd.

Pure Python (no Ansible imports). Keys are SGLang's field names (`mem_fraction_static`);
values are scalars, lists (repeated values after one flag) or booleans (a bare flag when
true, omitted when false). None means "leave SGLang's default".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# systemd's ExecStart expands these; a literal one must be doubled.
SYSTEMD_SPECIALS = (("%", "%%"), ("$", "$$"))


class ServerArgsError(ValueError):
    """A key or value that cannot become a command-line flag."""


def flag(key):
    if not KEY_RE.match(key or ""):
        raise ServerArgsError("server argument %r is not an SGLang field name (use lower_snake_case, "
                              "e.g. mem_fraction_static)" % (key,))
    return "--" + key.replace("_", "-")


def _scalar(key, value):
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise ServerArgsError("server argument %s has a value of type %s; use a string, number, boolean or "
                          "list" % (key, type(value).__name__))


def to_argv(args):
    """Flags in a stable order (sorted by name) so an unchanged config renders identically."""
    argv = []
    for key in sorted(args):
        value = args[key]
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag(key))
        elif isinstance(value, (list, tuple)):
            argv.append(flag(key))
            argv.extend(_scalar(key, v) for v in value)
        else:
            argv.extend([flag(key), _scalar(key, value)])
    return argv


def systemd_quote(word):
    """One argv word for ExecStart=: doubled % and $, double-quoted when it needs it."""
    for char, escaped in SYSTEMD_SPECIALS:
        word = word.replace(char, escaped)
    if word and not re.search(r"[\s\"'\\;]", word):
        return word
    return '"%s"' % word.replace("\\", "\\\\").replace('"', '\\"')


def exec_start(argv):
    return " ".join(systemd_quote(word) for word in argv)
