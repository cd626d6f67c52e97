"""The `pypi` build source through a real package index: the controller serves a PEP 503
index (lab/pep503.py over the lab wheelhouse, make lab-index) with a plain HTTP server on the
lab network, and sglang_build installs the release from it with nothing else at hand (no
wheelhouse copied). A version the index does not have fails naming the package and the
index, and leaves no half-built release behind."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.integration.ansible_run import REPO
from tests.integration.deploying import deploy, healthy, report, reset_service
from tests.integration.labhost import labctl

pytestmark = pytest.mark.xdist_group("package_index")

PORT = 38100


@pytest.fixture(scope="module")
def index(lab, tmp_path_factory):
    """The index, served on the controller's address on this set's lab network; its access log."""
    gateway = labctl("address").stdout.split()[3]
    log = tmp_path_factory.mktemp("index") / "access.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", gateway, "--directory",
                                   str(REPO / "build" / "pypi-index"), str(PORT)], stdout=out, stderr=subprocess.STDOUT)
    url = "http://%s:%d/simple" % (gateway, PORT)
    try:
        host = lab["ct200"]
        host.wait_for(lambda: host.run(["python3", "-c", "import urllib.request as u; u.urlopen(%r, timeout=2)" % url],
                                       check=False).returncode == 0, 20, interval=0.3, what="the index on the lab network")
        yield {"url": url, "log": log, "host": gateway}
    finally:
        server.terminate()
        server.wait(timeout=10)


def pypi(index, **more):
    """The production source: pip and an index, with no wheelhouse copied to the host (plain
    HTTP, as many in-house indexes are: pip wants the host named trusted)."""
    return dict({"sglang_build_source": "pypi", "sglang_build_wheelhouse": "",
                 "sglang_build_pip_args": ["--index-url", index["url"], "--trusted-host", index["host"]]}, **more)


def test_a_release_builds_from_the_index_over_the_lab_network(lab, index):
    host = lab["ct200"]
    reset_service(host)
    # A release from the index an earlier run left would be found, not built (the others stay).
    host.run("grep -l '\"source\": \"pypi\"' /opt/sglang/releases/*/.release.json 2>/dev/null "
             "| xargs -r -n1 dirname | xargs -r rm -rf")
    proc = deploy("deploy_nextn", host, **pypi(index, sglang_build_progress_interval=1))
    assert proc.returncode == 0 and report(host)["outcome"] == "deployed", proc.stdout[-3000:]
    # The install's progress while it runs: what, from where, the time so far.
    assert re.search(r"ct200: installing sglang==0\.5\.23 sglang-sim from the package index \S+, \d+ s so far",
                     proc.stdout), proc.stdout[-3000:]
    release = report(host)["release"]
    record = json.loads(host.run(["cat", release + "/.release.json"]).stdout)
    assert record["source"] == "pypi" and record["install"]["pip_args"][:2] == ["--index-url", index["url"]]
    assert host.run("test -e %s/.wheelhouse" % release, check=False).returncode == 1, "nothing but the index"
    served = index["log"].read_text()
    assert "GET /simple/sglang/ " in served and "GET /files/sglang-0.5.23-" in served, served[-2000:]
    assert "GET /simple/sglang-sim/ " in served
    assert healthy(host)
    reset_service(host)


def test_a_version_the_index_lacks_names_the_package_and_the_index_and_leaves_nothing(lab, index):
    host = lab["ct200"]
    reset_service(host)
    releases = host.run("ls -A /opt/sglang/releases 2>/dev/null; true").stdout
    proc = deploy("deploy_nextn", host, **pypi(index, sglang_build_version="0.5.24"))
    said = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "No matching distribution found for sglang==0.5.24" in said, said[-3000:]
    assert "from the package index %s failed" % index["url"] in said
    assert host.run("ls -A /opt/sglang/releases 2>/dev/null; true").stdout == releases, "no half-built release"
    assert host.run("test -e /etc/systemd/system/sglang.service", check=False).returncode == 1
