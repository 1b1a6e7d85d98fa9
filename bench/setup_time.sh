#!/usr/bin/env bash
# bench/setup_time.sh REV [SETUP ARGS]: ./setup.sh of revision REV, timed, in a fresh clone
# with a fresh data dir, HOME and models cache, under $BENCH_DIR (default a new temporary
# directory); pip's download cache is $PIP_CACHE_DIR (keep it warm across runs so that
# the figures are install time, not download time). Prints one line: exit code, wall
# time, the longest silence between two output lines, the .venv's size.
set -euo pipefail
rev=${1:?usage: bench/setup_time.sh REV [SETUP ARGS]}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$root"
git clone -q "$repo" "$root/clone"
git -C "$root/clone" checkout -q "$rev"
export MNEMOWEAVE_HOME=$root/home MNEMOWEAVE_MODELS=$root/models HOME=$root/home-dir
mkdir -p "$HOME"
cd "$root/clone"
start=$(date +%s.%N)
set +e
./setup.sh "$@" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$root/output.txt"
code=${PIPESTATUS[0]}
set -e
end=$(date +%s.%N)
silence=$(awk -v last="$start" '{ if ($1 - last > most) most = $1 - last; last = $1 } END { printf "%.1f", most }' "$root/output.txt")
printf 'rev=%s args=%s exit=%s wall_s=%.0f longest_silence_s=%s venv_mb=%s output=%s\n' \
  "$rev" "$*" "$code" "$(echo "$end - $start" | bc)" "$silence" "$(du -sm .venv | cut -f1)" "$root/output.txt"
