"""Deploy helpers for the lab tests: run a playbook on one host, read its report, ask the host."""
from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from lab.labctl import RESET_SERVICE
from tests.integration.ansible_run import run_playbook
from tests.integration.labhost import REPORTS, labctl

UNIT = "/etc/systemd/system/sglang.service"


def reset_service(host):
    """A host with no SGLang service: unit, state and reports gone (releases are kept)."""
    host.run(RESET_SERVICE)
    subprocess.run(["rm", "-rf", str(REPORTS / host.name)], check=True)


def report(host) -> dict:
    return json.loads((REPORTS / host.name / "latest.json").read_text())


def invocation(host) -> str:
    return host.show("sglang.service", "InvocationID")["InvocationID"]


def faults(host, **values):
    """The stand-in's faults on a lab host (lab/sglang_sim), until removed."""
    host.put("/etc/inferops-lab/faults.json", json.dumps(values))


def rolled_back(proc, host, cause):
    """The deploy failed the play with `cause`, and its rollback brought NEXTN back healthy."""
    rep = report(host)
    assert proc.returncode != 0, "a rolled-back deploy fails the play"
    assert rep["outcome"] == "rolled_back" and rep["cause"] == cause, rep["diagnosis"]
    assert rep["rollback"]["state"] == "healthy" and "rolled back to NEXTN: healthy in" in rep["diagnosis"]
    return rep


def deploy(playbook, host, **extra_vars):
    return run_playbook("playbooks/%s.yml" % playbook, limit=host.name, extra_vars=extra_vars or None)


def recap(proc, host) -> dict:
    line = next(l for l in proc.stdout.splitlines() if l.startswith(host.name + " ") and "ok=" in l)
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def healthy(host) -> bool:
    return host.peek("python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:30000/health', "
                     "timeout=10).status)\"").stdout.strip() == "200"


def answered_200(host, before) -> bool:
    """The unit restarted since the invocation `before` and its server answered a health check 200."""
    now = invocation(host)
    return now not in ("", before) and '"GET /health HTTP/1.1" 200' in host.peek(
        ["journalctl", "_SYSTEMD_INVOCATION_ID=" + now, "--no-pager", "-o", "cat"]).stdout


def cut_after_first_200(face, node, deploy):
    """Run `deploy()` (a playbook run restarting `face`) and cut the lab host `node` off the lab
    network as soon as face's new server answered its first health check 200: (the run's
    result, seconds from the cut to the run's end; None when the run ended before)."""
    before = invocation(face)
    with ThreadPoolExecutor(1) as pool:
        deploying = pool.submit(deploy)
        face.wait_for(lambda: deploying.done() or answered_200(face, before), 180, 0.2, "the first 200")
        cut_at = None if deploying.done() else time.monotonic()
        if cut_at is not None:
            labctl("cut", node)
        result = deploying.result()
    return result, None if cut_at is None else round(time.monotonic() - cut_at, 1)


STATE = "/etc/sglang/"
# The crash_when_file fault's trigger: a new server given it serves until the test creates this
# file, then crashes (and again at each start while it is there).
CRASH_FILE = "/etc/inferops-lab/crash-now"


def pending(host) -> bool:
    """A switch is pending on the host (its guard armed)."""
    return host.peek(["cat", STATE + "pending.json"]).returncode == 0


def guard_result(host):
    """What the host's guard last did (guard.json; written as a restore begins, and again as it ends), or None."""
    out = host.peek(["cat", STATE + "guard.json"])
    return json.loads(out.stdout) if out.returncode == 0 else None


# What guard.json says while a restore of the guard's runs.
UNFINISHED = "the guard's run did not finish"


def watch_record(host):
    """The host's watch of its last confirmed switch (watch.json), or None."""
    out = host.peek(["cat", STATE + "watch.json"])
    return json.loads(out.stdout) if out.returncode == 0 else None


def watching(host, variant):
    """The host's watch of `variant` while it runs (its record), or None."""
    record = watch_record(host)
    return record if record and not record.get("ended") and record.get("variant") == variant else None


def watch_restored(host):
    """The host's watch restored the known-good and its restore ended: guard.json's result, or None."""
    result = guard_result(host) or {}
    return result if result.get("reason") == "watch" and result.get("error") != UNFINISHED else None


def main_process_exited(host, since):
    """When (epoch seconds) systemd saw sglang.service's main process exit, the first time after
    `since` (epoch seconds), from the journal; None if it has not."""
    out = host.peek(["journalctl", "-u", "sglang.service", "--no-pager", "-o", "json", "--since", "@%d" % int(since)],
                    check=True)
    for line in out.stdout.splitlines():
        entry = json.loads(line)
        if str(entry.get("MESSAGE", "")).startswith("sglang.service: Main process exited"):
            return int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return None


def wait_for_the_guard(host, timeout):
    """The host's guard ended the switch (its result said, nothing pending); returns its result, or
    fails with what the host says of its guard."""
    try:
        host.wait_for(lambda: guard_result(host) is not None and not pending(host), timeout, 0.5, "the guard's result")
    except AssertionError as exc:
        raise AssertionError("%s\n%s" % (exc, guard_evidence(host))) from None
    return guard_result(host)


def guard_evidence(host):
    """What the host says of its guard and its service, for a row whose guard did not act in time."""
    out = host.run("cat %spending.json; systemctl list-timers --all --no-pager 'sglang-guard*'; "
                   "journalctl --no-pager -n 60 -u 'sglang-guard*' -u sglang.service" % STATE, check=False)
    return out.stdout[-6000:]


def crash_after_the_kill(host):
    """The controller is gone: the kill came while the gate waited (the switch is still in its gate
    phase, not taken over for a rollback, a later point of the matrix), and the new server now
    crashes (CRASH_FILE). Returns when it was told to."""
    phase = host.run(["cat", STATE + "pending.json"], check=False)
    assert phase.returncode == 0 and json.loads(phase.stdout)["phase"] == "gate", \
        "the kill did not land while the gate waited: %s\n%s" % (phase.stdout, guard_evidence(host))
    host.run(["touch", CRASH_FILE])
    return time.time()


# Traffic in another language, run on a lab host for at most 180 s or until stop_traffic(): two
# clients in a loop, each a 48-token /generate; what each request's meta_info says of its accept
# length is printed to TRAFFIC_LOG.
TRAFFIC_LOG = "/run/traffic.log"
OTHER_LANGUAGE_PROMPT = "サーバーが二回再起動した理由を、ログを見ながら説明してください。"
OTHER_LANGUAGE_TRAFFIC = r"""
import json, os, threading, time, urllib.request
def client():
    end = time.time() + 180
    while os.path.exists("/run/traffic-on") and time.time() < end:
        body = json.dumps({"text": "%s",
                           "sampling_params": {"max_new_tokens": 48}}).encode()
        req = urllib.request.Request("http://127.0.0.1:30000/generate", data=body, headers={
            "Content-Type": "application/json", "Authorization": "Bearer lab-api-key-not-secret"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                print(json.load(resp)["meta_info"].get("spec_accept_length"), flush=True)
        except Exception as exc:
            print("error", exc, flush=True)
            time.sleep(0.5)
threads = [threading.Thread(target=client) for _ in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
""" % OTHER_LANGUAGE_PROMPT


def start_other_language_traffic(host):
    host.put("/run/traffic-on", "")
    host.put("/run/traffic.py", OTHER_LANGUAGE_TRAFFIC)
    host.run("setsid nohup python3 /run/traffic.py > %s 2>&1 < /dev/null &" % TRAFFIC_LOG)


def stop_traffic(host):
    host.run("rm -f /run/traffic-on")
