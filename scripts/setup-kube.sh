#!/usr/bin/env bash
# Builds kube-apiserver v1.37.2 and etcd v3.7.0 from the Go tools module in tools/kube into the
# machine-level cache, then links them into .bin/ (the Kubernetes discovery tests start both).
#
#   ${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}/kube-1.37.2/{kube-apiserver,etcd}
#   .bin/kube-apiserver -> cache, .bin/etcd -> cache
#
# A fresh clone on the same machine reuses the cached binaries (a link, well under a second).
# With an empty cache it builds from the Go module proxy: ~7 min of CPU with both cores free,
# ~2.4 GB RAM at the link, ~3 GB of Go build cache. Under CI=true a failed build fails setup;
# otherwise it warns and the Kubernetes tests skip. CACHEROUTE_SKIP_KUBE=1 skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

KUBE_VERSION=1.37.2
ETCD_VERSION=3.7.0
CACHE_ROOT="${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}"
CACHE="$CACHE_ROOT/kube-$KUBE_VERSION"

say() { printf 'setup-kube: %s\n' "$*"; }
warn() { printf 'setup-kube: WARNING: %s\n' "$*" >&2; }
fail() {
  if [ "${CI:-}" = true ]; then
    echo "setup-kube: $* (CI needs kube-apiserver and etcd for the discovery tests)" >&2
    exit 1
  fi
  warn "$*; the Kubernetes discovery tests will skip"
  exit 0
}

link_bins() {
  mkdir -p .bin
  ln -sfn "$CACHE/kube-apiserver" .bin/kube-apiserver
  ln -sfn "$CACHE/etcd" .bin/etcd
}

have_bins() { [ -x "$CACHE/kube-apiserver" ] && [ -x "$CACHE/etcd" ]; }

if have_bins; then
  link_bins
  say "kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION present ($CACHE)"
  exit 0
fi
if [ "${CACHEROUTE_SKIP_KUBE:-0}" = 1 ]; then
  fail "CACHEROUTE_SKIP_KUBE=1: not building kube-apiserver/etcd"
fi
command -v go >/dev/null 2>&1 || fail "Go not found: cannot build kube-apiserver/etcd"

mkdir -p "$CACHE"
# One build at a time per machine; a concurrent setup waits, then finds the binaries.
exec 9>"$CACHE/.build.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if have_bins; then
  link_bins
  say "kube-apiserver and etcd present (built by a concurrent setup)"
  exit 0
fi

# Without these -X flags /version reports v0.0.0-master and kubectl refuses the server.
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"

build() { # build <output name> <package>
  local out="$CACHE/$1" tmp="$CACHE/.$1.tmp.$$"
  say "building $1 ($2) into $CACHE (first time on this machine; several minutes)"
  if (cd tools/kube && go build -trimpath -ldflags "$ldflags" -o "$tmp" "$2"); then
    mv -f "$tmp" "$out"
  else
    rm -f "$tmp"
    return 1
  fi
}

start=$(date +%s)
[ -x "$CACHE/etcd" ] || build etcd go.etcd.io/etcd/server/v3 || fail "etcd build failed"
[ -x "$CACHE/kube-apiserver" ] || build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ||
  fail "kube-apiserver build failed"
# Whole output first: `| grep -q` under pipefail can fail when the writer gets SIGPIPE.
kube_reported=$("$CACHE/kube-apiserver" --version 2>/dev/null || true)
[[ "$kube_reported" == *"v$KUBE_VERSION"* ]] || fail "kube-apiserver --version is not v$KUBE_VERSION"
link_bins
say "built kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION in $(( $(date +%s) - start )) s"
