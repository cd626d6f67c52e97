#!/usr/bin/env bash
# `make demo`, after the lab is up: deploy DDTree to ct200 in the lab and show the result.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAYBOOK=playbooks/deploy_ddtree.yml
if [ ! -f "$PLAYBOOK" ]; then
  echo "demo: the lab is up ($(.venv/bin/python lab/labctl.py status | wc -l) hosts)."
  echo "demo: $PLAYBOOK does not exist yet; it would deploy DDTree to ct200 (blackwell, 8 GPUs)."
  exit 0
fi
.venv/bin/ansible-playbook -i inventory/lab "$PLAYBOOK" -l ct200
