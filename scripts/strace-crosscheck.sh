#!/usr/bin/env bash
# Cross-checks the counting VFS against the kernel: runs `strata bench` for one strategy
# at a time under `strace -f -c -e trace=fsync,fdatasync` and prints, side by side, the
# sync requests the VFS counted over the process and the fsync/fdatasync system calls
# strace counted. The unix VFS also fsyncs the directory inside the first xSync of a new
# WAL or journal file: strace sees those, the VFS does not count them separately.
#
#   scripts/strace-crosscheck.sh [strategy ...]      (default: naive tick-full tick-normal strata)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STRATA_BIN:-.build/release/strata}
[ -x "$bin" ] || { echo "build first: swift build -c release --product strata" >&2; exit 1; }
command -v strace >/dev/null || { echo "strace is missing: apt-get install strace" >&2; exit 1; }
strategies=("$@")
[ ${#strategies[@]} -gt 0 ] || strategies=(naive tick-full tick-normal strata)
printf '| strategy | VFS sync requests (process) | fsync + fdatasync syscalls (strace) | difference |\n|---|---|---|---|\n'
for s in "${strategies[@]}"; do
  out=$(mktemp -d)
  strace -f -c -e trace=fsync,fdatasync -o "$out/strace.txt" \
    "$bin" bench --strategies "$s" --no-scaling-check --seconds "${SECONDS_PER_STRATEGY:-4}" \
    --entities "${ENTITIES:-1000}" --moving "${MOVING:-1000}" --out "$out" --name r --json > /dev/null
  vfs=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['sync_requests_whole_process'])" "$out/r.json")
  calls=$(awk '$NF=="fsync"||$NF=="fdatasync"{n+=$4} END{print n+0}' "$out/strace.txt")
  printf '| `%s` | %s | %s | %+d |\n' "$s" "$vfs" "$calls" $((calls - vfs))
  rm -rf "$out"
done
