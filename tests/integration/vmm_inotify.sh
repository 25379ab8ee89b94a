#!/usr/bin/env bash
# File change events (docs/vmm.md, "File change events"): a guest's
# inotify is the host's, on the workspace. tests/guests/inotify.c makes
# its changes and prints what it reads (creates, writes, closes,
# attributes, a rename's two halves and their cookie, a deletion, a
# watch on a file, through a symlink and on the link itself, rm_watch
# and IN_IGNORED, poll, a blocking read in a forked child, Linux's
# EINVAL, EBADF, ENOENT and ENOTDIR): its output natively and in keep
# must be the same bytes. Then what only a guest has: /proc watched
# without events, and a workspace symlink to a host directory outside
# the workspace, changed while the guest waits, leads to nothing and
# brings no event. Last, the user's view: Node's fs.watch, recursive
# as dev servers' watchers use it, and on one of the image's files.
# Before, every inotify call was ENOSYS and fs.watch threw.
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images

mkdir -p "$tmp/native" "$tmp/ws"
"$G/inotify" "$tmp/native" >"$tmp/native.out" 2>&1
"$KEEP" run --workspace "$tmp/ws" "$G/inotify" / >"$tmp/keep.out" 2>&1
like_native "inotify in keep" "$tmp/native.out" "$tmp/keep.out"
grep -q "dir MOVED_TO b (same cookie)" "$tmp/keep.out" &&
	grep -q "the child's blocking read: for-the-child" "$tmp/keep.out" &&
	ok "a rename's halves share a cookie; a forked child's blocking read wakes" ||
	bad "events: $(cat "$tmp/keep.out")"

mkdir -p "$tmp/outside" "$tmp/ws2/w"
ln -s "$tmp/outside" "$tmp/ws2/escape"
(sleep 0.5; touch "$tmp/outside/new"; echo x >>"$tmp/outside/new") &
out=$("$KEEP" run --workspace "$tmp/ws2" "$G/inotify" / keep 2>&1)
wait
want="/proc/self: a still wd
/proc/nonexistent: No such file or directory
rm_watch of a still wd: ok
the escape link: No such file or directory
the escape link's own: ok
the escape link, with ..: No such file or directory
events from outside: 0"
[ "$out" = "$want" ] &&
	ok "a link to a host directory watches nothing outside the workspace" ||
	bad "outside: $out"

if [ -e "$I/node.img" ]; then
	mkdir -p "$tmp/ws3/src"
	out=$("$KEEP" run --workspace "$tmp/ws3" --trust "$K" \
	    "$I/node.img" node -e "
const fs = require('fs');
const seen = [];
const w = fs.watch('.', { recursive: true }, (e, f) => seen.push(f));
const i = fs.watch(process.execPath, () => seen.push('image'));
setTimeout(() => {
	fs.mkdirSync('src/deep');
	setTimeout(() => fs.writeFileSync('src/deep/page.html', 'x'), 100);
}, 100);
setTimeout(() => {
	console.log(seen.includes('src/deep/page.html') ? 'saw src/deep/page.html' : 'missed: ' + seen);
	console.log(seen.includes('image') ? 'an image event' : 'no image event');
	w.close(); i.close();
}, 800);" 2>&1)
	[ "$out" = $'saw src/deep/page.html\nno image event' ] &&
		ok "node's recursive fs.watch sees a new file; one on the image's node is quiet" ||
		bad "node fs.watch: $out"
else
	bad "$I/node.img is missing (make images)"
fi

[ $fails -eq 0 ] || exit 1
