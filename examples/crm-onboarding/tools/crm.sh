#!/bin/sh
# A fake CRM: each operation reads its args (JSON) on stdin and changes
# crm.state in this folder, one line per object, so you can see what a run
# and its remediation did.
#   create_customer {name, region}   → customer <id> region=<r> active
#   archive_customer {id}            → customer <id> region=<r> archived
#   link_item {customer, item}       → link <customer> <item>
#   unlink_item {customer, item}     → the link line goes (fails for an item
#                                      listed in crm.locked)
#   notify {customer, to}            → notified <customer> <to>
#   lookup_region {name}             → {"region": …} from data/regions.txt
set -eu
op=$1
in=$(cat)
field() { printf '%s' "$in" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"; }
state=crm.state
touch "$state"
case $op in
create_customer)
	id="cust-$(field name | tr 'A-Z ' 'a-z-')"
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
	if [ -f crm.locked ] && grep -qx "$(field item)" crm.locked; then
		echo "item $(field item) is locked in the CRM" >&2; exit 1
	fi
	grep -v "^link $(field customer) $(field item)\$" "$state" > "$state.new" || true
	mv "$state.new" "$state"
	printf '{"unlinked": "%s"}\n' "$(field item)" ;;
notify)
	echo "notified $(field customer) $(field to)" >> "$state"
	printf '{"sent": true}\n' ;;
lookup_region)
	region=$(sed -n "s/^$(field name)=//p" data/regions.txt)
	printf '{"region": "%s"}\n' "${region:-unknown}" ;;
*)
	echo "unknown operation $op" >&2; exit 2 ;;
esac
