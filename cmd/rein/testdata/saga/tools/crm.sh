#!/bin/sh
# A fake CRM for tests: each operation reads its args (JSON) on stdin and
# changes crm.state, one line per object, in the folder it runs in.
#   create_customer {name, region}   → customer <id> region=<r> active
#   archive_customer {id}            → customer <id> … archived
#   link_item {customer, item}       → link <customer> <item>
#   unlink_item {customer, item}     → the link line is removed (fails for item "locked")
#   notify {customer, to}            → notified <customer> <to>
#   check_region {customer, region}  → exit 1 unless region is "eu"
#   guess_region {name}              → {"region": "us"}, changes nothing
set -eu
op=$1
in=$(cat)
field() { printf '%s' "$in" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"; }
state=crm.state
touch "$state"
case $op in
create_customer)
	id="cust-$(field name)"
	echo "customer $id region=$(field region) active" >> "$state"
	printf '{"id": "%s"}\n' "$id" ;;
archive_customer)
	id=$(field id)
	sed -i "s/^customer $id \(.*\) active$/customer $id \1 archived/" "$state"
	printf '{"archived": "%s"}\n' "$id" ;;
link_item)
	echo "link $(field customer) $(field item)" >> "$state"
	printf '{"linked": "%s"}\n' "$(field item)" ;;
unlink_item)
	item=$(field item)
	if [ "$item" = locked ]; then echo "item $item is locked" >&2; exit 1; fi
	grep -v "^link $(field customer) $item\$" "$state" > "$state.new" || true
	mv "$state.new" "$state"
	printf '{"unlinked": "%s"}\n' "$item" ;;
notify)
	echo "notified $(field customer) $(field to)" >> "$state"
	printf '{"sent": true}\n' ;;
check_region)
	if [ "$(field region)" != eu ]; then echo "customer $(field customer) is not in region $(field region)" >&2; exit 1; fi
	printf '{"ok": true}\n' ;;
guess_region)
	printf '{"region": "us"}\n' ;;
*)
	echo "unknown operation $op" >&2; exit 2 ;;
esac
