#!/bin/sh
# The backup weather source: reads {"city": "..."} on stdin and prints
# data/<city>.json (lower-cased). The input schema only admits letters,
# spaces and hyphens, so a city cannot name a path outside data/.
set -eu
export LC_ALL=C
city=$(sed -n 's/.*"city"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | tr 'A-Z' 'a-z')
file="data/$city.json"
if [ ! -f "$file" ]; then
  echo "no weather data for city \"$city\"" >&2
  exit 3
fi
cat "$file"
