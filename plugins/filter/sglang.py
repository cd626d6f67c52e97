# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inferops maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that transform the collection's data (each a pure function of its arguments). What a
deploy decides is not here: the actions sglang_plan, sglang_preflight and sglang_outcome
decide, from inputs written out in their tasks (module_utils/deploy_plan.py and friends)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter has its own documentation beside this file: plugins/filter/<filter>.yml.

# Each filter imports the module_utils it needs when it runs: every task of every host is
# templated in a fresh worker process of ansible-playbook, and one that only names the release
# should not pay for importing the deploy's decisions and diagnoses (some 45 ms a worker).
# pylint: disable=import-outside-toplevel

from ansible.errors import AnsibleFilterError


def sglang_release_id(version, patch_sha256s, install=None):
    """`<version>-<12 hex>` of the patch checksums and what the build installs."""
    from ansible_collections.inferops.sglang.plugins.module_utils import release
    return release.release_id(str(version), [str(s) for s in patch_sha256s], _plain(install))


def sglang_git_commit(ls_remote, ref):
    """The commit `git ls-remote` names for a ref; fails when the remote has no such ref."""
    from ansible_collections.inferops.sglang.plugins.module_utils import release
    commit = release.git_commit(ls_remote, str(ref))
    if commit is None:
        raise AnsibleFilterError("the git remote has no ref %s: set sglang_build_git_ref to a branch, tag or commit "
                                 "it has" % ref)
    return commit


def _plain(value):
    """Ansible's lazy containers as the plain dicts and lists the pure code expects."""
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def sglang_perf_baseline(run, plan, measured_at):
    """The performance gate's baseline from sglang_bench's run on the running service (or
    the figure the plan found recorded with it)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan
    from ansible_collections.inferops.sglang.plugins.module_utils.sglang_bench import settle_baseline
    plan = _plain(plan)
    return settle_baseline(deploy_plan.ran(_plain(run)), plan["recorded_baseline"], plan["running_variant"].upper(),
                           measured_at)


def sglang_status(facts, host, last=None):
    """One host's status line (playbooks/status.yml; diagnosis.status)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import diagnosis
    return diagnosis.status(_plain(facts) or {}, str(host), _plain(last) or {})


def sglang_task_result(result):
    """A module's result without Ansible's bookkeeping keys (ansible_facts, invocation, ...)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan
    return deploy_plan.task_result(_plain(result))


def sglang_prunable(found, keep, in_use):
    """The old release folders to remove (never one in use)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import release
    return release.prunable(_plain(found), keep, _plain(in_use))


def sglang_deploy_phases(play_hosts, classes, enabled=False, earlier=None, server_groups=None):
    """Where each host deploys: its class's canary or the rest (canary.phases); `earlier`: the
    rows of the job that deployed the canaries (sglang_canary_outcomes), or None;
    `server_groups`: the hosts' server groups (a node of one is never a canary)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import canary
    return canary.phases([str(h) for h in play_hosts], [str(c or "") for c in classes], bool(enabled),
                         _plain(earlier) if earlier is not None else None,
                         [str(g or "") for g in server_groups or []])


def sglang_deploy_batches(play_hosts, server_groups, serial=1):
    """The hosts in an order that keeps each server group together and the `serial` sizes that
    put each group whole in one batch, a group counted as one host (server_group.batches)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import server_group
    return server_group.batches([str(h) for h in play_hosts], [str(g or "") for g in server_groups or []],
                                _plain(serial))


def sglang_install_source(install, wheelhouse=""):
    """Where a release build installs from (the package index, the wheelhouse, git), for its failures."""
    from ansible_collections.inferops.sglang.plugins.module_utils import release
    return release.install_source(_plain(install) or {}, wheelhouse)


def sglang_failure_text(result):
    """A failed task's output, error and message in one line."""
    from ansible_collections.inferops.sglang.plugins.module_utils import release
    return release.failure_text(_plain(result))


def sglang_deploy_diagnosis(result, host, rollback=None):
    """The text an operator reads first, from a deploy's outcome (sglang_outcome's result) and
    its rollback (the gate, the known-good's name, the leftovers; diagnosis.deploy_diagnosis)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import diagnosis
    return diagnosis.deploy_diagnosis(_plain(result), str(host), _plain(rollback) or {})


def sglang_rollback_result(rollback, host, unit, host_class=None, check=False):
    """A rollback's last word, {ok, msg} (diagnosis.rollback_result), and its row of the job's
    artifacts (fleet_summary.rollback_row); `rollback.restored` false: the known-good already
    served and was left alone; `check`: a check run (ansible_check_mode), which says what it
    would restore."""
    from ansible.module_utils.parsing.convert_bool import boolean
    from ansible_collections.inferops.sglang.plugins.module_utils import diagnosis, fleet_summary
    rollback = _plain(rollback) or {}
    restored = bool(rollback.get("restored", True))
    said = diagnosis.rollback_result(rollback, str(host), str(unit), restored, boolean(check, strict=False))
    return dict(said, row=fleet_summary.rollback_row(str(host), host_class, rollback, restored, said))


class FilterModule(object):
    def filters(self):
        return {
            "sglang_release_id": sglang_release_id,
            "sglang_git_commit": sglang_git_commit,
            "sglang_install_source": sglang_install_source,
            "sglang_prunable": sglang_prunable,
            "sglang_failure_text": sglang_failure_text,
            "sglang_deploy_phases": sglang_deploy_phases,
            "sglang_deploy_batches": sglang_deploy_batches,
            "sglang_status": sglang_status,
            "sglang_task_result": sglang_task_result,
            "sglang_perf_baseline": sglang_perf_baseline,
            "sglang_deploy_diagnosis": sglang_deploy_diagnosis,
            "sglang_rollback_result": sglang_rollback_result,
        }
