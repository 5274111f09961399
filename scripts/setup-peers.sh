#!/usr/bin/env bash
# The peer routers the benchmarks compare against, from their wheels into .venv (created by
# scripts/setup-core.sh): sglang-router==0.3.2 and vllm-router==0.1.17. Optional: a wheel that
# cannot install is a warning, and the benchmarks that need it fail to start that contender.
# Idempotent, well under a second when both are there. Run by scripts/setup.sh and by the
# benchmarks (bench/components.ts).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup-peers: %s\n' "$*"; }
warn() { printf 'setup-peers: WARNING: %s\n' "$*" >&2; }

[ -x .venv/bin/python ] || bash scripts/setup-core.sh
# shellcheck source=scripts/venv-packages.sh
source scripts/venv-packages.sh
pip_pkg sglang-router 0.3.2 optional
pip_pkg vllm-router 0.1.17 optional
