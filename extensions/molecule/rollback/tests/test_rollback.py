"""rollback.yml brought NEXTN back from host state alone, byte for byte."""
from __future__ import annotations

import json

from labverify import UNIT, UNIT_PATH, health_status


def test_the_known_good_unit_runs_again(a6000):
    unit = a6000.file(UNIT_PATH).content_string
    assert unit == a6000.file("/etc/sglang/known-good/" + UNIT).content_string
    assert "--speculative-algorithm NEXTN" in unit and "DDTREE" not in unit
    assert health_status(a6000) == 200
    assert a6000.service(UNIT).is_running and a6000.service(UNIT).is_enabled


def test_the_record_of_what_runs_is_the_known_good_one(a6000):
    deployed = json.loads(a6000.file("/etc/sglang/deployed.json").content_string)
    assert deployed["variant"] == "nextn"
    assert deployed == json.loads(a6000.file("/etc/sglang/known-good/meta.json").content_string)
