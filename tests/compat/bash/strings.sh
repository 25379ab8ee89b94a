# Parameter expansion, arrays, [[ =~ ]], printf -v: builtins only.
s="The quick brown fox jumps over the lazy dog"
echo "${#s} ${s:4:5} ${s//o/0} ${s^^} ${s,,}"
echo "${s#* } | ${s##* } | ${s% *} | ${s%% *}"
words=($s)
echo "${#words[@]} words, third ${words[2]}, last ${words[-1]}"
declare -A count
for w in "${words[@]}"; do
	w=${w,,}
	count[${w:0:1}]=$((${count[${w:0:1}]:-0} + 1))
done
n=0; for k in t q b f j o l d; do n=$((n + ${count[$k]:-0})); done
echo "letters counted: $n"
if [[ "2026-11-24" =~ ^([0-9]+)-([0-9]+)-([0-9]+)$ ]]; then
	echo "year ${BASH_REMATCH[1]} month ${BASH_REMATCH[2]} day ${BASH_REMATCH[3]}"
fi
printf -v padded '%08.3f|%-6s|%6s' 3.14159 ab cd
echo "$padded"
case "$s" in
*fox*) echo "has a fox" ;;
*) echo "no fox" ;;
esac
x=abc; y=${x/b/XYZ}; echo "$y ${x@Q} ${#y}"
