#!/bin/sh
# Reads {"order": "1042"} on stdin and prints data/orders/1042.json.
set -eu
order=$(sed -n 's/.*"order"[[:space:]]*:[[:space:]]*"\([A-Za-z0-9-]*\)".*/\1/p')
file="data/orders/$order.json"
if [ -z "$order" ] || [ ! -f "$file" ]; then
  echo "no order \"$order\"" >&2
  exit 3 # a business error: the agent sees it as an observation
fi
cat "$file"
