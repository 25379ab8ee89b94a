# Redirections, reading files, descriptors: builtins only.
printf 'pear 3\napple 10\nfig 7\n' >fruit.txt
echo "banana 1" >>fruit.txt
total=0
while read -r name n; do
	printf '%-8s %3d\n' "$name" "$n"
	total=$((total + n))
done <fruit.txt
echo "total $total"
exec 3<fruit.txt
read -r -u 3 first
exec 3<&-
echo "first line: $first"
exec 4>log.txt
echo "to fd 4" >&4
echo "again" >&4
exec 4>&-
mapfile -t lines <log.txt
echo "log has ${#lines[@]} lines: ${lines[*]}"
[[ -f fruit.txt && ! -e missing && -s log.txt ]] && echo "tests ok"
mkdir_ok=no; [[ -d dir ]] && mkdir_ok=yes; echo "dir exists: $mkdir_ok"
{ echo a; echo b; } >grouped.txt
read -r -d '' all <grouped.txt
echo "grouped: ${all//$'\n'/,}"
set -o noclobber
{ echo no >fruit.txt; } 2>/dev/null || echo "noclobber kept fruit.txt"
echo end
