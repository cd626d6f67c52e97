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
.venv/bin/ansible-playbook -i inventory/lab playbooks/status.yml -l ct200 | grep -E '"msg"|msg:' || true
exit "$rc"
