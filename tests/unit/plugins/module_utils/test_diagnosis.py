"""The diagnosis text of a deploy, as a data table: headline, cause, speed, rollback."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.diagnosis import diagnosis as sglang_diagnosis
from ansible_collections.inferops.sglang.plugins.module_utils.diagnosis import rollback_result as sglang_rollback_result

OOM = {"state": "failed", "elapsed": 7.04, "cause": "kv_pool_oom", "phase": "memory pool", "reason": "exit-code 1",
       "evidence": [{"match": "  RuntimeError: Not enough memory. Current value: mem_fraction_static=0.88 "}],
       "tail": ["x"], "hint": "lower sglang_envelope_overrides.context_length (now 0.88)"}
TIMEOUT = {"state": "timeout", "elapsed": 15, "cause": "timeout", "phase": "loading", "reason": "HTTP 503",
           "evidence": [], "tail": ["Load weight end.  "], "hint": "raise sglang_health_timeout"}
HEALTHY = {"state": "healthy", "elapsed": 15.23, "cause": None}
NEW = {"output_tokens_per_s": 738.72, "accept_length": 6.4}
DFLASH = {"variant": "DFLASH", "output_tokens_per_s": 597.42, "source": "measured"}
KEPT = {"enabled": True, "min_ratio": 1.0, "variant": "DDTREE", "new": NEW, "ratio": 1.237, "baseline": DFLASH,
        "verdict": "kept"}
SLOWER = dict(KEPT, new={"output_tokens_per_s": 400.0}, ratio=0.681, verdict="slower_than_baseline")
BENCH_FAILED = dict(KEPT, new=None, ratio=None, baseline=None, error="4 of 4 requests failed: HTTP 500",
                    verdict="bench_failed")
NO_BASELINE = dict(KEPT, ratio=None, baseline=None, baseline_error="connection refused", verdict="no_baseline")
MEASURED = dict(KEPT, enabled=False, ratio=None, baseline=None, verdict="measured")
BACK = {"state": "healthy", "elapsed": 5.71}
OOM_LINES = ("  cause:    kv_pool_oom (phase memory pool; exit-code 1)\n"
             "  evidence: RuntimeError: Not enough memory. Current value: mem_fraction_static=0.88\n"
             "  hint:     lower sglang_envelope_overrides.context_length (now 0.88)\n")

CASES = [
    # (id, outcome, gate, perf, rollback, known_good, expected)
    ("deployed", "deployed", HEALTHY, None, None, "NEXTN",
     "ct129: DDTREE deployed, healthy in 15.2 s"),
    # In check mode the failure text is the plan's "would ..." (tests/unit/plugins/module_utils/test_deploy_plan.py).
    ("check mode says what would change", "check", {"skipped": True}, None, None, "NEXTN",
     "ct129: DDTREE boom"),
    ("kv-pool OOM, rolled back", "rolled_back", OOM, None, BACK, "NEXTN",
     "ct129: DDTREE deploy failed in 7.0 s\n"
     + OOM_LINES +
     "  rolled back to NEXTN: healthy in 5.7 s"),
    ("timeout: the journal's last line is the evidence", "rolled_back", TIMEOUT, None, BACK, "NEXTN",
     "ct129: DDTREE deploy timeout in 15 s\n"
     "  cause:    timeout (phase loading; HTTP 503)\n"
     "  evidence: Load weight end.\n"
     "  hint:     raise sglang_health_timeout\n"
     "  rolled back to NEXTN: healthy in 5.7 s"),
    ("the rollback failed too", "rolled_back", OOM, None, {"state": "failed", "cause": "oom_killed", "hint": "free memory"},
     "NEXTN",
     "ct129: DDTREE deploy failed in 7.0 s\n"
     + OOM_LINES +
     "  rolled back to NEXTN: failed - oom_killed: free memory"),
    ("no known-good", "rolled_back", OOM, None, None, None,
     "ct129: DDTREE deploy failed in 7.0 s\n"
     + OOM_LINES +
     "  NO KNOWN-GOOD SERVICE EXISTED: nothing to roll back to; sglang.service is stopped and this\n"
     "  host serves nothing until a working variant is deployed."),
    ("kept by the performance gate", "deployed", HEALTHY, KEPT, None, "DFLASH",
     "ct129: DDTREE deployed, healthy in 15.2 s\n"
     "  speed:    DDTREE 738.72 tok/s (accept length 6.4) vs DFLASH 597.42 tok/s (measured) = 1.237x (at least 1.0x required)"),
    ("slower than the known-good", "rolled_back", HEALTHY, SLOWER, BACK, "DFLASH",
     "ct129: DDTREE deploy rolled back: healthy in 15.2 s but slower than the known-good\n"
     "  cause:    slower_than_baseline (DDTREE 400.0 tok/s is 0.681x DFLASH's 597.42 tok/s; at least 1.0x required)\n"
     "  hint:     keep DFLASH on this host class, where it is faster, or lower sglang_perf_gate.min_ratio to accept a slower variant\n"
     "  speed:    DDTREE 400.0 tok/s vs DFLASH 597.42 tok/s (measured) = 0.681x (at least 1.0x required)\n"
     "  rolled back to DFLASH: healthy in 5.7 s"),
    ("failing under load", "rolled_back", HEALTHY, BENCH_FAILED, BACK, "DFLASH",
     "ct129: DDTREE deploy rolled back: healthy in 15.2 s but failing under load\n"
     "  cause:    bench_failed (4 of 4 requests failed: HTTP 500)\n"
     "  hint:     read the server journal: it answers health checks but fails requests\n"
     "  rolled back to DFLASH: healthy in 5.7 s"),
    ("no baseline, with the reason", "deployed", HEALTHY, NO_BASELINE, None, "NEXTN",
     "ct129: DDTREE deployed, healthy in 15.2 s\n"
     "  speed:    DDTREE 738.72 tok/s (accept length 6.4); no baseline to compare with: connection refused"),
    ("measured only (gate off)", "deployed", HEALTHY, MEASURED, None, "NEXTN",
     "ct129: DDTREE deployed, healthy in 15.2 s\n"
     "  speed:    DDTREE 738.72 tok/s (accept length 6.4)"),
    ("not retried", "not_retried", None, KEPT, None, "NEXTN",
     "ct129: DDTREE not retried: boom"),
    ("stopped before the restart", "failed", None, KEPT, None, "NEXTN",
     "ct129: ddtree deploy stopped before the service was restarted: boom"),
]


@pytest.mark.parametrize("outcome, gate, perf, rollback, known_good, expected",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_diagnosis(outcome, gate, perf, rollback, known_good, expected):
    assert sglang_diagnosis("ct129", "ddtree", outcome, "boom", gate, perf, rollback, known_good) == expected


LEFT = {"released": False, "waited": True, "elapsed": 60.1,
        "msg": "60 s after sglang.service stopped, GPU 0 has 44036 MiB used by no process. The known-good service "
               "was not started into GPUs that are not free: reset the GPUs (nvidia-smi --gpu-reset) or reboot, then "
               "run playbooks/rollback.yml"}


@pytest.mark.parametrize("rollback, known_good, leftovers, last", [
    (BACK, "NEXTN (sglang-qwen.service, adopted)", {"released": True, "waited": False, "elapsed": 0.2},
     "rolled back to NEXTN (sglang-qwen.service, adopted): healthy in 5.7 s"),
    (BACK, "NEXTN", {"released": True, "waited": True, "elapsed": 4.26},
     "rolled back to NEXTN: healthy in 5.7 s (after 4.3 s for what sglang.service left behind)"),
    ({}, "NEXTN", LEFT, "rolled back to NEXTN: restored but NOT STARTED - " + LEFT["msg"]),
], ids=["an adopted known-good", "waited for leftovers", "the GPUs did not come free"])
def test_the_rollback_line_says_what_was_restored_and_what_it_waited_for(rollback, known_good, leftovers, last):
    said = sglang_diagnosis("ct129", "ddtree", "rolled_back", "", OOM, None, rollback, known_good, "sglang.service",
                            leftovers)
    assert said.splitlines()[-1] == "  " + last


@pytest.mark.parametrize("rollback, restored, ok, msg", [
    ({"gate": BACK, "known_good": "NEXTN", "leftovers": {}}, True, True, "ct129: rolled back to NEXTN: healthy in 5.7 s"),
    ({"gate": {}, "known_good": "NEXTN", "leftovers": LEFT}, True, False,
     "ct129: rolled back to NEXTN: restored but NOT STARTED - " + LEFT["msg"]),
    ({}, False, True, "ct129: the known-good service already serves, healthy: left alone"),
    ({"guard": {"why": "the host restarted during DDTREE's gate", "time": 1796300040.0, "restored": "nextn",
                "healthy": True, "seconds": 4.26}}, False, True,
     "ct129: earlier, the host restarted during DDTREE's gate at 12:14:00; the host restored NEXTN by itself, healthy "
     "in 4.3 s.\nct129: the known-good service already serves, healthy: left alone"),
], ids=["healthy", "not started", "left alone", "what the guard did before, said first"])
def test_rollback_result(rollback, restored, ok, msg):
    assert sglang_rollback_result(rollback, "ct129", "sglang.service", restored) == {"ok": ok, "msg": msg}


@pytest.mark.parametrize("restored, msg", [
    (True, "ct129: check mode: would restore NEXTN and start it in place of sglang.service (nothing was changed; "
           "a real run proves it healthy)"),
    (False, "ct129: the known-good service already serves, healthy: left alone"),
], ids=["would restore", "left alone, as in a real run"])
def test_a_rollbacks_check_says_what_it_would_restore_and_passes(restored, msg):
    said = sglang_rollback_result({"known_good": "NEXTN", "gate": {}}, "ct129", "sglang.service", restored, check=True)
    assert said == {"ok": True, "msg": msg}


def test_a_switch_the_guard_undid_first_is_said_in_one_line():
    said = sglang_diagnosis("ct200", "ddtree", "rolled_back", "the host's guard restored the known-good before this "
                            "deploy confirmed the switch (...)", HEALTHY, KEPT, None, "NEXTN",
                            cause="guard_acted_first")
    assert said == ("ct200: DDTREE deploy undone: the host's guard restored the known-good before this deploy "
                    "confirmed the switch (...)")


def test_a_failure_after_the_restart_does_not_claim_the_service_was_left_alone():
    said = sglang_diagnosis("ct200", "ddtree", "failed", "the known-good is incomplete: ...", cause="failed_after_restart")
    assert said == "ct200: ddtree deploy failed after the restart, what runs is not known: the known-good is incomplete: ..."


def test_a_task_that_failed_after_the_restart_is_quoted_in_the_headline_before_the_rollback():
    said = sglang_diagnosis("ct200", "ddtree", "rolled_back", "Failed to exec: container state improper", None, None,
                            {"state": "healthy", "elapsed": 3.21}, "NEXTN", cause="task_failed")
    assert said.splitlines() == [
        "ct200: DDTREE deploy rolled back: a task failed after the restart, outside the gates: Failed to exec: "
        "container state improper",
        "  rolled back to NEXTN: healthy in 3.2 s"]
