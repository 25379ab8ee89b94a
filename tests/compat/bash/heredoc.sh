# Here-documents and here-strings feeding builtins (bash writes a
# here-document to a pipe when it fits, else to a temporary file).
read -r a b c <<<"one two three"
echo "$c $b $a"
while IFS=: read -r user id; do
	echo "user $user has id $id"
done <<EOF2
alice:1001
bob:1002
EOF2
n=0
while read -r line; do n=$((n + ${#line})); done <<'EOF2'
$not_expanded
plain text
EOF2
echo "chars: $n"
