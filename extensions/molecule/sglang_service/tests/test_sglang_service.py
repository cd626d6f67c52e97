"""After sglang_service alone, as its README example runs it (twice): it built the release
its plan found missing; NEXTN runs from it under the role's unit, healthy, its secrets private,
what runs recorded, and one report saying so."""
from __future__ import annotations

import json

from labverify import UNIT, UNIT_PATH, health_status, latest_report, reports


def test_nextn_runs_healthy_from_the_release_the_role_built(blackwell):
    unit = blackwell.file(UNIT_PATH).content_string
    release = blackwell.check_output("ls -d /opt/sglang/releases/0.5.23-*")
    assert "ExecStart=%s/bin/python -m sglang_sim" % release in unit
    assert "--speculative-algorithm NEXTN" in unit
    service = blackwell.service(UNIT)
    assert service.is_running and service.is_enabled
    assert health_status(blackwell) == 200


def test_secrets_are_readable_by_root_and_the_service_group_only(blackwell):
    secrets = blackwell.file("/etc/sglang/secrets.yaml")
    assert secrets.mode == 0o640 and secrets.user == "root" and secrets.group == "sglang"
    assert "lab-api-key-not-secret" not in blackwell.file(UNIT_PATH).content_string, "the key stays out of the unit"


def test_what_runs_is_recorded(blackwell):
    deployed = json.loads(blackwell.file("/etc/sglang/deployed.json").content_string)
    assert deployed["variant"] == "nextn" and deployed["release"].startswith("/opt/sglang/releases/0.5.23-")


def test_one_deploy_then_the_second_run_found_it_converged(blackwell):
    assert [r["outcome"] for r in reports(blackwell.lab_name)] == ["deployed", "unchanged"]
    assert "NEXTN deployed, healthy" in reports(blackwell.lab_name)[0]["diagnosis"]
    assert latest_report(blackwell.lab_name)["outcome"] == "unchanged"
