#!/usr/bin/env bash
# lmms-eval in its own virtual environment (torch CPU build, transformers: GBs that never enter the main
# install), then the one test that needs it. Usage: bash .ci/lmms-step.sh [VENV_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-${TMPDIR:-/tmp}/urbanarena-lmms-venv}"
start=$(date +%s)
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
"$venv/bin/python" -m pip install -q torch==2.13.0
"$venv/bin/python" -m pip install -q -c .ci/lmms-constraints.txt "lmms-eval>=0.7" -e . pytest pytest-timeout
# the registry's torchvision wheel does not load with the CPU torch build (its ops fail to register);
# transformers and lmms-eval's text and image paths run without it
"$venv/bin/python" -m pip uninstall -q -y torchvision
installed=$(date +%s)
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_harness_lmms.py
echo "lmms-eval step: install $((installed - start)) s, test $(( $(date +%s) - installed )) s"
