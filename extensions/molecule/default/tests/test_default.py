"""After `deploy_ddtree.yml` on both classes (run twice): Blackwell serves DDTree, the A6000
host serves NEXTN again with the kv-pool OOM on record, and nothing is lost or exposed."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml
from labverify import API_KEY, UNIT, UNIT_PATH, health_status, latest_report, reports

ENVELOPE_FLAGS = {"tp_size": "--tp-size", "mem_fraction_static": "--mem-fraction-static",
                  "context_length": "--context-length", "max_running_requests": "--max-running-requests",
                  "chunked_prefill_size": "--chunked-prefill-size", "cuda_graph_max_bs_decode": "--cuda-graph-max-bs-decode",
                  "attention_backend": "--attention-backend"}


def envelope(cls: str) -> dict:
    path = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "inventory" / "production" / "group_vars" / ("%s.yml" % cls)
    return yaml.safe_load(path.read_text())["sglang_envelope"]


def exec_start(host) -> str:
    return next(l for l in host.file(UNIT_PATH).content_string.splitlines() if l.startswith("ExecStart="))


def assert_envelope(host, cls):
    line = exec_start(host)
    for key, value in envelope(cls).items():
        assert "%s %s" % (ENVELOPE_FLAGS[key], value) in line, (key, line)


def test_blackwell_serves_ddtree_with_its_envelope(blackwell):
    line = exec_start(blackwell)
    assert "--speculative-algorithm DDTREE" in line and "--speculative-ddtree-budget 64" in line
    assert "--speculative-draft-model-path /models/Qwen3.6-27B-DFlash" in line
    assert_envelope(blackwell, "blackwell")
    assert health_status(blackwell) == 200
    first = [r for r in reports(blackwell.lab_name) if r["variant"] == "ddtree"][0]
    assert first["outcome"] == "deployed" and first["perf"]["verdict"] == "kept" and first["perf"]["ratio"] > 1.0
    assert latest_report(blackwell.lab_name)["outcome"] == "unchanged", "the second converge changed nothing"


def test_a6000_is_back_on_nextn_with_the_cause_on_record(a6000):
    line = exec_start(a6000)
    assert "--speculative-algorithm NEXTN" in line and "DDTREE" not in line
    assert_envelope(a6000, "a6000")
    assert health_status(a6000) == 200
    first = [r for r in reports(a6000.lab_name) if r["variant"] == "ddtree"][0]
    assert first["outcome"] == "rolled_back" and first["health"]["cause"] == "kv_pool_oom", first["diagnosis"]
    assert first["rollback"]["state"] == "healthy" and "rolled back to NEXTN: healthy in" in first["diagnosis"]
    again = latest_report(a6000.lab_name)
    assert again["outcome"] == "not_retried" and again["cause"] == "kv_pool_oom", again["diagnosis"]
    records = a6000.check_output("cat /etc/sglang/rolled-back/*.json")
    assert json.loads(records)["cause"] == "kv_pool_oom"


def test_known_good_release_and_unit_are_intact(a6000, blackwell):
    # The A6000 host runs its known-good unit again, byte for byte; on Blackwell the
    # known-good (NEXTN) is kept beside the running DDTree.
    assert a6000.file(UNIT_PATH).content_string == a6000.file("/etc/sglang/known-good/" + UNIT).content_string
    for host in (a6000, blackwell):
        known_good = host.file("/etc/sglang/known-good/" + UNIT).content_string
        assert "--speculative-algorithm NEXTN" in known_good
        release = re.search(r"ExecStart=(/opt/sglang/releases/[^/]+)/bin/python", known_good).group(1)
        assert host.file(release + "/bin/python").exists and host.file(release + "/.release.json").exists
        meta = json.loads(host.file("/etc/sglang/known-good/meta.json").content_string)
        assert meta["variant"] == "nextn" and meta["release"] == release


def test_service_runs_as_its_own_user_and_never_shows_the_key(a6000, blackwell):
    for host in (a6000, blackwell):
        props = host.check_output("systemctl show %s -p User -p MainPID" % UNIT)
        assert "User=sglang" in props
        pid = re.search(r"MainPID=(\d+)", props).group(1)
        assert host.check_output("ps -o user= -p %s" % pid).strip() == "sglang"
        assert API_KEY not in host.file(UNIT_PATH).content_string
        assert API_KEY not in host.check_output("ps -eo args")
        secrets = host.file("/etc/sglang/secrets.yaml")
        assert secrets.mode == 0o640 and secrets.user == "root" and secrets.group == "sglang"


def test_reports_are_written(a6000, blackwell):
    for host in (a6000, blackwell):
        latest = latest_report(host.lab_name)
        assert latest["host"] == host.lab_name and latest["diagnosis"].startswith(host.lab_name + ": DDTREE")
