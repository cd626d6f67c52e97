"""Reading one invocation's journal lines: message extraction, tail, streaming."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.journal import (
    classify_stream, journal_command, tail_command,
)

INV = "0d9a06bb2d5c4f468ad0238c790c858f"


def test_command_reads_the_invocation_and_systemds_lines_about_it():
    cmd = journal_command(INV)
    assert cmd[-3:] == ["_SYSTEMD_INVOCATION_ID=" + INV, "+", "INVOCATION_ID=" + INV]
    assert "--output=cat" in cmd, "the classifier reads bare messages: timestamps cost journalctl half its time"


def test_command_adds_the_main_pid_of_the_unit_when_known():
    cmd = journal_command(INV, unit="sglang.service", main_pid=4242)
    assert cmd[-3:] == ["+", "_SYSTEMD_UNIT=sglang.service", "_PID=4242"]
    assert journal_command(INV, unit="sglang.service", main_pid=0)[-1] == "INVOCATION_ID=" + INV


@pytest.mark.parametrize("bad", ["", None, "abc", INV + "; rm -rf /"])
def test_command_rejects_anything_but_an_invocation_id(bad):
    with pytest.raises(ValueError):
        journal_command(bad)


def test_tail_command_reads_the_last_lines_with_timestamps():
    cmd = tail_command(INV, 200, unit="sglang.service", main_pid=7)
    assert "--output=short-iso-precise" in cmd and "--lines=200" in cmd
    assert cmd[-3:] == ["+", "_SYSTEMD_UNIT=sglang.service", "_PID=7"]


def test_classify_stream_reads_a_generator_once():
    def messages():
        yield "Load weight end. elapsed=1.0 s"
        for i in range(1000):
            yield "decode %d" % i
        yield "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    result = classify_stream(messages(), state="failed")
    assert result["cause"] == "kv_pool_oom" and result["lines"] == 1002 and result["phase"] == "weights_loaded"
