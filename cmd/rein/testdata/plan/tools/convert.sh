#!/bin/sh
# Reads {"celsius": N} on stdin and prints {"fahrenheit": N*9/5+32}.
LC_ALL=C; export LC_ALL
set -eu
c=$(sed -n 's/.*"celsius"[[:space:]]*:[[:space:]]*\(-\{0,1\}[0-9.eE+-]*\).*/\1/p')
echo "convert_temperature $c" >> calls.log
awk -v c="$c" 'BEGIN { printf "{\"fahrenheit\": %.1f}\n", c * 9 / 5 + 32 }'
