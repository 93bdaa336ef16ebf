#!/bin/sh
# Reads {"order": "1042"} on stdin and prints data/charges/1042.json.
set -eu
order=$(sed -n 's/.*"order"[[:space:]]*:[[:space:]]*"\([A-Za-z0-9-]*\)".*/\1/p')
file="data/charges/$order.json"
if [ -z "$order" ] || [ ! -f "$file" ]; then
  echo "no charges for order \"$order\"" >&2
  exit 3
fi
cat "$file"
