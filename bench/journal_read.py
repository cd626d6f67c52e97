"""Runs inside a lab host: read one invocation's journal the way sglang_health does (the
collection's own module_utils, streamed from journalctl) and print the cost as JSON."""
import json
import resource
import subprocess
import sys
import time

sys.path.insert(0, sys.argv[1])
from ansible_collections.inferops.sglang.plugins.module_utils.journal import (  # noqa: E402
    classify_stream, journal_command, stream_invocation, tail_command,
)


def journalctl_alone(invocation_id, unit, pid):
    """The floor: journalctl printing the same invocation with nobody reading it."""
    started = time.perf_counter()
    subprocess.run(journal_command(invocation_id, "journalctl", unit, int(pid)), stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main(invocation_id, unit, pid):
    floor = journalctl_alone(invocation_id, unit, pid)
    started = time.perf_counter()
    result = classify_stream(stream_invocation(invocation_id, "journalctl", unit, int(pid)), state="failed")
    tail = subprocess.run(tail_command(invocation_id, 200, "journalctl", unit, int(pid)), capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert len(tail) == 200
    seconds = time.perf_counter() - started
    print(json.dumps({
        "seconds": round(seconds, 3), "journalctl_seconds": round(floor, 3), "lines": result["lines"], "cause": result["cause"],
        "first_evidence_line": result["evidence"][0]["line"] if result["evidence"] else None,
        "reader_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "journalctl_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main(*sys.argv[2:5])
