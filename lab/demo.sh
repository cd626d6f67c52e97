#!/usr/bin/env bash
# `make demo`, once the lab is up: deploy DDTree to ct200 in the lab and show the result.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo: ansible-playbook -i inventory/lab playbooks/deploy_ddtree.yml -l ct200"
rc=0
.venv/bin/ansible-playbook -i inventory/lab playbooks/deploy_ddtree.yml -l ct200 || rc=$?
echo
echo "== result (reports/ct200/latest.txt) =="
cat reports/ct200/latest.txt
echo
echo "== status (playbooks/status.yml) =="
# The whole status message, every line of it (the JSON callback keeps it in one field).
ANSIBLE_STDOUT_CALLBACK=ansible.posix.json ANSIBLE_LOAD_CALLBACK_PLUGINS=1 \
  .venv/bin/ansible-playbook -i inventory/lab playbooks/status.yml -l ct200 \
  | .venv/bin/python lab/show_messages.py "Show the status" || true
exit "$rc"
