#!/usr/bin/env bash
# Builds the two deploy tools the Helm and Envoy Gateway tests run, from the Go tools modules in
# tools/helm and tools/envoy-gateway, into the machine-level cache, then links them into .bin/:
#
#   ${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}/helm-4.3.2/helm            .bin/helm -> cache
#   ${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}/envoy-gateway-1.9.1/envoy-gateway
#                                                                    .bin/envoy-gateway -> cache
#
# A fresh clone on the same machine reuses the cached binaries (a link, well under a second). With
# an empty cache it builds from the Go module proxy (helm about 1.5 min, envoy-gateway about 3 min
# on 2 free cores). Under CI=true a failed build fails setup; otherwise it warns and the Helm and
# Envoy Gateway tests skip. CACHEROUTE_SKIP_DEPLOY_TOOLS=1 skips the builds.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=4.3.2
EG_VERSION=1.9.1
CACHE_ROOT="${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}"

say() { printf 'setup-deploy-tools: %s\n' "$*"; }
fail() {
  if [ "${CI:-}" = true ]; then
    echo "setup-deploy-tools: $* (CI needs helm and envoy-gateway for the deploy tests)" >&2
    exit 1
  fi
  printf 'setup-deploy-tools: WARNING: %s; the tests that need it will skip\n' "$*" >&2
}

# tool <name> <version> ... : builds (once) and links one tool; outside CI a failure warns and
# goes on to the next tool.
# tool <name> <version> <tools module dir> <package> <ldflags> <version check regexp>
tool() {
  local name="$1" version="$2" module="$3" pkg="$4" ldflags="$5" check="$6"
  local cache="$CACHE_ROOT/$name-$version"
  local bin="$cache/$name"
  if [ ! -x "$bin" ]; then
    [ "${CACHEROUTE_SKIP_DEPLOY_TOOLS:-0}" != 1 ] || { fail "CACHEROUTE_SKIP_DEPLOY_TOOLS=1: not building $name"; return 0; }
    command -v go >/dev/null 2>&1 || { fail "Go not found: cannot build $name"; return 0; }
    mkdir -p "$cache"
    # One build at a time per machine; a concurrent setup waits, then finds the binary.
    exec 9>"$cache/.build.lock"
    ! command -v flock >/dev/null 2>&1 || flock 9
    if [ ! -x "$bin" ]; then
      local tmp="$cache/.$name.tmp.$$" start
      start=$(date +%s)
      say "building $name $version into $cache (first time on this machine; minutes)"
      if (cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"); then
        mv -f "$tmp" "$bin"
        say "built $name $version in $(($(date +%s) - start)) s"
      else
        rm -f "$tmp"
        fail "$name build failed"
        return 0
      fi
    fi
    exec 9>&-
  fi
  # Read the whole output first: `cmd | grep -q` under pipefail fails at random when grep exits
  # at the first match and the tool then dies of SIGPIPE (exit 141).
  local reported
  reported=$("$bin" version 2>/dev/null || true)
  [[ "$reported" == *"$check"* ]] || { fail "$bin version does not report $version"; return 0; }
  mkdir -p .bin
  ln -sfn "$bin" ".bin/$name"
  say "$name $version present ($cache)"
}

# Without the -X flags `helm version` reports v4.3 and `envoy-gateway version` reports nothing.
tool helm "$HELM_VERSION" tools/helm helm.sh/helm/v4/cmd/helm \
  "-s -w -X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION" "v$HELM_VERSION"
tool envoy-gateway "$EG_VERSION" tools/envoy-gateway github.com/envoyproxy/gateway/cmd/envoy-gateway \
  "-s -w -X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=v$EG_VERSION" "v$EG_VERSION"
