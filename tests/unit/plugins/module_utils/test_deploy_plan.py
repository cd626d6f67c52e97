"""Every decision of a deploy (module_utils/deploy_plan.py) as data tables: what the switch
does from what the deploy wants and what sglang_facts read, and how the deploy ended after
the gates (each outcome, each cause, each performance verdict)."""
from __future__ import annotations

import hashlib
import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import deploy_plan as dp
from ansible_collections.inferops.sglang.plugins.module_utils import sglang_bench as bench

UNIT, ENV, SECRETS = "/etc/systemd/system/sglang.service", "/etc/sglang/sglang.env", "/etc/sglang/secrets.yaml"
MARKER, CHECKER = "/opt/sglang/releases/r/.release.json", "/usr/local/lib/inferops-sglang/validate_server_args.py"
DESIRED = {"unit": "[Service]\nExecStart=ddtree\n", "env": "A=1\n", "secrets": '{"api-key": "k"}'}
WORKLOAD = {"api": "generate", "requests": 8}


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


SAME = {UNIT: sha1(DESIRED["unit"]), ENV: sha1(DESIRED["env"]), SECRETS: sha1(DESIRED["secrets"]),
        MARKER: "m", CHECKER: "c"}
OLD_UNIT = dict(SAME, **{UNIT: sha1("[Service]\nExecStart=nextn\n")})
DEPLOYED = {"variant": "nextn", "release": "/opt/sglang/releases/r",
            "perf": {"output_tokens_per_s": 100.0, "workload": dict(WORKLOAD, prompts=16)}}


def wants(**over):
    base = {"host": "ct200", "variants": ["nextn", "dflash", "ddtree"], "release": "/opt/sglang/releases/r",
            "model_path": "/models/m", "port": 30000, "desired": DESIRED, "paths": {"unit": UNIT, "env": ENV, "secrets": SECRETS}, "release_marker": MARKER,
            "checker": {"path": CHECKER, "sha1": "c"}, "variant": "ddtree", "unit": "sglang.service",
            "retry_rolled_back": False, "perf_gate": {"enabled": False, "baseline": "measure", "workload": WORKLOAD},
            "envelope": {"tp_size": 8, "mem_fraction_static": 0.85}, "draft": True, "draft_model_path": "/models/d"}
    base.update(over)
    return base


def facts(**over):
    base = {"healthy": True, "checksums": SAME, "restart_pending": [], "locked_by": None, "rolled_back": None,
            "layout_drift": [], "deployed": DEPLOYED, "url": "http://127.0.0.1:30000/health",
            "unit": {"invocation_id": "inv1", "active_state": "active"}, "http_status": 200, "http_error": None,
            "read_at": 100.0}
    base.update(over)
    return base


GATED = {"enabled": True, "baseline": "measure", "min_ratio": 1.0, "workload": WORKLOAD}
RECORDED = dict(GATED, baseline="recorded")

PENDING = {"config_id": "c0ffee", "variant": "ddtree", "started": 1796300000.0, "deadline": 1796300330.0}
RECORDED_HASHES = dict(DEPLOYED, config_sha1={
    "unit": sha1("[Service]\nExecStart=nextn\n"), "env": sha1(DESIRED["env"]), "secrets": sha1(DESIRED["secrets"])})

PLANS = [
    # (id, wants overrides, facts overrides, expected plan fields)
    ("pending: the same files, healthy, but never confirmed: not converged, restarted and gated, no snapshot", {},
     {"pending": PENDING},
     {"converged": False, "restart": True, "snapshot": False, "health_gate": True, "before": "ddtree (unverified)",
      "unverified": "a switch to DDTREE began at 2026-12-03 12:13:20 UTC and was never confirmed (its gates did not "
                    "pass)"}),
    ("pending, another configuration wanted: written and restarted, the known-good kept as it is", {},
     {"pending": PENDING, "checksums": OLD_UNIT},
     {"converged": False, "restart": True, "write": ["unit"], "snapshot": False}),
    ("the files the record of what passed names: snapshot", {}, {"checksums": OLD_UNIT, "deployed": RECORDED_HASHES},
     {"snapshot": True, "unverified": None}),
    ("files equal to the wanted ones but not to the record of what passed: restarted and gated, not converged", {},
     {"deployed": RECORDED_HASHES},
     {"converged": False, "restart": True, "snapshot": False, "write": []}),
    ("converged: healthy on exactly these files", {}, {},
     {"converged": True, "changes": False, "write": [], "restart": False, "snapshot": False, "stop": None}),
    ("variant switch writes the unit alone and snapshots the healthy service", {}, {"checksums": OLD_UNIT},
     {"converged": False, "write": ["unit"], "write_paths": [UNIT], "daemon_reload": True, "restart": True,
      "snapshot": True, "snapshot_files": [UNIT, ENV, SECRETS], "validate": True}),
    ("first deploy: nothing there, no snapshot, everything written", {},
     {"healthy": False, "checksums": {UNIT: None, ENV: None, SECRETS: None, MARKER: None, CHECKER: None},
      "deployed": None, "layout_drift": ["no user sglang"]},
     {"write": ["unit", "env", "secrets"], "snapshot": False, "snapshot_record": None, "restart": True,
      "build": True, "release_present": False, "prepare": True, "install_checker": True, "before": None}),
    ("a left-over secrets file does not count without an API key",
     {"desired": dict(DESIRED, secrets="")}, {},
     {"converged": True, "stale": {"unit": False, "env": False, "secrets": False}}),
    ("restart pending: files newer than the process are not converged, not snapshot, restarted", {},
     {"restart_pending": [UNIT]},
     {"converged": False, "restart_pending": True, "restart": True, "snapshot": False, "changes": False}),
    ("the lock held by another run is not converged", {}, {"locked_by": {"user": "alice", "pid": 1}},
     {"converged": False, "locked_by": {"user": "alice", "pid": 1}, "restart": False}),
    ("an unhealthy service on the same files is restarted, not snapshot", {}, {"healthy": False},
     {"converged": False, "restart": True, "snapshot": False, "write": []}),
    ("the release missing from the host is built", {}, {"checksums": dict(SAME, **{MARKER: None})},
     {"converged": False, "build": True}),
    ("a configuration rolled back before stops the run", {},
     {"checksums": OLD_UNIT, "rolled_back": {"time": "T", "cause": "kv_pool_oom"}},
     {"stop": {"cause": "kv_pool_oom", "record": {"time": "T", "cause": "kv_pool_oom"},
               "message": "this exact DDTREE configuration was rolled back on T (cause kv_pool_oom); the running "
                          "service was left alone. Change the configuration, or set sglang_retry_rolled_back=true "
                          "to try it again."},
      "validate": False, "measure_baseline": False, "write": [], "changes": False, "snapshot": False,
      "restart": False, "health_gate": False, "daemon_reload": False}),
    ("... also when the files are that configuration's already, stopped (an adopted host after its rollback)", {},
     {"healthy": False, "rolled_back": {"time": "T", "cause": "kv_pool_oom"}},
     {"stop": {"cause": "kv_pool_oom", "record": {"time": "T", "cause": "kv_pool_oom"},
               "message": "this exact DDTREE configuration was rolled back on T (cause kv_pool_oom); the running "
                          "service was left alone. Change the configuration, or set sglang_retry_rolled_back=true "
                          "to try it again."}, "restart": False}),
    ("... unless retrying is asked for", {"retry_rolled_back": True},
     {"checksums": OLD_UNIT, "rolled_back": {"time": "T", "cause": "kv_pool_oom"}},
     {"stop": None, "validate": True}),
    ("... or the rollback was not the configuration's fault (a task failed, a group's link broke)", {},
     {"checksums": OLD_UNIT, "rolled_back": {"time": "T", "cause": "link_lost", "retry": True}},
     {"stop": None, "validate": True}),
    ("the checker out of date is installed", {"checker": {"path": CHECKER, "sha1": "new"}}, {},
     {"install_checker": True}),
    ("perf gate, measure: the running service is measured", {"perf_gate": GATED}, {"checksums": OLD_UNIT},
     {"measure_baseline": True, "recorded_baseline": DEPLOYED["perf"], "running_variant": "nextn", "before": "nextn"}),
    ("perf gate, recorded with this workload: not measured", {"perf_gate": RECORDED}, {"checksums": OLD_UNIT},
     {"measure_baseline": False, "recorded_baseline": DEPLOYED["perf"]}),
    ("perf gate, recorded with another workload: measured", {"perf_gate": dict(RECORDED, workload={"requests": 1})},
     {"checksums": OLD_UNIT}, {"measure_baseline": True, "recorded_baseline": None}),
    ("perf gate, nothing healthy to measure", {"perf_gate": GATED}, {"checksums": OLD_UNIT, "healthy": False},
     {"measure_baseline": False}),
]


@pytest.mark.parametrize("want, read, expected", [c[1:] for c in PLANS], ids=[c[0] for c in PLANS])
def test_plan(want, read, expected):
    got = dp.plan(wants(**want), facts(**read))
    assert {key: got[key] for key in expected} == expected


@pytest.mark.parametrize("want, message", [
    ({"variant": "medusa"}, "ct200: bad deploy inputs, nothing was changed: unknown variant medusa (have nextn, "
                            "dflash, ddtree): set sglang_variant to one of them."),
    ({"release": ""}, "ct200: bad deploy inputs, nothing was changed: no release given (sglang_service_release_dir)."),
    ({"variant": "x", "model_path": ""}, "ct200: bad deploy inputs, nothing was changed: unknown variant x (have "
                                         "nextn, dflash, ddtree): set sglang_variant to one of them; no model path given "
                                         "(sglang_model_path)."),
    ({"draft_model_path": ""}, "ct200: bad deploy inputs, nothing was changed: ddtree needs a draft model: set "
                               "sglang_draft_model_path."),
    ({"envelope": {"tp_size": 8, "mem_fraction_static": 1.5}},
     "ct200: bad deploy inputs, nothing was changed: sglang_envelope.mem_fraction_static: 1.5 must be between 0 and "
     "1 (exclusive), such as 0.88."),
], ids=["unknown variant", "no release", "every problem at once", "a variant with a draft model, without it",
        "the envelope out of range (the role run alone: deploy.yml says it earlier)"])
def test_bad_inputs_are_refused_by_name(want, message):
    with pytest.raises(dp.InputError) as err:
        dp.plan(wants(**want), facts())
    assert str(err.value) == message


@pytest.mark.parametrize("holders, message", [
    ([{"pid": 7, "name": "python3", "unit": "sglang.service", "address": "127.0.0.1"}], None),
    ([], None),
    ([{"pid": 42, "name": "python3", "unit": "sglang-qwen.service", "address": "0.0.0.0"}],
     "ct200: port 30000 is held by PID 42 (python3, unit sglang-qwen.service), not sglang.service: the new server "
     "could not bind it. Stop it (systemctl stop sglang-qwen.service), adopt it as the known-good service "
     "(sglang_service_adopt: sglang-qwen.service, the docs guide \"Bringing a hand-made host under the collection\"), or "
     "choose another port (sglang_service_port). Nothing was changed."),
    ([{"pid": 9, "name": "nc", "unit": None, "address": "127.0.0.1"},
      {"pid": 7, "name": "python3", "unit": "sglang.service", "address": "::1"}],
     "ct200: port 30000 is held by PID 9 (nc, no unit), not sglang.service: the new server could not bind it. Stop "
     "it (kill 9), or choose another port (sglang_service_port). Nothing was changed."),
], ids=["the managed unit's own server", "nobody", "a hand-made unit", "a process in no unit beside ours"])
def test_a_port_held_outside_the_managed_unit_is_refused(holders, message):
    if message is None:
        assert dp.plan(wants(), facts(port_holders=holders))["converged"]
    else:
        with pytest.raises(dp.InputError) as err:
            dp.plan(wants(), facts(port_holders=holders))
        assert str(err.value) == message


def test_snapshot_record_names_what_proved_the_service_healthy():
    record = dp.plan(wants(), facts(checksums=OLD_UNIT))["snapshot_record"]
    assert record == dict(DEPLOYED, proven_healthy_by="http://127.0.0.1:30000/health", invocation_id="inv1",
                          has_secrets=True)


def test_converged_plan_carries_the_health_facts_for_the_report():
    gate = dp.plan(wants(), facts())["gate"]
    assert gate == {"unit": facts()["unit"], "url": facts()["url"], "http_status": 200, "http_error": None,
                    "state": "healthy", "cause": None, "elapsed": 0.0}


@pytest.mark.parametrize("write, restart, expected", [
    (["unit"], True, "would write %s and restart sglang.service; nothing was changed (check mode)" % UNIT),
    ([], True, "would restart sglang.service; nothing was changed (check mode)"),
    ([], False, "would change nothing; nothing was changed (check mode)"),
    (["unit", "build"], True, "would build the release (its parser then checks the command line) and write %s and "
                              "restart sglang.service; nothing was changed (check mode)" % UNIT),
], ids=["write and restart", "restart only", "nothing", "a release to build first"])
def test_check_mode_says_what_would_change(write, restart, expected):
    paths = {"unit": UNIT, "env": ENV, "secrets": SECRETS}
    files = [paths[n] for n in write if n != "build"]
    assert dp.would_change(write, files, restart, "sglang.service", build="build" in write) == expected


def test_config_id_is_stable_and_names_the_three_texts():
    assert dp.config_id(DESIRED) == hashlib.sha256(
        json.dumps([DESIRED["unit"], DESIRED["env"], DESIRED["secrets"]]).encode()).hexdigest()[:16]
    assert dp.config_id(dict(DESIRED, env="B=2\n")) != dp.config_id(DESIRED)
    with pytest.raises(dp.PlanError, match="secrets"):
        dp.config_id({"unit": "", "env": ""})


@pytest.mark.parametrize("read, lock, expected", [
    (None, {}, True),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}}, {}, False),
    ({"read_at": 100.0, "checksums": {}}, {}, True),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}}, {"last_released": 99.0}, False),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}}, {"last_released": 101.0}, True),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}}, {"broken": True}, True),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}, "config_id": "other"}, {}, True),
    ({"read_at": 100.0, "checksums": {UNIT: "x"}, "config_id": "mine"}, {}, False),
], ids=["never read", "read, lock untouched", "partial read (no config checksums)", "released before the read",
        "another run released the lock after the read", "a broken lock",
        "read for another configuration (an earlier deploy of this run)", "read for this configuration"])
def test_needs_read(read, lock, expected):
    asked = "mine" if read and "config_id" in read else None
    assert dp.needs_read(read, lock, [UNIT], asked) is expected


HEALTHY = {"state": "healthy", "cause": None, "elapsed": 6.0}
OOM = {"state": "failed", "cause": "kv_pool_oom", "elapsed": 2.7}
FAST = {"summary": {"output_tokens_per_s": 124.0}, "ratio": 1.24}
SLOW = {"summary": {"output_tokens_per_s": 68.0}, "ratio": 0.68}
NO_RATIO = {"summary": {"output_tokens_per_s": 68.0}, "ratio": None}
ERRORS = {"summary": {"output_tokens_per_s": 0.0}, "ratio": None, "msg": "3 of 8 requests failed"}
SKIPPED = {"skipped": True, "skip_reason": "Conditional result was False"}
SWITCH = dp.plan(wants(perf_gate=GATED), facts(checksums=OLD_UNIT))
STOPPED = dp.plan(wants(), facts(checksums=OLD_UNIT, rolled_back={"time": "T", "cause": "cuda_error"}))
CONVERGED = dp.plan(wants(), facts())


def run(**over):
    base = {"check_mode": False, "variant": "ddtree", "version": "0.5.23", "release": "/opt/sglang/releases/r",
            "unit": "sglang.service", "validation": {"rc": 0}, "restarted": True, "gate": HEALTHY,
            "perf_gate": dict(GATED, enabled=False), "perf": None, "baseline": None, "failure": "",
            "fail_on_rollback": True, "running_perf": DEPLOYED["perf"], "now": "2026-12-01T00:00:00Z",
            "server_args": {"model_path": "/models/m", "port": 30000}}
    base.update(over)
    return base


REJECTED = {"rc": 2, "stderr": "usage: ...\nerror: ambiguous option: --cuda-graph-max-bs could match ...\n"}
OUTCOMES = [
    # (id, plan, run overrides, expected: outcome, cause, rollback, ok)
    ("deployed", SWITCH, {}, ("deployed", None, False, True)),
    ("unchanged: converged", CONVERGED, {"restarted": False, "gate": None}, ("unchanged", None, False, True)),
    ("unchanged: nothing restarted", SWITCH, {"restarted": False}, ("unchanged", None, False, True)),
    ("check mode", SWITCH, {"check_mode": True, "gate": SKIPPED, "restarted": False}, ("check", None, False, True)),
    ("not retried", STOPPED, {"failure": "this exact ...", "restarted": False}, ("not_retried", "cuda_error", False, False)),
    ("not retried, tolerated", STOPPED, {"fail_on_rollback": False, "restarted": False},
     ("not_retried", "cuda_error", False, True)),
    ("rejected command line: failed, bad_argument", SWITCH,
     {"validation": REJECTED, "failure": "non-zero return code", "restarted": False, "gate": None},
     ("failed", "bad_argument", False, False)),
    ("rejected in check mode still fails", SWITCH, {"validation": REJECTED, "check_mode": True, "restarted": False},
     ("failed", "bad_argument", False, False)),
    ("failed gate: rolled back with its cause", SWITCH, {"gate": OOM}, ("rolled_back", "kv_pool_oom", True, False)),
    ("failed gate, tolerated", SWITCH, {"gate": OOM, "fail_on_rollback": False},
     ("rolled_back", "kv_pool_oom", True, True)),
    ("perf gate: kept", SWITCH, {"perf_gate": GATED, "perf": FAST}, ("deployed", None, False, True)),
    ("perf gate: slower than the baseline", SWITCH, {"perf_gate": GATED, "perf": SLOW},
     ("rolled_back", "slower_than_baseline", True, False)),
    ("perf gate: the benchmark failed", SWITCH, {"perf_gate": GATED, "perf": ERRORS},
     ("rolled_back", "bench_failed", True, False)),
    ("perf gate: no baseline to compare with", SWITCH, {"perf_gate": GATED, "perf": NO_RATIO},
     ("deployed", None, False, True)),
    ("perf measured only (gate off): slower is kept", SWITCH, {"perf": SLOW}, ("deployed", None, False, True)),
    ("perf skipped", SWITCH, {"perf_gate": GATED, "perf": SKIPPED}, ("deployed", None, False, True)),
    ("a task failed after the restart: not proven, rolled back", SWITCH, {"failure": "boom", "gate": None},
     ("rolled_back", "task_failed", True, False)),
    ("a task failed before the restart: failed, nothing to roll back", SWITCH,
     {"failure": "could not write", "restarted": False, "gate": None}, ("failed", None, False, False)),
    ("the guard restored the known-good first: undone, nothing left to roll back", SWITCH,
     {"guard_fired": {"why": "the controller did not confirm DDTREE's gate by its deadline", "time": 1796300331.0,
                      "restored": "nextn", "healthy": True, "seconds": 2.0}},
     ("rolled_back", "guard_acted_first", False, False)),
    ("the guard restored a new server that failed, its grace first: the gate's cause, rolled back (its arm says so)",
     SWITCH, {"gate": OOM, "guard_fired": {"why": "DDTREE failed (...) at 12:13:26, and no controller took it over",
                                           "reason": "follow", "time": 1796300331.0, "restored": "nextn",
                                           "healthy": True, "seconds": 2.0}},
     ("rolled_back", "kv_pool_oom", True, False)),
    ("a re-gate of the running server that failed: rolled back, its configuration not to blame", SWITCH,
     {"gate": OOM, "restarted": False}, ("rolled_back", "kv_pool_oom", True, False)),
]


@pytest.mark.parametrize("the_plan, over, expected", [c[1:] for c in OUTCOMES], ids=[c[0] for c in OUTCOMES])
def test_outcome(the_plan, over, expected):
    got = dp.outcome(the_plan, run(**over))
    assert (got["outcome"], got["cause"], got["rollback"], got["ok"]) == expected
    assert got["outcome"] in dp.OUTCOMES
    # (A switch undone only because the guard's deadline came first, or because a task failed,
    # did not fail by its configuration: not remembered.)
    # A gate that only re-checked a server this deploy did not restart is not the configuration's either.
    blameless = got["cause"] in (dp.GUARD_ACTED, dp.TASK_FAILED) or not over.get("restarted", True)
    assert got["remember"] is (got["outcome"] == "rolled_back" and not blameless)
    # Every rollback is on the record (writing it notifies the handler); one that was not the
    # configuration's fault says so, and a re-run tries it again.
    if got["rollback"]:
        assert got["record"]["rolled_back"].get("retry", False) is not got["remember"]
    else:
        assert got["record"] is None or "rolled_back" not in got["record"]


def test_every_outcome_and_every_verdict_has_a_row():
    outcomes = set(case[3][0] for case in OUTCOMES)
    assert outcomes == set(dp.OUTCOMES)
    judged = [dp.outcome(case[1], run(**case[2]))["perf"] for case in OUTCOMES]
    verdicts = set(perf["verdict"] for perf in judged if perf)
    assert verdicts == set(bench.VERDICTS)


def test_rejected_command_line_names_sglangs_own_error():
    got = dp.outcome(SWITCH, run(validation=REJECTED, restarted=False, gate=None))
    assert got["failure"] == ("SGLang 0.5.23 (r) rejects the ddtree command line; the running service was not "
                              "touched: error: ambiguous option: --cuda-graph-max-bs could match ...")


@pytest.mark.parametrize("the_plan, over, expected", [
    (SWITCH, {"perf": FAST}, dict(FAST["summary"], measured_at="2026-12-01T00:00:00Z")),
    (SWITCH, {"restarted": False}, DEPLOYED["perf"]),
    (SWITCH, {}, None),
], ids=["measured now", "unchanged keeps the recorded figure", "deployed without a measurement"])
def test_deployed_record_keeps_the_speed(the_plan, over, expected):
    got = dp.outcome(the_plan, run(**over))
    assert got["record_deployed"] and got["deployed_perf"] == expected


STARTED = {"parallel": 0.1, "weights": 0.6, "kv_pool": 0.2, "graphs": 0.3, "ready": 1.2}
RECORDED = {"parallel": 2.0, "weights": 198.0, "kv_pool": 4.0, "graphs": 41.0, "ready": 12.0}


@pytest.mark.parametrize("over, expected", [
    ({"gate": dict(HEALTHY, timeline=STARTED), "running_timeline": RECORDED}, STARTED),
    ({"restarted": False, "running_timeline": RECORDED}, RECORDED),
    ({"gate": dict(HEALTHY, timeline={}), "running_timeline": None}, None),
], ids=["this start's timeline", "unchanged keeps the recorded one", "no timeline, none recorded"])
def test_deployed_record_keeps_the_start_up_timeline(over, expected):
    got = dp.outcome(SWITCH, run(**over))
    assert got["record_deployed"] and got["record"]["deployed"]["timeline"] == expected


def test_converged_plan_has_ended_unchanged_and_a_switch_has_not():
    assert (CONVERGED["ended"]["outcome"], CONVERGED["ended"]["ok"], CONVERGED["ended"]["record"]) == (
        "unchanged", True, None)
    assert CONVERGED["ended"]["gate"]["state"] == "healthy" and SWITCH["ended"] is None


def test_converged_host_records_nothing_new():
    got = dp.outcome(CONVERGED, run(restarted=False, gate=None))
    assert not got["record_deployed"] and got["gate"]["state"] == "healthy"


@pytest.mark.parametrize("the_plan, over, expected", [
    (SWITCH, {}, {"deployed": {"variant": "ddtree", "release": "/opt/sglang/releases/r", "perf": None,
                               "server_args": {"model_path": "/models/m", "port": 30000}, "timeline": None,
                               "config_id": SWITCH["config_id"], "config_sha1": {
                                   "unit": sha1(DESIRED["unit"]), "env": sha1(DESIRED["env"]),
                                   "secrets": sha1(DESIRED["secrets"])}}}),
    (SWITCH, {"gate": OOM}, {"config_id": SWITCH["config_id"], "rolled_back": {
        "time": "2026-12-01T00:00:00Z", "variant": "ddtree", "cause": "kv_pool_oom", "release": "/opt/sglang/releases/r"}}),
    (SWITCH, {"failure": "boom", "gate": None}, {"config_id": SWITCH["config_id"], "rolled_back": {
        "time": "2026-12-01T00:00:00Z", "variant": "ddtree", "cause": "task_failed", "release": "/opt/sglang/releases/r",
        "retry": True}}),
    (CONVERGED, {"restarted": False, "gate": None}, None),
    (STOPPED, {"restarted": False}, None),
    (SWITCH, {"validation": REJECTED, "restarted": False, "gate": None}, None),
    (SWITCH, {"check_mode": True, "gate": SKIPPED, "restarted": False}, None),
], ids=["deployed: what runs now", "rolled back: this configuration, with the gate's cause",
        "rolled back after a failed task: on the record, but not the configuration's fault", "converged: nothing new", "not retried: nothing",
        "rejected: nothing", "check mode: nothing"])
def test_host_record(the_plan, over, expected):
    assert dp.outcome(the_plan, run(**over))["record"] == expected


def test_task_result_drops_ansibles_bookkeeping():
    assert dp.task_result({"state": "healthy", "invocation": {}, "changed": False, "ansible_facts": {}}) == {
        "state": "healthy"}


# --- adoption: a hand-made unit becomes the first known-good ------------------------------
HANDMADE = {
    "unit": "sglang-qwen.service", "load_state": "loaded", "active_state": "active", "sub_state": "running",
    "unit_file_state": "enabled", "invocation_id": "hm1", "argv": ["/opt/venv/bin/python", "-m", "sglang.launch_server"],
    "launcher": "sglang.launch_server", "variant": "nextn", "address": ["127.0.0.1", 30000],
    "url": "http://127.0.0.1:30000/health", "healthy": True, "health_said": 200, "missing_files": [],
    "files": [{"path": "/etc/systemd/system/sglang-qwen.service", "name": "sglang-qwen.service", "kind": "unit",
               "mode": "0644", "uid": 0, "gid": 0, "sha1": "u"},
              {"path": "/etc/default/qwen", "name": "qwen", "kind": "environment_file", "mode": "0600", "uid": 0,
               "gid": 0, "sha1": "e"}],
}
FIRST = {"healthy": False, "checksums": {UNIT: None, ENV: None, SECRETS: None, MARKER: "m", CHECKER: "c"},
         "deployed": None, "unit": {"active_state": "inactive"}, "url": "http://127.0.0.1:30000/health",
         "port_holders": [{"pid": 42, "name": "python3", "unit": "sglang-qwen.service", "address": "127.0.0.1"}]}
ADOPT = {"adopt": "sglang-qwen.service"}


def test_adopting_keeps_the_hand_made_unit_as_the_known_good_and_stops_it():
    got = dp.plan(wants(**ADOPT), facts(adopted=HANDMADE, **FIRST))
    assert got["snapshot"] and got["adopt"] == {"unit": "sglang-qwen.service"} and got["restart"]
    assert got["snapshot_files"] == ["/etc/systemd/system/sglang-qwen.service", "/etc/default/qwen"]
    record = got["snapshot_record"]
    assert record["variant"] == "nextn" and record["server_args"] == {"host": "127.0.0.1", "port": 30000}
    assert record["adopted"] == {"unit": "sglang-qwen.service", "enabled": True, "files": [
        dict((k, f[k]) for k in ("name", "path", "kind", "mode", "uid", "gid")) for f in HANDMADE["files"]]}
    assert got["adopted_from"] == "sglang-qwen.service" and got["baseline_url"] == "http://127.0.0.1:30000"
    assert got["would"] == ("would keep sglang-qwen.service as the known-good, stop and disable it and write %s, %s, "
                            "%s and restart sglang.service; nothing was changed (check mode)" % (UNIT, ENV, SECRETS))
    assert got["running_variant"] == "nextn", "the performance gate's baseline is the hand-made NEXTN"
    assert got["before"] == "nextn", "the summary's variant before is the hand-made unit's"


def test_a_deploy_that_adopted_records_it_and_a_later_one_carries_it_on():
    the_plan = dp.plan(wants(**ADOPT), facts(adopted=HANDMADE, **FIRST))
    ended = dp.outcome(the_plan, run(restarted=True, gate={"state": "healthy"}))
    assert ended["record"]["deployed"]["adopted_from"] == "sglang-qwen.service"
    stopped = dict(HANDMADE, active_state="inactive", sub_state="dead", healthy=False)
    later = dp.plan(wants(**ADOPT), facts(adopted=stopped, checksums=OLD_UNIT,
                                          deployed=dict(DEPLOYED, adopted_from="sglang-qwen.service")))
    assert later["adopt"] is None and later["adopted_from"] == "sglang-qwen.service"
    assert later["snapshot_files"] == [UNIT, ENV, SECRETS], "what runs now (ours) is the known-good from here"


@pytest.mark.parametrize("want, read, words", [
    ({"adopt": "sglang.service"}, {}, "names sglang.service, the unit this deploy manages"),
    (ADOPT, {"adopted": dict(HANDMADE, load_state="not-found")}, "the host has no such unit (not-found)"),
    (ADOPT, {"adopted": dict(HANDMADE, active_state="failed", sub_state="failed")},
     "sglang-qwen.service is failed/failed: only a running, healthy server can be adopted"),
    (ADOPT, {"adopted": dict(HANDMADE, launcher=None, argv=["/usr/bin/python3", "-m", "http.server"])},
     "runs no SGLang server: its ExecStart (/usr/bin/python3 -m http.server) runs neither of sglang.launch_server"),
    (ADOPT, {"adopted": dict(HANDMADE, healthy=False, health_said=503)},
     "is not healthy (http://127.0.0.1:30000/health answered 503)"),
    (ADOPT, {"adopted": dict(HANDMADE, missing_files=["/etc/default/qwen"])},
     "reads /etc/default/qwen, which the host lacks"),
    (ADOPT, {"adopted": HANDMADE, "unit": {"active_state": "active"}},
     "both sglang-qwen.service and sglang.service run"),
], ids=["the managed unit itself", "missing", "not running", "not SGLang", "not healthy", "a file missing",
        "both running"])
def test_a_unit_that_cannot_be_adopted_is_refused_before_any_change(want, read, words):
    base = dict(FIRST, adopted=HANDMADE)
    base.update(read)
    with pytest.raises(dp.InputError) as err:
        dp.plan(wants(**want), facts(**base))
    assert words in str(err.value) and str(err.value).endswith("Nothing was changed."), str(err.value)


ADOPTED_RECORD = {"variant": "nextn", "adopted": {"unit": "sglang-qwen.service", "enabled": True, "files": [
    {"name": "sglang-qwen.service", "path": "/etc/systemd/system/sglang-qwen.service"},
    {"name": "qwen", "path": "/etc/default/qwen"}]}}
KEPT = {"sglang-qwen.service": "u", "qwen": "e"}


@pytest.mark.parametrize("read, restore", [
    ({"known_good_record": {"variant": "nextn"}, "known_good_files": {"sglang.service": SAME[UNIT]}}, False),
    ({"known_good_record": {"variant": "nextn"}, "known_good_files": {"sglang.service": "old"}}, True),
    ({"healthy": False, "known_good_record": {"variant": "nextn"}, "known_good_files": {"sglang.service": SAME[UNIT]}},
     True),
    ({"known_good_record": ADOPTED_RECORD, "known_good_files": KEPT, "unit": {"active_state": "active"},
      "adopted": dict(HANDMADE, active_state="inactive", healthy=False)}, True),
    ({"known_good_record": ADOPTED_RECORD, "known_good_files": KEPT, "unit": {"active_state": "inactive"},
      "adopted": HANDMADE}, False),
    ({"known_good_record": ADOPTED_RECORD, "known_good_files": dict(KEPT, qwen="changed"),
      "unit": {"active_state": "inactive"}, "adopted": HANDMADE}, True),
], ids=["ours serves the known-good's unit: left alone", "ours runs another unit", "ours is not healthy",
        "adopted: ours runs instead", "adopted: the hand-made unit serves, ours stopped", "adopted: a file changed"])
def test_rollback_plan(read, restore):
    check = {"host": "ct200", "unit": "sglang.service", "unit_path": UNIT, "state_dir": "/etc/sglang"}
    # (The known-good's variant: the job's artifacts name what the host serves after a rollback.)
    assert dp.rollback_plan(facts(known_good=True, **read), **check) == {"restore": restore, "known_good": "nextn"}


def test_rollback_without_a_known_good_says_so():
    with pytest.raises(dp.InputError) as err:
        dp.rollback_plan(facts(known_good=False), "ct200", "sglang.service", UNIT, "/etc/sglang")
    assert "ct200: NO KNOWN-GOOD SERVICE on this host (/etc/sglang/known-good/ is empty)" in str(err.value)


SERVES = {
    # Whether the host serves, healthy, without a rollback (back into a gateway's rotation at
    # once; after a rollback the handler puts it back once the known-good is healthy).
    "deployed": True, "unchanged: converged": True, "unchanged: nothing restarted": True, "check mode": False,
    "not retried": False, "rejected command line: failed, bad_argument": True,
    "failed gate: rolled back with its cause": False, "perf gate: slower than the baseline": False,
    "a task failed after the restart: not proven, rolled back": False,
    "a task failed before the restart: failed, nothing to roll back": True,
    "the guard restored the known-good first: undone, nothing left to roll back": False,
}


@pytest.mark.parametrize("name", sorted(SERVES))
def test_the_outcome_says_whether_the_host_serves_without_a_rollback(name):
    the_plan, over = next(c[1:3] for c in OUTCOMES if c[0] == name)
    assert dp.outcome(the_plan, run(**over))["serves"] is SERVES[name]


def test_snapshot_refused_when_the_files_are_not_what_passed():
    edited = dict(OLD_UNIT, **{ENV: sha1("A=2\n")})
    with pytest.raises(dp.InputError, match=r"ct200: the running service cannot become the known-good: "
                                            r"/etc/sglang/sglang.env differ from the deploy record of the NEXTN"):
        dp.plan(wants(), facts(checksums=edited, deployed=RECORDED_HASHES))


def test_unknown_watch_limits_are_refused_by_the_plan_before_anything_changes():
    wants = {"host": "ct200", "variant": "ddtree", "variants": ["ddtree"], "release": "/opt/sglang/releases/r",
             "envelope": {"tp_size": 8, "mem_fraction_static": 0.88}, "overrides": {}, "model_path": "/models/m",
             "draft_model_path": "", "draft": False}
    assert dp.input_problem(dict(wants, watch_limits={"generation_failures": 5})) is None
    said = dp.input_problem(dict(wants, watch_limits={"generation_failure": 5}))
    assert said.startswith("ct200: bad deploy inputs, nothing was changed: unknown watch thresholds: generation_failure "
                           "(known: ") and said.endswith(": fix sglang_watch_limits."), said
