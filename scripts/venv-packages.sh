# Sourced by the setup scripts: `pip_pkg <dist name> <version> <required|optional>` installs one
# pinned package into .venv unless its dist-info is already there (an optional one that failed
# once is not retried until its marker file is deleted). Needs say/warn defined by the caller.
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
