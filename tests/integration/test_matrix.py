"""One deploy and one rollback on the lab with each ansible-core of the matrix as the controller
(the Makefile's MATRIX, each release on a Python it supports; their venvs: `make matrix-venvs`),
as an operator on Python 3.12 or 3.13 runs them. `make matrix` runs their sanity and unit tests;
this is the lab's part. The venvs hold ansible-core alone: the collection needs nothing else."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.ansible_run import run_playbook
from tests.integration.deploying import faults, healthy, report, rolled_back
from tests.matrix import parse, venv_path

MATRIX = os.environ.get("INFEROPS_MATRIX", "").split()


def controller(pair: str) -> Path:
    core, python = parse(pair)
    bin_dir = venv_path(core, python) / "bin"
    assert (bin_dir / "ansible-playbook").is_file(), "no controller venv for %s: run `make matrix-venvs`" % pair
    said = subprocess.run([str(bin_dir / "ansible"), "--version"], capture_output=True, text=True, check=True).stdout
    assert said.startswith("ansible [core %s." % core) and "python version = %s." % python in said, said
    return bin_dir


def test_the_matrix_is_set():
    assert MATRIX, "INFEROPS_MATRIX is unset: run the integration tests through make, which exports it"


@pytest.mark.parametrize("pair", MATRIX)
def test_a_deploy_is_kept_and_a_failing_one_rolled_back_with_each_ansible_core(pair, fresh, ct200):
    bin_dir = controller(pair)
    kept = run_playbook("playbooks/deploy_nextn.yml", limit="ct200", controller=bin_dir)
    assert kept.returncode == 0 and report(ct200)["outcome"] in ("deployed", "unchanged"), kept.stdout[-3000:]
    # DFLASH's first batch crashes once its server answered 200: the gate fails it in the settle
    # window, and the handler the outcome notified brings NEXTN back.
    faults(ct200, crash_after_first_health_s=1, only_algorithm="DFLASH")
    try:
        failed = run_playbook("playbooks/deploy.yml", limit="ct200", controller=bin_dir,
                              extra_vars={"sglang_variant": "dflash", "sglang_retry_rolled_back": True})
    finally:
        ct200.run("rm -f /etc/inferops-lab/faults.json")
    rolled_back(failed, ct200, "cuda_error")
    assert "RUNNING HANDLER [inferops.sglang.sglang_service : Roll back" in failed.stdout and healthy(ct200)
