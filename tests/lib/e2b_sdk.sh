# Sourced by the tests that drive keepd through E2B's own SDK (bash):
# e2b_sdk_install puts npm's e2b and @e2b/code-interpreter, as
# tests/e2b/package.json pins them, into $B/e2b-sdk once, and sets sdk.
# Under a lock: make check runs two tests at once, and two npm installs
# into one folder leave each other's half (MODULE_NOT_FOUND). Exits 77
# when the registry cannot be reached, 1 when the install fails.
e2b_sdk_install() {
	sdk=$(realpath -m "$B/e2b-sdk")
	mkdir -p "$B"
	exec 8>"$B/e2b-sdk.lock"
	flock 8
	if ! cmp -s tests/e2b/package.json "$sdk/package.json" ||
	    [ ! -d "$sdk/node_modules/@e2b/code-interpreter" ]; then
		timeout 60 npm ping >/dev/null 2>&1 ||
			{ echo "SKIP: npm registry unreachable"; exit 77; }
		rm -rf "$sdk" && mkdir -p "$sdk" && cp tests/e2b/package.json "$sdk/" &&
			(cd "$sdk" && timeout 300 npm install --no-audit --no-fund \
			    --loglevel=error >"$sdk/install.log" 2>&1) ||
			{ echo "FAIL: npm install (see $sdk/install.log)"; rm -f "$sdk/package.json"; exit 1; }
	fi
	flock -u 8
	exec 8>&-
}
