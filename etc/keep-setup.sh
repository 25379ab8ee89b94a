#!/bin/sh
# keep-setup: what an installed keep needs beyond its files, done once and
# never undone by itself. Run by the Debian package's postinst and by
# `make install` (as root, without DESTDIR). Idempotent; it never
# overwrites an operator's keys, policy or images:
#   - the system user _keep (keepd's children run as it);
#   - the state directory, root-owned 0755 (keepd makes its subdirectories
#     with their own owners and modes at start);
#   - a token issuer key pair in /etc/keep/keys, if there is none;
#   - the stock images in the state directory's images/, where the vmm
#     boots them from. An image is (re)placed only when missing or still
#     exactly the stock file a previous setup placed (its hash is recorded),
#     so an operator's own image of the same name is left alone.
# Usage: keep-setup [DATADIR] [BINDIR]   (default /usr/share/keep, /usr/bin)
set -eu
datadir=${1:-/usr/share/keep}
bindir=${2:-/usr/bin}
state=/var/lib/keep
keys=/etc/keep/keys
user=_keep

if ! getent passwd "$user" >/dev/null; then
	if command -v adduser >/dev/null 2>&1; then
		adduser --system --group --quiet --no-create-home \
		    --home /nonexistent "$user"
	else
		useradd --system --user-group --no-create-home \
		    --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
	fi
fi

install -d -m 0755 -o root -g root "$state" "$state/images"

# The issuer's secret key signs tokens; only root reads it. keepd needs
# only the public half (tokens.issuer_keys in keepd.yaml).
install -d -m 0700 -o root -g root "$keys"
if [ ! -e "$keys/issuer.secret" ] && [ ! -e "$keys/issuer.public" ]; then
	(umask 077 && "$bindir/keep" key generate --out "$keys" --name issuer \
	    >/dev/null)
	chmod 0644 "$keys/issuer.public"
	echo "keep-setup: created the token issuer key $keys/issuer.secret"
fi

sums="$state/stock-images.sha256"
new=$(mktemp "$state/.stock-images.XXXXXX")
for img in "$datadir"/images/*.img; do
	[ -e "$img" ] || continue
	name=$(basename "$img")
	dst="$state/images/$name"
	want=$(sha256sum <"$img" | cut -d' ' -f1)
	if [ -e "$dst" ]; then
		have=$(sha256sum <"$dst" | cut -d' ' -f1)
		placed=$(grep " $name\$" "$sums" 2>/dev/null | cut -d' ' -f1 || true)
		if [ "$have" != "$want" ] && [ "$have" != "$placed" ]; then
			echo "keep-setup: $dst is not a stock image; left as it is"
			continue
		fi
	fi
	cp "$img" "$dst.new"
	chmod 0644 "$dst.new"
	mv "$dst.new" "$dst"
	echo "$want $name" >>"$new"
done
mv "$new" "$sums"
chmod 0644 "$sums"
