# Exit status, && and ||, traps, set -e, functions returning: builtins only.
trap 'echo "bye from trap, status $?"' EXIT
check() { [[ $1 -gt 10 ]]; }
check 5 && echo "5 > 10" || echo "5 <= 10"
check 50 && echo "50 > 10" || echo "50 <= 10"
false; echo "false gave $?"
! false && echo "negation works"
f() { return 7; }
f; echo "f returned $?"
set -e
g() { echo "in g"; return 0; }
g
h() { return 4; }
h || echo "h failed with $?"
echo "before the end"
exit 3
