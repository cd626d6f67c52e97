"""A scripted server process for sglang_health's tests (runs in a lab host under systemd).

It replays log lines, then either exits, kills itself, or serves /health (503 until
`ready_after` seconds, then 200). Configured by one JSON file given as argv[1].
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CFG = json.load(open(sys.argv[1]))
STARTED = time.monotonic()


def log(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Health(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if CFG.get("api_key") and self.headers.get("Authorization") != "Bearer " + CFG["api_key"]:
            self.send_response(401)
        elif time.monotonic() - STARTED >= CFG.get("ready_after", 0) and not CFG.get("never_ready"):
            time.sleep(CFG.get("health_delay", 0))
            self.send_response(200)
        else:
            self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


for line in CFG.get("lines", []):
    log(line)
for i in range(CFG.get("filler_lines", 0)):
    log("[TP0] decode batch %d, #running-req: 4, gen throughput (token/s): 81.2" % i)
time.sleep(CFG.get("sleep", 0))
for line in CFG.get("late_lines", []):
    log(line)
if CFG.get("signal"):
    os.kill(os.getpid(), CFG["signal"])
if "exit" in CFG:
    sys.exit(CFG["exit"])


def announce_ready():
    # SGLang logs this only once warm-up is done, when /health turns 200.
    time.sleep(max(CFG.get("ready_after", 0) - (time.monotonic() - STARTED), 0))
    log("The server is fired up and ready to roll!")


server = ThreadingHTTPServer(("127.0.0.1", CFG.get("port", 30000)), Health)
log("Uvicorn running on http://127.0.0.1:%d (Press CTRL+C to quit)" % CFG.get("port", 30000))
if not CFG.get("never_ready"):
    threading.Thread(target=announce_ready, daemon=True).start()
server.serve_forever()
