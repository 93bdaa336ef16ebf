#!/bin/sh
# Reads {"celsius": N} on stdin and prints {"fahrenheit": N*9/5+32}, to 0.1°.
set -eu
export LC_ALL=C
c=$(sed -n 's/.*"celsius"[[:space:]]*:[[:space:]]*\(-\{0,1\}[0-9.eE+-]*\).*/\1/p')
awk -v c="$c" 'BEGIN { printf "{\"fahrenheit\": %.1f}\n", c * 9 / 5 + 32 }'
