# Command substitution: a child process and a pipe.
now=$(echo inner)
echo "got $now"
count=$(printf 'a\nb\nc\n' | { n=0; while read -r _; do n=$((n + 1)); done; echo $n; })
echo "lines: $count"
echo "nested: $(echo "$(echo deep)")"
