"""make integration runs the lab tests with pytest-xdist's --dist loadgroup: the tests of one
xdist_group run on one worker, in order, sharing that worker's lab hosts and its module
fixtures (one NEXTN deploy for the fault matrix's rows, one gateway fleet). pytest 9.2 with
pytest-xdist 3.8 drops every group silently (pytest-dev/pytest-xdist#1386): each test then runs
wherever, and each worker sets the shared fixtures up again. This fails if the pinned pair
does that."""
from __future__ import annotations

import os
import re
import subprocess
import sys


def test_the_tests_of_an_xdist_group_run_on_one_worker(tmp_path):
    for name in ("a", "b"):
        (tmp_path / ("test_%s.py" % name)).write_text(
            "import pytest\npytestmark = pytest.mark.xdist_group('shared')\n"
            + "".join("def test_%s%d():\n    pass\n" % (name, i) for i in range(3)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                           "no:cacheprovider", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          check=False, env=dict(os.environ, PYTEST_ADDOPTS=""))
    ran = re.findall(r"^\[(gw\d+)\] .*PASSED (\S+)", proc.stdout, re.M)
    assert len(ran) == 6, proc.stdout[-3000:]
    assert all(test.endswith("@shared") for _worker, test in ran), "the group was dropped: %s" % ran
    assert len({worker for worker, _test in ran}) == 1, "the group ran on several workers: %s" % ran
