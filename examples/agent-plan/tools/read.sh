#!/bin/sh
# read.sh KIND FIELD: reads {"FIELD": "id"} on stdin and prints data/KIND/id.json.
set -eu
id=$(sed -n "s/.*\"$2\"[[:space:]]*:[[:space:]]*\"\([A-Za-z0-9-]*\)\".*/\1/p")
file="data/$1/$id.json"
if [ -z "$id" ] || [ ! -f "$file" ]; then
  echo "no $1 entry \"$id\"" >&2
  exit 3 # a business error: the agent sees it in the plan's answer
fi
cat "$file"
