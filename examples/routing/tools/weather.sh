#!/bin/sh
# Reads {"text": "weather: <city>"} on stdin and prints data/<city>.json.
set -eu
export LC_ALL=C
city=$(sed -n 's/.*"text"[[:space:]]*:[[:space:]]*"weather:[[:space:]]*\([A-Za-z][A-Za-z -]*\)".*/\1/p' | tr 'A-Z' 'a-z')
file="data/$city.json"
if [ -z "$city" ] || [ ! -f "$file" ]; then
  echo "no weather data for city \"$city\"" >&2
  exit 3
fi
cat "$file"
