# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking over a hand-made SGLang unit (private to this collection; pure, no Ansible imports).

A host brought under the collection often runs a unit somebody wrote by hand
(`sglang-qwen.service`). With `sglang_service_adopt` naming it, the first deploy keeps that
unit, its drop-ins and the environment files it reads, byte for byte, as the known-good
service; stops and disables it; and starts the managed unit. A failed gate (or
playbooks/rollback.yml later) puts the hand-made unit back under its own name, enabled and
started. sglang_facts reads the unit (`read`); the plan asks `problem()` and `record()`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# systemctl show properties of a unit to adopt (EnvironmentFiles repeats, one line per file).
PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "MainPID", "InvocationID",
              "FragmentPath", "DropInPaths", "EnvironmentFiles", "ExecStart")
# SGLang's own launcher; the deploy adds the one it runs (the lab's stand-in).
LAUNCHERS = ("sglang.launch_server",)
# SGLang's defaults for the address (server_args.py: host 127.0.0.1, port 30000).
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 30000


def parse_show_all(text):
    """`systemctl show` output as a dict of lists: a property systemd prints once per value
    (EnvironmentFiles) keeps every value."""
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props.setdefault(key, []).append(value)
    return props


def environment_files(values):
    """The files of systemd's EnvironmentFiles lines (`/etc/default/x (ignore_errors=no)`):
    [(path, optional)]."""
    found = []
    for value in values or ():
        path, _sep, flags = value.rpartition(" (")
        if not _sep:
            path, flags = value, ""
        if path:
            found.append((path, "ignore_errors=yes" in flags))
    return found


def _last(props, key):
    return (props.get(key) or [""])[-1]


def unit_files(props):
    """The files that make the unit, each [(path, kind, optional)]: its fragment, its drop-ins
    and the environment files it reads (an optional one, `EnvironmentFile=-...`, may be missing)."""
    fragment, dropins = _last(props, "FragmentPath"), _last(props, "DropInPaths")
    files = [(fragment, "unit", False)] if fragment else []
    files += [(path, "dropin", False) for path in dropins.split()]
    # (A hand-made environment file may hold tokens: it is never shown in a diff.)
    files += [(path, "environment_file", optional) for path, optional in environment_files(props.get("EnvironmentFiles"))]
    return files


def _option(argv, name):
    """The value of `--name V` or `--name=V` in argv, or None."""
    for at, word in enumerate(argv):
        if word == name and at + 1 < len(argv):
            return argv[at + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def server_address(argv):
    """(host, port) the server listens on, from its command line (SGLang's defaults for what
    it does not say); port None when it is not a number (an environment variable)."""
    host = _option(argv, "--host") or DEFAULT_HOST
    port = _option(argv, "--port") or str(DEFAULT_PORT)
    if host in ("0.0.0.0", "::", ""):
        host = DEFAULT_HOST
    return host, int(port) if port.isdigit() else None


def launcher(argv, launchers):
    """The SGLang launcher module the command line runs (`-m sglang.launch_server`, or the
    module as a word), or None when it runs none."""
    for word in argv:
        name = word.rsplit("/", 1)[-1]
        for module in launchers:
            if word == module or name in (module, module + ".py"):
                return module
    return None


def variant(argv):
    """The variant's name as the collection says it: the speculative algorithm, lower case."""
    return (_option(argv, "--speculative-algorithm") or "none").lower()


def adopted_before(unit, facts):
    """Whether an earlier deploy adopted this unit (what runs, or the known-good, says so)."""
    deployed = facts.get("deployed") or {}
    known = (facts.get("known_good_record") or {}).get("adopted") or {}
    return deployed.get("adopted_from") == unit or known.get("unit") == unit


def problem(wants, facts):
    """Why the unit named by `wants["adopt"]` cannot be adopted, said as the fix; None when
    it can, or when nothing is to be adopted (none named, or adopted by an earlier deploy
    and stopped since)."""
    name, managed, host = wants.get("adopt"), wants.get("unit", "sglang.service"), wants.get("host", "?")
    if not name:
        return None
    seen = facts.get("adopted") or {}
    fix = "Fix sglang_service_adopt (or remove it). Nothing was changed."
    if name == managed:
        return "%s: sglang_service_adopt names %s, the unit this deploy manages: name the hand-made unit. %s" % (
            host, name, fix)
    if seen.get("load_state") != "loaded":
        return "%s: sglang_service_adopt names %s, but the host has no such unit (%s). %s" % (
            host, name, seen.get("load_state") or "not read", fix)
    if seen.get("active_state") != "active" and adopted_before(name, facts):
        return None
    if seen.get("active_state") != "active":
        return ("%s: %s is %s/%s: only a running, healthy server can be adopted as the known-good. Start it "
                "(systemctl start %s) and check it, or remove sglang_service_adopt. Nothing was changed."
                % (host, name, seen.get("active_state"), seen.get("sub_state"), name))
    if not seen.get("launcher"):
        return ("%s: %s runs no SGLang server: its ExecStart (%s) runs neither of %s. Only an SGLang server "
                "can be adopted. %s" % (host, name, " ".join(seen.get("argv") or ()) or "none",
                                        ", ".join(wants.get("launchers") or LAUNCHERS), fix))
    if seen.get("missing_files"):
        return "%s: %s reads %s, which the host lacks: it cannot be kept byte for byte. %s" % (
            host, name, ", ".join(seen["missing_files"]), fix)
    if not seen.get("healthy"):
        return ("%s: %s is not healthy (%s answered %s): only a healthy server can be the known-good. Fix it, "
                "or remove sglang_service_adopt. Nothing was changed."
                % (host, name, seen.get("url"), seen.get("health_said") or "nothing"))
    if ((facts.get("unit") or {}).get("active_state")) == "active":
        return ("%s: both %s and %s run: stop the one that should not (systemctl stop ...) before adopting. "
                "Nothing was changed." % (host, name, managed))
    return None


def adopting(wants, facts):
    """The unit this deploy adopts (running, healthy, checked by problem()), or None."""
    name = wants.get("adopt")
    seen = facts.get("adopted") or {}
    if not name or seen.get("unit") != name or seen.get("active_state") != "active":
        return None
    return seen


def record(seen):
    """The known-good record of an adopted unit: what to put back, where, and how to start it."""
    host, port = seen["address"]
    return {
        "variant": seen.get("variant"),
        "adopted": {"unit": seen["unit"], "enabled": seen.get("unit_file_state") == "enabled",
                    "files": [dict((k, f[k]) for k in ("name", "path", "kind", "mode", "uid", "gid"))
                              for f in seen["files"]]},
        "server_args": {"host": host, "port": port},
        "proven_healthy_by": seen.get("url"),
        "invocation_id": seen.get("invocation_id"),
        "has_secrets": False,
    }


def display_name(known):
    """How the diagnosis names a known-good service: its variant, and its own unit when it
    is an adopted one."""
    name = str((known or {}).get("variant") or "known-good").upper()
    adopted = (known or {}).get("adopted")
    return "%s (%s, adopted)" % (name, adopted["unit"]) if adopted else name
