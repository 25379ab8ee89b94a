# Sourced by tests that need packages from the npm registry (bash):
# npm_fixture PACKAGE_JSON DIR installs what PACKAGE_JSON pins into DIR
# (under $B) once, and again only when the file changes. Under a lock
# on DIR: make check runs two tests at once, and two npm installs into
# one folder leave each other's half (MODULE_NOT_FOUND). Exits 77 when
# the registry cannot be reached, 1 when the install fails. The
# registry is the build's only outside traffic, as for the image's
# Debian packages; what a test then runs talks to loopback alone.
npm_fixture() {
	local pkg=$1 dir
	dir=$(realpath -m "$2")
	mkdir -p "$(dirname "$dir")"
	exec 8>"$dir.lock"
	flock 8
	if ! cmp -s "$pkg" "$dir/package.json" || [ ! -f "$dir/.installed" ]; then
		timeout 60 npm ping >/dev/null 2>&1 ||
			{ echo "SKIP: npm registry unreachable"; exit 77; }
		rm -rf "$dir" && mkdir -p "$dir" && cp "$pkg" "$dir/package.json" &&
			(cd "$dir" && timeout 300 npm install --no-audit --no-fund \
			    --loglevel=error >"$dir/install.log" 2>&1) &&
			touch "$dir/.installed" ||
			{ echo "FAIL: npm install (see $dir/install.log)"; rm -f "$dir/package.json"; exit 1; }
	fi
	flock -u 8
	exec 8>&-
}
