"""A release's name covers everything that changes what gets installed (module_utils/release.py)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import release
from ansible_collections.inferops.sglang.plugins.module_utils.release import (
    failure_text, git_commit, prunable, release_id,
)

PATCHES = ["a" * 64, "b" * 64]
BASE = {"source": "pypi", "git": None, "wheels": None, "extra_packages": [], "no_deps": False, "pip_args": []}


@pytest.mark.parametrize("change", [
    {"source": "wheelhouse"},
    {"source": "git", "git": {"url": "https://example.invalid/sglang.git", "commit": "1" * 40}},
    {"extra_packages": ["sglang-sim"]},
    {"no_deps": True},
    {"pip_args": ["--index-url", "http://127.0.0.1:8080/simple"]},
    {"wheels": ["sglang-0.5.23-py3-none-any.whl"]},
], ids=["source", "git url and commit", "extra packages", "no deps", "pip args", "the wheelhouse's wheels"])
def test_what_is_installed_changes_the_release(change):
    assert release_id("0.5.23", PATCHES, dict(BASE, **change)) != release_id("0.5.23", PATCHES, BASE)


def test_the_same_build_has_the_same_name_and_patches_still_count():
    assert release_id("0.5.23", PATCHES, dict(BASE)) == release_id("0.5.23", PATCHES, dict(reversed(BASE.items())))
    assert release_id("0.5.23", PATCHES[::-1], BASE) != release_id("0.5.23", PATCHES, BASE)
    assert release_id("0.5.23", PATCHES, BASE).startswith("0.5.23-") and len(release_id("0.5.23", [], BASE)) == 19


def test_a_new_commit_on_a_branch_is_a_new_release():
    old = dict(BASE, source="git", git={"url": "u", "commit": git_commit("1" * 40 + "\trefs/heads/main\n", "main")})
    new = dict(BASE, source="git", git={"url": "u", "commit": git_commit("2" * 40 + "\trefs/heads/main\n", "main")})
    assert release_id("0.5.23", [], old) != release_id("0.5.23", [], new)


@pytest.mark.parametrize("ls_remote, ref, expected", [
    ("1" * 40 + "\trefs/heads/main\n", "main", "1" * 40),
    ("3" * 40 + "\trefs/tags/v1\n" + "4" * 40 + "\trefs/tags/v1^{}\n", "v1", "4" * 40),
    ("", "5" * 40, "5" * 40),
    ("", "no-such-branch", None),
], ids=["branch", "annotated tag: the commit it points at", "a commit already", "no such ref"])
def test_git_commit(ls_remote, ref, expected):
    assert git_commit(ls_remote, ref) == expected


def test_prunable_keeps_the_newest_and_those_in_use():
    found = [{"path": "/r/%d" % n, "mtime": n} for n in range(6)]
    assert prunable(found, 3, ["/r/0", "", "/r/5"]) == ["/r/2", "/r/1"]
    assert prunable(found, 10, []) == []


def test_failure_text_joins_what_the_task_said():
    result = {"stdout": "out\n", "stderr": "", "msg": "non-zero return code",
              "results": [{"failed": True, "msg": "item broke"}, {"failed": False, "msg": "fine"}]}
    assert failure_text(result) == "out; item broke; non-zero return code"
    assert failure_text({}) == ""


@pytest.mark.parametrize("install, wheelhouse, said", [
    ({"source": "pypi", "pip_args": ["--index-url", "http://198.18.1.1:38100/simple"]}, "",
     "the package index http://198.18.1.1:38100/simple"),
    ({"source": "pypi", "pip_args": ["--index-url=http://i/simple", "--extra-index-url", "http://j/simple"]}, "",
     "the package index http://i/simple and http://j/simple"),
    ({"source": "pypi", "pip_args": []}, "", "pip's default index (PyPI, or the host's pip.conf)"),
    ({"source": "wheelhouse", "pip_args": []}, "build/wheelhouse", "the wheelhouse build/wheelhouse (no index)"),
    ({"source": "git", "git": {"url": "https://git/sglang", "commit": "abc"}}, "", "git https://git/sglang at abc"),
], ids=["an index", "an index and an extra one", "pip's default", "the wheelhouse", "git"])
def test_install_source(install, wheelhouse, said):
    assert release.install_source(install, wheelhouse) == said
