#!/bin/sh
# Reads {"order": "A-1042"} on stdin and prints data/A-1042.json.
set -eu
order=$(sed -n 's/.*"order"[[:space:]]*:[[:space:]]*"\([A-Za-z0-9-]*\)".*/\1/p')
file="data/$order.json"
if [ -z "$order" ] || [ ! -f "$file" ]; then
  echo "no order \"$order\"" >&2
  exit 3 # a business error: not retried
fi
cat "$file"
