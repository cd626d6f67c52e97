"""The stand-in applies a host's faults only to the variant they name, or each variant its own."""
from __future__ import annotations

import pytest

from sglang_sim.server import Server

CRASH = {"crash_after_ready_s": 5}


@pytest.mark.parametrize("faults, algorithm, expected", [
    (CRASH, "DFLASH", CRASH),
    (CRASH, None, CRASH),
    (dict(CRASH, only_algorithm="DFLASH"), "DFLASH", dict(CRASH, only_algorithm="DFLASH")),
    (dict(CRASH, only_algorithm="DFLASH"), "EAGLE", {}),
    (dict(CRASH, only_algorithm="DFLASH"), None, {}),
    (dict(CRASH, only_algorithm="NONE"), None, dict(CRASH, only_algorithm="NONE")),
    ({}, "DDTREE", {}),
    ({"by_algorithm": {"DDTREE": CRASH, "EAGLE": {"slow_start_s": 25}}}, "DDTREE", CRASH),
    ({"by_algorithm": {"DDTREE": CRASH, "EAGLE": {"slow_start_s": 25}}}, "EAGLE", {"slow_start_s": 25}),
    ({"by_algorithm": {"DDTREE": CRASH}}, None, {}),
])
def test_faults_for(faults, algorithm, expected):
    assert Server.faults_for(faults, algorithm) == expected
