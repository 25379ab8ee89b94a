#!/bin/sh
# bench-policy: keep's compiled evaluator beside Cedar (npm
# @cedar-policy/cedar-wasm under node) on the same generated policies and
# requests, in the same run, and the ratio of the medians.
# Run by `make bench-policy`. Cedar is installed under build/cedar on
# first use; without node or npm (or the registry) its side is reported
# as unavailable, with the reason.
B=${B:-build}
CEDAR_VERSION=${CEDAR_VERSION:-4}
data=$B/bench/policy-data
mkdir -p "$data" || exit 1

echo "== keep (compiled decision tables; per decision, batches of 100)"
"$B/bench/policy" "$data" | tee "$data/keep.txt" || exit 1

echo "== Cedar (@cedar-policy/cedar-wasm in node; per call)"
mod=$(pwd)/$B/cedar/node_modules/@cedar-policy/cedar-wasm/nodejs
why=
if ! command -v node >/dev/null 2>&1; then
	why="node is not installed (apt-get install nodejs)"
elif [ ! -e "$mod/cedar_wasm.js" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		why="npm is not installed (apt-get install npm)"
	else
		mkdir -p "$B/cedar"
		( cd "$B/cedar" && npm install --no-audit --no-fund --silent \
		    "@cedar-policy/cedar-wasm@$CEDAR_VERSION" ) >"$B/cedar/npm.log" 2>&1 ||
		    why="npm install @cedar-policy/cedar-wasm failed (see $B/cedar/npm.log)"
	fi
fi
if [ -z "$why" ] && [ ! -e "$mod/cedar_wasm.js" ]; then
	why="the package has no nodejs build at $mod"
fi
if [ -n "$why" ]; then
	echo "cedar: unavailable: $why"
	exit 0
fi
echo "cedar-wasm $(node -e "console.log(require('$mod/package.json').version)")"
node bench/policy_cedar.mjs "$data" "$mod/cedar_wasm.js" | tee "$data/cedar.txt" || exit 1

echo "== ratio (Cedar p50 / keep p50, quota off)"
awk '
FNR == 1 { file++ }
file == 1 && $7 == "off" { keep[$3 "-" $5] = $11 }
file == 2 { cedar[$3 "-" $5] = $11 }
END {
	for (k in keep) if (k in cedar) {
		split(k, a, "-")
		t = ""
		if (a[1] == 1000) t = keep[k] < 50 ? "  (target < 50 ns: met)" : "  (target < 50 ns: MISSED)"
		printf "rules %5d  principals %6d  keep %.1f ns  cedar %.1f ns  keep %.0fx faster%s\n", a[1], a[2], keep[k], cedar[k], cedar[k] / keep[k], t
	}
}' "$data/keep.txt" "$data/cedar.txt" | sort -n -k2 -k4
