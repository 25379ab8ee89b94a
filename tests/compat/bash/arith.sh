# Arithmetic, loops and functions: bash builtins only.
sum=0
for ((i = 1; i <= 100; i++)); do
	((sum += i * i))
done
echo "sum of squares: $sum"
n=27 steps=0
while ((n != 1)); do
	if ((n % 2)); then n=$((3 * n + 1)); else n=$((n / 2)); fi
	((steps++))
done
echo "collatz 27: $steps steps"
fact() { if (($1 <= 1)); then r=1; else fact $(($1 - 1)); r=$((r * $1)); fi; }
fact 20
echo "20! = $r"
printf '%x %o %e\n' 255 8 12345.678
echo $((2 ** 62)) $((-7 / 2)) $((-7 % 2)) $((1 << 10))
