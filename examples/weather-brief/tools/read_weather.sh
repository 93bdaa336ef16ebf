#!/bin/sh
# Reads {"city": "..."} on stdin and prints data/<city>.json (lower-cased).
set -eu
city=$(sed -n 's/.*"city"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | tr 'A-Z' 'a-z')
file="data/$city.json"
if [ ! -f "$file" ]; then
  echo "no weather data for city \"$city\"" >&2
  exit 3
fi
cat "$file"
