"""make bench: measure what the collection promises, on the lab. Prints one table and
writes it to bench/results.md with the date, the machine's core count and the commands.

Rows so far: journal classification (10k/100k/1M-line invocations: seconds and peak
memory of the reader on the host) and failure detection (journal's "Failed with result"
to sglang_health's verdict) against a naive `uri` + `until` loop with `delay: 5`.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.integration.ansible_run import run_module, run_playbook  # noqa: E402
from tests.integration.labhost import LabHost, labctl  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "5"))
HOST = LabHost("ct200")


def copy_module_utils(host):
    """The collection's module_utils on the host, importable under their collection path."""
    base = "/opt/bench/ansible_collections/inferops/sglang/plugins/module_utils"
    for rel in ("ansible_collections", "ansible_collections/inferops", "ansible_collections/inferops/sglang",
                "ansible_collections/inferops/sglang/plugins", "ansible_collections/inferops/sglang/plugins/module_utils"):
        host.put("/opt/bench/%s/__init__.py" % rel, "")
    for path in (REPO / "plugins" / "module_utils").glob("*.py"):
        host.put("%s/%s" % (base, path.name), path.read_text())
    host.put("/opt/bench/journal_read.py", (REPO / "bench" / "journal_read.py").read_text())


def generator_unit(host, name, lines, error_at):
    """A unit whose one invocation logs `lines` SGLang-like lines, the OOM line at `error_at`."""
    script = ("import sys\nw=sys.stdout.write\n"
              "for i in range(%d):\n"
              "    w('RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\\n' if i == %d "
              "else '[2026-11-30 10:00:00 TP0] Decode batch. #running-req: 16, #token: %%d, gen throughput (token/s): 81.2\\n' %% i)\n"
              "sys.exit(1)\n") % (lines, error_at)
    host.put("/opt/bench/%s.py" % name, script)
    host.put("/etc/systemd/system/%s.service" % name,
             "[Service]\nExecStart=/usr/bin/python3 /opt/bench/%s.py\n" % name)
    host.run("systemctl daemon-reload; systemctl reset-failed %s 2>/dev/null; systemctl start %s" % (name, name))
    host.wait_for(lambda: host.show(name + ".service", "ActiveState")["ActiveState"] == "failed",
                  600, interval=0.5, what=name)
    host.run("journalctl --sync")
    return host.show(name + ".service", "InvocationID", "ExecMainPID")


def bench_journal():
    copy_module_utils(HOST)
    rows = []
    for lines in (10_000, 100_000, 1_000_000):
        props = generator_unit(HOST, "bench-journal", lines, error_at=50)
        runs = []
        for rep in range(REPS):  # noqa: B007
            out = HOST.run(["python3", "/opt/bench/journal_read.py", "/opt/bench", props["InvocationID"],
                            "bench-journal.service", props["ExecMainPID"]]).stdout
            runs.append(json.loads(out))
        assert all(r["cause"] == "kv_pool_oom" and r["lines"] >= lines for r in runs), runs
        rows.append({"lines": lines, "seconds": statistics.median(r["seconds"] for r in runs),
                     "reader_rss": max(r["reader_peak_rss_mib"] for r in runs),
                     "journalctl_rss": max(r["journalctl_peak_rss_mib"] for r in runs)})
    return rows


def failed_with_result_time(host, unit):
    out = host.run(["journalctl", "-u", unit, "-o", "short-unix", "--no-pager"]).stdout
    return float([l for l in out.splitlines() if "Failed with result" in l][-1].split()[0])


def start_failing(host, kind):
    faults = {"oom_kill": "memory_pool", "oom_kill_target": "launcher"} if kind == "oom_kill" else {}
    host.put("/etc/inferops-lab/faults.json", json.dumps(faults))
    # ct200's DDTree envelope at 0.45 leaves the KV pool no room (the memory model's kv-pool OOM).
    fraction = "0.85" if kind == "oom_kill" else "0.45"
    argv = ("--model-path /models/Qwen3.6-27B --tp-size 8 --mem-fraction-static %s --context-length 131072 "
            "--max-running-requests 64 --port 30009 --speculative-algorithm DDTREE --speculative-draft-model-path "
            "/models/Qwen3.6-27B-DFlash --speculative-num-draft-tokens 16" % fraction)
    host.put("/etc/systemd/system/bench-fail.service", (
        "[Service]\nEnvironment=PYTHONPATH=/opt/inferops-lab\nExecStart=/usr/bin/python3 -m sglang_sim %s\n" % argv))
    host.run("systemctl daemon-reload; systemctl reset-failed bench-fail 2>/dev/null; systemctl start bench-fail")


def bench_detection():
    rows = []
    for kind in ("kv_pool_oom", "oom_kill"):
        ours, naive = [], []
        for rep in range(REPS):  # noqa: B007
            start_failing(HOST, kind)
            res = run_module("ct200", "inferops.sglang.sglang_health",
                             {"unit": "bench-fail.service", "url": "http://127.0.0.1:30009/health", "timeout": 120,
                              "fail_on_unhealthy": False, "progress_interval": 0})
            ours.append(res["observed_at"] - failed_with_result_time(HOST, "bench-fail.service"))
        start_failing(HOST, kind)
        started = time.time()
        proc = naive_wait(retries=12)
        naive.append(time.time() - started)
        HOST.run("rm -f /etc/inferops-lab/faults.json")
        rows.append({"kind": kind, "median": statistics.median(ours), "max": max(ours), "naive": naive[0],
                     "naive_rc": proc.returncode})
    return rows


def naive_wait(retries):
    """How most playbooks wait: uri + until, delay 5. It cannot see the unit at all."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        fh.write("- hosts: ct200\n  gather_facts: false\n  tasks:\n"
                 "    - ansible.builtin.uri: {url: 'http://127.0.0.1:30009/health'}\n"
                 "      register: r\n      until: r.status == 200\n      retries: %d\n      delay: 5\n" % retries)
    try:
        return run_playbook(fh.name)
    finally:
        os.unlink(fh.name)


def main():
    labctl("up", "ct129:a6000", "ct200:blackwell")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    journal = bench_journal()
    detection = bench_detection()
    lines = ["# inferops.sglang benchmarks", "",
             "%s, %d cores, lab host ct200 (podman, systemd %s), medians of %d runs. Produced by `make bench`"
             " (`python bench/bench.py`)." % (started, os.cpu_count(),
                                              HOST.run("systemctl --version").stdout.split()[1], REPS), "",
             "| measurement | result | baseline / goal |", "| --- | --- | --- |"]
    for row in detection:
        lines.append("| failure detection, %s: journal's `Failed with result` to sglang_health's verdict | "
                     "median %.2f s, max %.2f s | naive `uri`+`until` (delay 5, retries 12): no verdict, gave up after "
                     "%.0f s; goal <= 1 s |" % (row["kind"], row["median"], row["max"], row["naive"]))
    base = journal[0]["seconds"] / journal[0]["lines"]
    for row in journal:
        lines.append("| journal classification, %s-line invocation (reader on the host) | %.3f s, reader peak RSS "
                     "%.1f MiB, journalctl %.1f MiB | %.2fx the 10k rate per line%s |" % (
                         "{:,}".format(row["lines"]), row["seconds"], row["reader_rss"], row["journalctl_rss"],
                         (row["seconds"] / row["lines"]) / base, "; goal 100k <= 1 s" if row["lines"] == 100_000 else ""))
    text = "\n".join(lines) + "\n"
    print(text)
    (REPO / "bench" / "results.md").write_text(text)


if __name__ == "__main__":
    main()
