#!/usr/bin/env bash
# `make demo`, once the lab is up: the incident, played on the lab in six steps, its ending
# (what a person did by hand for hours) by the collection itself.
# A second `make demo` plays it again from the start: step 1 removes the lab hosts' SGLang
# service, state and reports (the releases stay built) before it deploys NEXTN.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_CONFIG="$PWD/ansible.cfg" INFEROPS_REPORT_DIR="$PWD/reports" INFEROPS_TUNE_DIR="$PWD/build/demo-tuned"
# The hosts are reached as production's are, over SSH with ControlPersist and pipelining
# (`labctl inventory --ssh`, as the bench does): a task costs about half a podman exec.
SSH_INVENTORY=build/demo-ssh-inventory.yml
PLAY=(.venv/bin/ansible-playbook -i inventory/lab -i "$SSH_INVENTORY")
started=$SECONDS

step() {  # step N "what it shows"
  echo
  echo "=== step $1 of 6: $2 ($((SECONDS - started)) s in) ==="
}

run() {  # run ARGS...: print the command, run it, keep going whatever it returns
  local shown="" arg
  for arg in "$@"; do
    if [[ $arg == *[[:space:]\"]* ]]; then shown+=" '${arg//$'\n'/ }'"; else shown+=" $arg"; fi
  done
  echo "\$ ansible-playbook -i inventory/lab -i $SSH_INVENTORY${shown}"
  "${PLAY[@]}" "$@" > "build/demo-step.log" 2>&1 || true
  # The fleet summary and the recap are what an operator reads first.
  sed -n '/^PLAY RECAP/,$p' build/demo-step.log
}

diagnosis() {  # diagnosis HOST OUTCOME CAUSE: show the report; stop the demo unless it ended so
  echo "--- reports/$1/latest.txt ---"
  cat "reports/$1/latest.txt"
  .venv/bin/python - "$@" <<'CHECK'
import json, sys
host, outcome, cause = sys.argv[1], sys.argv[2], sys.argv[3] or None
report = json.load(open("reports/%s/latest.json" % host))
if (report["outcome"], report["cause"]) != (outcome, cause):
    sys.exit("demo: %s ended %s (%s), not %s (%s) as the incident did" % (host, report["outcome"], report["cause"],
                                                                        outcome, cause))
CHECK
}

learned() {  # learned CLASS VARIANT: show the class's tune result; stop the demo unless VARIANT won
  PYTHONPATH=collections .venv/bin/python - "$INFEROPS_TUNE_DIR" "$@" <<'CHECK'
import json, sys
from ansible_collections.inferops.sglang.plugins.module_utils import tune
folder, cls, variant = sys.argv[1:]
result = json.load(open("%s/%s.json" % (folder, cls)))
print("--- %s/%s.json ---" % (folder, cls))
print(tune.table([result]))
if result.get("winner", {}).get("variant") != variant:
    sys.exit("demo: the %s tune's winner is %s, not %s" % (cls, result.get("winner"), variant))
CHECK
}

mkdir -p build
.venv/bin/python lab/labctl.py inventory --ssh > "$SSH_INVENTORY"
step 1 "NEXTN on ct129 (RTX A6000) and ct200 (RTX PRO 6000 Blackwell), proven healthy"
.venv/bin/python lab/labctl.py reset ct129 ct200
rm -rf reports/ct129 reports/ct200 "$INFEROPS_TUNE_DIR"
run playbooks/deploy_nextn.yml -l ct129,ct200 -e sglang_serial=0
diagnosis ct129 deployed ""
diagnosis ct200 deployed ""

step 2 "DDTree on ct129: it fails, the cause is named in seconds, NEXTN is restored"
run playbooks/deploy_ddtree.yml -l ct129
diagnosis ct129 rolled_back kv_pool_oom

step 3 "DDTree on ct129 again, with the incident's second envelope (0.95, 32768, 4)"
# (The preflight's memory estimate is a lower bound; it is skipped so that SGLang itself meets the limit.)
overrides='{"mem_fraction_static": 0.95, "context_length": 32768, "max_running_requests": 4}'
run playbooks/deploy_ddtree.yml -l ct129 -e "{\"sglang_envelope_overrides\": $overrides, \"sglang_check_fit\": false}"
diagnosis ct129 rolled_back cuda_graph_failed

step 4 "The rest of the incident, by itself: on each class's canary, the envelope each variant fits and the fastest variant"
# (Each candidate and the known-good measured with 8 requests of 64 tokens, not the role's 16 of
# 128: about 3 s a measurement on a lab host instead of 11, the same ranking here.)
workload='{"api": "generate", "stream": true, "requests": 8, "concurrency": 4, "max_new_tokens": 64, "warmup": 1}'
run playbooks/tune.yml -l ct129,ct200 -e "{\"sglang_tune_workload\": $workload}"
learned a6000 dflash
learned blackwell ddtree

step 5 "Each class deploys what it learned: DFlash on ct129, DDTree on ct200"
# (Each class's canary is its only host here: the two canaries switch side by side.)
run playbooks/deploy.yml -l ct129,ct200 -e sglang_envelope_from=tuned -e sglang_canary=true -e sglang_serial=0
diagnosis ct129 deployed ""
diagnosis ct200 deployed ""

step 6 "status of both hosts, in full"
echo "\$ ansible-playbook -i inventory/lab -i $SSH_INVENTORY playbooks/status.yml -l ct129,ct200"
# The whole status message, every line of it (the JSON callback keeps it in one field).
ANSIBLE_STDOUT_CALLBACK=ansible.posix.json ANSIBLE_LOAD_CALLBACK_PLUGINS=1 \
  "${PLAY[@]}" playbooks/status.yml -l ct129,ct200 \
  | .venv/bin/python lab/show_messages.py "Show the status" || true
echo
echo "demo: the six steps took $((SECONDS - started)) s"
