"""After sglang_build alone (run twice): one release folder, complete, patched, recorded, and
no half-built folder left."""
from __future__ import annotations

import json

RELEASES = "/opt/sglang/releases"
SITE = "lib/python3.11/site-packages"


def release(host) -> str:
    names = host.check_output("ls %s" % RELEASES).split()
    assert len(names) == 1 and names[0].startswith("0.5.23-"), names
    return "%s/%s" % (RELEASES, names[0])


def test_one_release_and_no_partial_build(a6000):
    release(a6000)
    assert a6000.run("ls -d %s/.build-*" % RELEASES).rc != 0, "a build folder was left behind"


def test_the_record_names_what_was_installed(a6000):
    record = json.loads(a6000.file(release(a6000) + "/.release.json").content_string)
    assert record["version"] == "0.5.23"
    assert record["patches"] == ["0001-server-args-add-speculative-ddtree-budget.patch",
                                 "0002-speculative-add-DDTREE-algorithm.patch"]
    assert record["patch_sha256"] == [
        "a20378813eebcd45e56ae9cfca7fc72861cb9ad4a3dac8f6bfc9fa78bc2ccb96",
        "e096908c4af4fdbfcd9b421b482091d35e9d3aea3ebe751ed3293b5884a95bad"]
    assert record["install"]["source"] == "wheelhouse"


def test_sglang_is_installed_with_the_ddtree_patches_applied(a6000):
    root = release(a6000)
    assert a6000.file(root + "/bin/python").is_symlink or a6000.file(root + "/bin/python").exists
    site = "%s/%s/sglang/srt" % (root, SITE)
    assert "speculative_ddtree_budget" in a6000.file(site + "/arg_groups/fields/spec.py").content_string
    assert "DDTREE = auto()" in a6000.file(site + "/speculative/spec_info.py").content_string
    assert a6000.run("%s/bin/python -c 'import sglang_sim'" % root).rc == 0
