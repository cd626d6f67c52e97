"""Reading one invocation's journal lines: message extraction, tail, streaming."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.journal import (
    journal_command, message_of, read_lines,
)

INV = "0d9a06bb2d5c4f468ad0238c790c858f"


def test_command_reads_the_invocation_and_systemds_lines_about_it():
    cmd = journal_command(INV)
    assert cmd[-3:] == ["_SYSTEMD_INVOCATION_ID=" + INV, "+", "INVOCATION_ID=" + INV]
    assert "--output=short-iso-precise" in cmd


def test_command_adds_the_main_pid_of_the_unit_when_known():
    cmd = journal_command(INV, unit="sglang.service", main_pid=4242)
    assert cmd[-3:] == ["+", "_SYSTEMD_UNIT=sglang.service", "_PID=4242"]
    assert journal_command(INV, unit="sglang.service", main_pid=0)[-1] == "INVOCATION_ID=" + INV


@pytest.mark.parametrize("bad", ["", None, "abc", INV + "; rm -rf /"])
def test_command_rejects_anything_but_an_invocation_id(bad):
    with pytest.raises(ValueError):
        journal_command(bad)


@pytest.mark.parametrize("line, message", [
    ("2026-11-30T17:44:41.363204+0000 sh[270]: Not enough memory.", "Not enough memory."),
    ("2026-11-30T17:44:41.363697+0000 systemd[1]: x.service: Failed with result 'exit-code'.",
     "x.service: Failed with result 'exit-code'."),
    ("2026-11-30T17:44:41.363697+0000 python3[9]: [2026-11-30 10:00:00 TP0] a: b", "[2026-11-30 10:00:00 TP0] a: b"),
    ("    continuation of a multi-line message", "    continuation of a multi-line message"),
])
def test_message_of(line, message):
    assert message_of(line) == message


def test_tail_is_whole_lines_and_bounded():
    lines = ["2026-11-30T17:44:41.%06d+0000 python3[9]: line %d" % (i, i) for i in range(1000)]
    lines.append("2026-11-30T17:44:42.000000+0000 systemd[1]: sglang.service: Failed with result 'exit-code'.")
    result = read_lines(lines, tail_lines=10, state="failed")
    assert len(result["tail"]) == 10 and result["tail"][-1].endswith("'exit-code'.")
    assert result["lines"] == 1001 and result["cause"] == "unknown"
