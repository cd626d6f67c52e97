"""async_wait on the host: reads the job's status file as async_status does and answers the
moment the job ends, or after `wait` seconds while it runs."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.sglang.plugins.modules import async_wait


class Clock:
    def __init__(self, path, writes):
        """`writes`: {second: text}, written to the status file when the clock reaches it."""
        self.now, self.path, self.writes = 0.0, path, dict(writes)

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now = round(self.now + seconds, 3)
        for at in sorted(self.writes):
            if at <= self.now:
                self.path.write_text(self.writes.pop(at))


RUNNING = json.dumps({"started": 1, "finished": 0, "ansible_job_id": "1.2"})
DONE = json.dumps({"changed": False, "state": "healthy", "elapsed": 6.1})


@pytest.mark.parametrize("first, writes, wait, ended, waited", [
    (RUNNING, {2.0: DONE}, 10, True, 2.0),
    (RUNNING, {}, 3, False, 3.0),
    (RUNNING, {}, 0, False, 0.0),
    (DONE, {}, 10, True, 0.0),
    ("", {0.4: RUNNING, 1.0: DONE}, 10, True, 1.0),
    (RUNNING, {1.0: json.dumps({"failed": True, "msg": "boom", "finished": 1, "started": 1})}, 10, True, 1.0),
], ids=["ends within the wait", "still running after the wait", "no wait", "already ended",
        "file not written yet", "job failed"])
def test_answers_when_the_job_ends_or_after_the_wait(tmp_path, first, writes, wait, ended, waited):
    path = tmp_path / "1.2"
    path.write_text(first)
    clock = Clock(path, writes)
    status, took = async_wait.wait_for_job(str(path), wait, clock=clock.monotonic, sleep=clock.sleep)
    assert async_wait.ended(status) is ended and took == pytest.approx(waited, abs=0.21)


def test_a_status_file_that_does_not_parse_is_a_failed_job(tmp_path):
    path = tmp_path / "1.3"
    path.write_text("Traceback (most recent call last):")
    status = async_wait.read_status(str(path))
    assert async_wait.ended(status) and status["failed"] and "could not parse" in status["msg"]


def test_a_missing_file_is_not_ended(tmp_path):
    assert async_wait.read_status(str(tmp_path / "none")) is None and not async_wait.ended(None)
