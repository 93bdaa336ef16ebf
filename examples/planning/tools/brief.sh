#!/bin/sh
# Reads {city, celsius, fahrenheit, conditions} and prints {"brief": "..."}.
set -eu
export LC_ALL=C
in=$(cat)
field() { printf '%s' "$in" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"; }
awk -v city="$(field city)" -v c="$(field celsius)" -v f="$(field fahrenheit)" -v cond="$(field conditions)" \
  'BEGIN { printf "{\"brief\": \"%s: %.1f°C / %.1f°F, %s.\"}\n", city, c, f, cond }'
