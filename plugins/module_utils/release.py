# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A release's name (private to this collection; pure): it changes whenever anything that
changes what gets installed does, so a changed build is never mistaken for an old one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

COMMIT = re.compile(r"^[0-9a-f]{40}$")


def release_id(version, patch_sha256s, install=None):
    """`<version>-<12 hex>`: the hex digest covers the ordered patch checksums and what the
    build installs (`install`: source, git URL and commit, extra packages, pip arguments,
    no-deps, the wheelhouse's wheels; any JSON-able dict)."""
    text = "\n".join(patch_sha256s)
    if install:
        text += "\n" + json.dumps(install, sort_keys=True)
    return "%s-%s" % (version, hashlib.sha256(text.encode("utf-8")).hexdigest()[:12])


def git_commit(ls_remote, ref):
    """The commit `git ls-remote URL REF` names (a moving ref such as a branch resolves to
    what it points at now); `ref` itself when it is a commit already. None when the remote
    has no such ref."""
    if COMMIT.match(ref or ""):
        return ref
    lines = [line.split() for line in (ls_remote or "").splitlines() if line.strip()]
    # An annotated tag lists itself and, peeled (^{}), the commit it points at.
    peeled = [words[0] for words in lines if len(words) > 1 and words[1].endswith("^{}")]
    found = peeled or [words[0] for words in lines if words]
    return found[0] if found else None


def prunable(found, keep, in_use):
    """The release folders to remove: `found` (ansible.builtin.find's files: path, mtime)
    beyond the `keep` newest, never one in `in_use` (the new, running and known-good ones)."""
    newest_first = sorted(found, key=lambda entry: entry["mtime"], reverse=True)
    protected = set(path for path in in_use if path)
    return [entry["path"] for entry in newest_first[int(keep):] if entry["path"] not in protected]


def failure_text(result):
    """What a failed task said, in one line: its output, its error, its failed loop items'
    messages and its own message, blank parts left out."""
    result = result or {}
    items = [item.get("msg", "") for item in result.get("results") or () if item.get("failed")]
    parts = [result.get("stdout"), result.get("stderr")] + items + [result.get("msg")]
    return "; ".join(str(part).strip() for part in parts if part and str(part).strip())


def install_source(install, wheelhouse=""):
    """Where a build installs from, as a failure names it. `install`: the release's install
    record (source, git, pip_args); `wheelhouse`: the controller's folder."""
    args = list(install.get("pip_args") or ())
    if install.get("source") == "git":
        git = install.get("git") or {}
        return "git %s at %s" % (git.get("url"), git.get("commit"))
    if install.get("source") == "wheelhouse":
        return "the wheelhouse %s (no index)" % (wheelhouse or "?")
    index = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("--index-url", "-i")), None)
    index = index or next((arg.split("=", 1)[1] for arg in args if arg.startswith("--index-url=")), None)
    extra = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--extra-index-url"]
    where = ("the package index " + index) if index else "pip's default index (PyPI, or the host's pip.conf)"
    return where + "".join(" and " + url for url in extra)
