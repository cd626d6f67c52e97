"""The production argument checker on a lab host: a release built by sglang_build with the
real SGLang 0.5.23 wheel (the DDTree patches applied) and the CPU-only packages its parser
imports, from the controller's wheelhouse (make checker-wheelhouse); the deploy validates with
the shipped roles/sglang_service/files/validate_server_args.py, exactly as production does.
Only the checker changes: the stand-in still serves.

Its second half is a fault-matrix row: a flag the real parser rejects stops the deploy before
the running service is touched, with SGLang's own message.
"""
from __future__ import annotations

import pytest

from tests.integration.ansible_run import REPO
from tests.integration.deploying import deploy, healthy, invocation, report, reset_service

pytestmark = pytest.mark.xdist_group("real_checker")

PACKAGES = [line.strip() for line in (REPO / "lab" / "checker-requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
CHECKER_PATH = "/usr/local/lib/inferops-sglang/validate_server_args.py"
# The lab inventory runs the stand-in's --validate-only; these put production's checker back.
REAL_CHECKER = {
    "sglang_build_wheelhouse": str(REPO / "build" / "checker-wheelhouse"),
    "sglang_build_extra_packages": ["sglang-sim"] + PACKAGES,
    # (torch's and triton's thousands of files are not compiled to bytecode at install: the
    # parser imports a few of them, compiled as it imports them - the install's CPU, on a
    # controller whose two cores the lab's hosts share, is what this row costs most.)
    "sglang_build_pip_args": ["--no-compile"],
    "sglang_service_validate_command": ["{{ sglang_service_release_dir }}/bin/python", CHECKER_PATH],
}
# A user whose flag table misses 0.5.23's rename sends the old flag as it is.
OLD_FLAG = {"sglang_service_flags_by_version": {"0.5.23": {"renamed": {}, "removed": {}}},
            "sglang_envelope_overrides": {"cuda_graph_max_bs": 16}}
SGLANGS_WORDS = ("sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
                 "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")


def test_the_real_parser_on_a_host_accepts_the_deploy_and_stops_a_flag_it_rejects(lab):
    """One test, so the release (torch and triton included) is built once per run: under
    pytest-xdist a module's fixtures may be set up again between its tests."""
    host = lab["ct129"]
    reset_service(host)
    try:
        # Accepted: NEXTN on the real-checker release, healthy; the stand-in serves.
        proc = deploy("deploy_nextn", host, **REAL_CHECKER)
        assert proc.returncode == 0 and report(host)["outcome"] == "deployed", proc.stdout[-3000:]
        release = report(host)["release"]
        versions = host.run([release + "/bin/python", "-c",
                             "import torch, sglang; print(torch.__version__, sglang.__version__)"]).stdout.split()
        assert versions == ["2.13.0+cpu", "0.5.23"], "the real SGLang and its parser's packages"
        assert healthy(host)
        # What the deploy ran, run again by hand: the shipped script, in the release, on the host.
        accepted = host.run([release + "/bin/python", CHECKER_PATH, "--model-path", "/models/Qwen3.6-27B",
                             "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path",
                             "/models/Qwen3.6-27B-DFlash", "--speculative-num-draft-tokens", "16",
                             "--speculative-ddtree-budget", "64"], check=False)
        assert accepted.returncode == 0 and accepted.stdout.strip() == "accepted", "the DDTree patches are applied"
        rejected = host.run([release + "/bin/python", CHECKER_PATH, "--model-path", "/m", "--cuda-graph-max-bs", "16"],
                            check=False)
        assert rejected.returncode == 2 and rejected.stderr.strip().splitlines()[-1] == SGLANGS_WORDS, rejected.stderr

        # The fault-matrix row: rejected before the running service is touched, in SGLang's words.
        running = invocation(host)
        proc = deploy("deploy_nextn", host, **REAL_CHECKER, **OLD_FLAG)
        rep = report(host)
        assert proc.returncode != 0 and rep["outcome"] == "failed" and rep["cause"] == "bad_argument", rep["diagnosis"]
        assert "rejects the nextn command line; the running service was not touched: " + SGLANGS_WORDS in rep["diagnosis"]
        assert rep["release"] == release, "validated by the real-checker release"
        assert invocation(host) == running and healthy(host)
    finally:
        reset_service(host)
