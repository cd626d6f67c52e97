"""The tune on its own: DDTree tried on the Blackwell host (it fits the class's envelope at once
and was measured), NEXTN serving again, byte for byte, and the class's result written."""
from __future__ import annotations

import json
import os

from labverify import UNIT, UNIT_PATH, health_status, reports

RESULT = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "tuned", "blackwell.json")


def test_the_known_good_serves_again_byte_for_byte(blackwell):
    unit = blackwell.file(UNIT_PATH).content_string
    assert unit == blackwell.file("/etc/sglang/known-good/" + UNIT).content_string
    assert "--speculative-algorithm NEXTN" in unit and health_status(blackwell) == 200
    assert json.loads(blackwell.file("/etc/sglang/deployed.json").content_string)["variant"] == "nextn"


def test_the_try_was_a_whole_deploy_and_was_measured(blackwell):
    tried = [r for r in reports(blackwell.lab_name) if r["variant"] == "ddtree"]
    assert [r["outcome"] for r in tried] == ["deployed"]
    assert tried[0]["perf"]["new"]["output_tokens_per_s"] > 0


def test_the_result_says_ddtree_wins_with_its_envelope():
    with open(RESULT) as fh:
        result = json.load(fh)
    assert result["winner"]["variant"] == "ddtree" and result["winner"]["ratio"] > 1.0, result["winner"]
    assert result["winner"]["envelope"]["context_length"] == 131072
    assert result["known_good"]["variant"] == "nextn"
