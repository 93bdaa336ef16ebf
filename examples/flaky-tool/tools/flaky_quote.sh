#!/bin/sh
# Exit 75 tells rein "transient: retry me". Calls are counted per run.
set -eu
count="${TMPDIR:-/tmp}/rein-flaky-${REIN_RUN_ID:-manual}"
n=$(cat "$count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$count"
if [ "$n" -le 2 ]; then
  echo "quote service busy (call $n)" >&2
  exit 75
fi
rm -f "$count"
echo '{"symbol": "ACME", "price": 101.5}'
