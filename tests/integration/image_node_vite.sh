#!/usr/bin/env bash
# An agent's dev server (docs/vmm.md, "File change events"): Vite's, from
# npm (tests/vite/package.json pins it), in the node image, started by
# node as `npm run dev` starts it. Its TypeScript config and module are
# compiled by esbuild, a Go program Vite runs as a child and talks to
# over pipes; its bundler is rollup's native addon; its watcher is
# inotify. tests/vite/probe.mjs fetches the page and the module over the
# guest's loopback, edits the module and waits for Vite's reload. Before,
# rollup's addon could not load (the image lacked glibc's librt) and
# fs.watch threw ENOSYS. The project is a directory of the workspace, as
# `npm create vite` makes one: at / itself Vite's watcher (chokidar)
# takes / for removed and restarts the server in a loop, natively too
# (docs/compat.md). npm's registry is reached at install time only
# (tests/lib/npm_fixture.sh); the test's own traffic is the guest's
# loopback.
source "$(dirname "$0")/../lib/guest.sh"
source tests/lib/npm_fixture.sh
K=$B/keys/dev.public; I=$B/images
[ -e "$I/node.img" ] || { bad "$I/node.img is missing (make images)"; exit 1; }
npm_fixture tests/vite/package.json "$B/vite-app"

ws=$tmp/ws; mkdir -p "$ws/app"
cp -al "$B/vite-app/node_modules" "$ws/app/" 2>/dev/null ||
	cp -a "$B/vite-app/node_modules" "$ws/app/"
cp tests/vite/index.html tests/vite/main.ts tests/vite/vite.config.ts "$ws/app/"
cp tests/vite/probe.mjs "$ws/"
out=$("$KEEP" run --workspace "$ws" --timeout "$(slow 120)s" --trust "$K" \
    "$I/node.img" node probe.mjs app 2>&1)
check() { # check LINE WHAT
	if printf '%s\n' "$out" | grep -qxF "$1"; then ok "$2"; else bad "$2: $out"; fi
}
check "ready: true" "vite's dev server starts (its TypeScript config through esbuild)"
check "index: 200 true" "the page is served with vite's client"
check "main.ts compiled: 200 true" "a TypeScript module is compiled on request (esbuild)"
check "reload seen: true" "an edit is seen by the watcher (inotify)"
check "after the edit: 200 true" "and the module is served as edited"

[ $fails -eq 0 ] || exit 1
