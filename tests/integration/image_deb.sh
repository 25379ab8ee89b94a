#!/usr/bin/env bash
# keep image build --deb: an image from installed Debian packages with the
# shared-library closure of their programs; the same packages give the
# same bytes; a package not installed, a library nothing resolves and a
# library no package owns are refused, and so is a package's link to a
# file no package holds; an image with deferred hashes
# refuses a tampered file at verify and at run.
source "$(dirname "$0")/../lib/guest.sh"

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
T="--trust $tmp/k/keep.public"
build() { "$KEEP" image build --name deb --version 1 "$@"; }

build --deb bash --command bash=/bin/bash -o "$tmp/a.img" || exit 1
build --deb bash --command bash=/bin/bash -o "$tmp/b.img" || exit 1
cmp -s "$tmp/a.img" "$tmp/b.img" && ok "the same packages give the same image" ||
	bad "two builds of bash differ"
# The python image's one generated file, matplotlib's font list, is the
# same from two runs whose string hashes (and so set orders) differ.
if [ -x /usr/bin/python3.11 ] && /usr/bin/python3.11 -c 'import matplotlib' 2>/dev/null; then
	for seed in 1 2; do
		mkdir "$tmp/mpl$seed"
		PYTHONHASHSEED=$seed /usr/bin/python3.11 image/stock/mpl_fontlist.py "$tmp/mpl$seed" || exit 1
	done
	cmp -s "$tmp/mpl1/fontlist-v330.json" "$tmp/mpl2/fontlist-v330.json" &&
		ok "matplotlib's font list is the same from two runs" ||
		bad "the font list depends on the hash seed"
fi
list=$("$KEEP" image inspect "$tmp/a.img")
for f in /bin/bash /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 \
	/lib/x86_64-linux-gnu/libtinfo.so.6 /etc/bash.bashrc; do
	[[ $list == *" $f"* ]] && ok "image holds $f" || bad "image lacks $f"
done
[[ $list == *"/usr/share/doc/"* ]] && bad "documentation was copied" || ok "no documentation"
"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/a.img" || exit 1
out=$("$KEEP" run $T "$tmp/a.img" bash -c 'echo $((6 * 7))' 2>&1)
[ "$out" = 42 ] && ok "bash from the image runs" || bad "bash: '$out'"

err=$(build --deb keep-no-such-package-x --command x=/bin/x -o "$tmp/c.img" 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $err == *"keep-no-such-package-x is not installed"* ]] &&
	ok "a package not installed is refused: $err" || bad "not installed: $rc '$err'"
err=$(build --deb 'bash;rm' --command x=/bin/x -o "$tmp/c.img" 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $err == *"not a package name"* ]] && ok "a bad package name is refused" ||
	bad "bad name: $rc '$err'"

# Python bytecode: what Debian compiled at install comes with its source;
# optimized bytecode a `python -O` on this machine wrote does not.
if [ -f /usr/lib/python3/dist-packages/six.py ] && [ -x /usr/bin/python3.11 ]; then
	opt=/usr/lib/python3/dist-packages/__pycache__/six.cpython-311.opt-1.pyc
	made=; [ -e $opt ] || made=1
	env -u PYTHONDONTWRITEBYTECODE /usr/bin/python3.11 -O -c 'import six' || exit 1
	[ -e $opt ] || { echo "python -O wrote no $opt"; exit 1; }
	build --deb python3-six --file /bin/bash=/bin/bash --command bash=/bin/bash -o "$tmp/six.img"
	rc=$?
	[ -n "$made" ] && rm -f $opt
	[ $rc -eq 0 ] || exit 1
	list=$("$KEEP" image inspect "$tmp/six.img")
	[[ $list == *" /usr/lib/python3/dist-packages/__pycache__/six.cpython-311.pyc"* ]] &&
		[[ $list != *".opt-1.pyc"* ]] && ok "Debian's bytecode is taken, a local python -O's is not" ||
		bad "bytecode: $(echo "$list" | grep pyc)"
fi

# A package's link to a file no package holds (openssl's cert.pem is the
# bundle update-ca-certificates writes) is the build machine's file, not
# the package's: refused unless given with --file.
link=/usr/lib/ssl/cert.pem
if [ -L $link ] && [ -f $link ] && dpkg-query -S /usr/bin/openssl >/dev/null 2>&1 &&
	! dpkg-query -S "$(readlink -f $link)" >/dev/null 2>&1; then
	err=$(build --deb openssl --command openssl=/usr/bin/openssl -o "$tmp/c.img" 2>&1); rc=$?
	[ $rc -ne 0 ] && [[ $err == *"$link links to a file outside the installed packages"* ]] &&
		ok "a package's link to a file outside the packages is refused" || bad "outside link: $rc '$err'"
	build --deb openssl --command openssl=/usr/bin/openssl --file "$link=$(readlink -f $link)" \
		-o "$tmp/c.img" && ok "given with --file, it is taken" || bad "--file $link"
else
	echo "note: no openssl link to an unowned CA bundle here; the outside-link check did not run"
fi

# A program whose library lies outside every package, found through its
# RUNPATH: refused unless the library is given explicitly.
mkdir "$tmp/lib"
gcc -shared -fPIC -o "$tmp/lib/libsquare.so" tests/guests/dynamic/square.c || exit 1
printf 'int keep_square(int);\nint main(void) { return keep_square(3) == 9 ? 0 : 1; }\n' >"$tmp/sq.c"
gcc -o "$tmp/sq" "$tmp/sq.c" -L"$tmp/lib" -lsquare -Wl,-rpath,"$tmp/lib" || exit 1
err=$(build --deb bash --file /bin/sq="$tmp/sq" --command sq=/bin/sq -o "$tmp/c.img" 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $err == *"libsquare.so (needed by /bin/sq) belongs to no installed package"* ]] &&
	ok "a library outside the packages is refused" || bad "unowned library: $rc '$err'"
build --deb bash --file /bin/sq="$tmp/sq" --file "$tmp/lib/libsquare.so=$tmp/lib/libsquare.so" \
	--command sq=/bin/sq -o "$tmp/c.img" && "$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/c.img" &&
	"$KEEP" run $T "$tmp/c.img" sq && ok "given explicitly, it is taken and found through RUNPATH" ||
	bad "explicit library"
gcc -o "$tmp/sq2" "$tmp/sq.c" -L"$tmp/lib" -lsquare || exit 1
err=$(build --deb bash --file /bin/sq="$tmp/sq2" --command sq=/bin/sq -o "$tmp/c.img" 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $err == *"cannot resolve libsquare.so (needed by /bin/sq)"* ]] &&
	ok "a library nothing resolves is refused" || bad "unresolved library: $rc '$err'"

# Deferred hashes: the signature covers the manifest; a file is checked
# when first used, and keep image verify checks them all.
build --deb bash --defer-hashes --command bash=/bin/bash -o "$tmp/d.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/d.img" || exit 1
"$KEEP" image verify $T "$tmp/d.img" >/dev/null && ok "a deferred image verifies" ||
	bad "deferred image does not verify"
out=$("$KEEP" run $T "$tmp/d.img" bash -c 'echo deferred' 2>&1)
[ "$out" = deferred ] && ok "a deferred image runs" || bad "deferred run: '$out'"
# Flip one byte in the middle of a file of the payload.
flip() { python3 tests/lib/image_flip.py "$1" "$2"; } # image guest-path
cp "$tmp/d.img" "$tmp/t.img" && flip "$tmp/t.img" /lib/x86_64-linux-gnu/libtinfo.so.6 || exit 1
err=$("$KEEP" image verify $T "$tmp/t.img" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $err == *"libtinfo.so.6: BLAKE2b hash mismatch"* ]] &&
	ok "verify refuses a tampered library: $err" || bad "tampered verify: $rc '$err'"
err=$("$KEEP" run $T "$tmp/t.img" bash -c 'echo no' 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $err == *"libtinfo.so.6 does not match its hash"* ]] &&
	ok "a run stops at the tampered library: $err" || bad "tampered run: $rc '$err'"
cp "$tmp/d.img" "$tmp/t.img" && flip "$tmp/t.img" /bin/bash || exit 1
err=$("$KEEP" run $T "$tmp/t.img" bash -c 'echo no' 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $err == *"does not match its hash"* ]] &&
	ok "a tampered program is refused before boot" || bad "tampered program: $rc '$err'"
cp "$tmp/d.img" "$tmp/t.img" && python3 -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[160+80+200]^=1; open(p,'wb').write(b)" "$tmp/t.img"
err=$("$KEEP" run $T "$tmp/t.img" bash -c 'echo no' 2>&1); rc=$?
[ $rc -eq 126 ] && ok "a tampered manifest is refused: $err" || bad "tampered manifest: $rc '$err'"

[ $fails -eq 0 ] && echo "image_deb: all passed" || echo "image_deb: $fails failed"
[ $fails -eq 0 ]
