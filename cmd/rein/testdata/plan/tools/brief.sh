#!/bin/sh
# Reads {"city": "...", "fahrenheit": N} on stdin and prints {"brief": "..."}.
LC_ALL=C; export LC_ALL
set -eu
in=$(cat)
city=$(printf '%s' "$in" | sed -n 's/.*"city"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
f=$(printf '%s' "$in" | sed -n 's/.*"fahrenheit"[[:space:]]*:[[:space:]]*\(-\{0,1\}[0-9.eE+-]*\).*/\1/p')
echo "write_brief $city" >> calls.log
awk -v city="$city" -v f="$f" 'BEGIN { printf "{\"brief\": \"%s: %.1f F\"}\n", city, f }'
