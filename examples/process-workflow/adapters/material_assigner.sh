#!/bin/sh
# material-assigner.v2: reads {"parse": {"items": [...]}, "route": {"route": R, ...}}
# (canonical JSON on stdin) and prints {"route": R, "assignments": [{"item", "material"}]},
# the material of each item chosen by the route. Item names hold no quotes or commas.
set -eu
in=$(cat)
route=$(printf '%s' "$in" | sed -n 's/.*"route":{"route":"\([^"]*\)".*/\1/p')
items=$(printf '%s' "$in" | sed -n 's/.*"items":\[\([^]]*\)\].*/\1/p')
case "$route" in
  weld) material=steel ;;
  paint) material=pigment ;;
  *) material=general ;;
esac
printf '{"route":"%s","assignments":[' "$route"
printf '%s' "$items" | awk -v m="$material" 'BEGIN { RS = "," } {
  gsub(/^[ \n"]+|[ \n"]+$/, "", $0)
  if ($0 == "") next
  printf "%s{\"item\":\"%s\",\"material\":\"%s\"}", (n++ ? "," : ""), $0, m
}'
printf ']}\n'
