#!/usr/bin/env bash
# Install the OS packages entity_resolver's tests and demo need, if missing:
# a PostgreSQL server with pg_trgm (postgresql-contrib) and PL/Python.
set -euo pipefail
PG_MAJOR="${PG_MAJOR:-15}"
need=()
[ -x "/usr/lib/postgresql/${PG_MAJOR}/bin/pg_ctl" ] || need+=("postgresql-${PG_MAJOR}" "postgresql-contrib")
[ -f "/usr/lib/postgresql/${PG_MAJOR}/lib/plpython3.so" ] || need+=("postgresql-plpython3-${PG_MAJOR}")
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=("python3-venv")
command -v runuser >/dev/null || need+=("util-linux")
# --graph (make test): what the graph pictures' tests use, Graphviz's dot
# (SVG, PNG) and headless Chromium (the HTML page's DOM); never needed to run.
if [ "${1:-}" = "--graph" ]; then
  command -v dot >/dev/null || need+=("graphviz")
  command -v chromium >/dev/null || need+=("chromium")
fi
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "system-deps: installing ${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "system-deps: need root to install: ${need[*]}" >&2; exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
