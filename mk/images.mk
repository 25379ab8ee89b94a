# Stock guest images (issue 5), built from installed Debian packages:
# nothing upstream is kept in the repository. Each image is signed with a
# development key generated under $(B)/keys when missing.

DEPS_PKGS += musl-tools duktape-dev busybox-static libpython3.11-dev \
             libpython3.11-stdlib zlib1g-dev libexpat1-dev python3

IMG_DIR   = $(B)/images
STOCK_DIR = $(B)/stock
DEV_KEY   = $(B)/keys/dev.secret
PY_CONFIG = /usr/lib/python3.11/config-3.11-x86_64-linux-gnu
STOCK_IMAGES = $(IMG_DIR)/hello.img $(IMG_DIR)/toolbox.img \
               $(IMG_DIR)/js.img $(IMG_DIR)/python.img \
               $(IMG_DIR)/python-static.img $(IMG_DIR)/shell.img \
               $(IMG_DIR)/node.img $(MACHINE_IMG)
# The machine image is 1.2 GB: NO_MACHINE_IMAGE=1 leaves it out (the
# .deb does, debian/rules; docs/packaging.md).
MACHINE_IMG = $(if $(NO_MACHINE_IMAGE),,$(IMG_DIR)/machine.img)
TOOLBOX_APPLETS = cat ls wc head tail sort uniq grep sed awk sha256sum \
                  md5sum base64 cut tr find stat du mkdir rm cp mv touch \
                  echo printf date true false

ALL_EXTRA += $(STOCK_IMAGES)

.PHONY: images
images: $(STOCK_IMAGES)

$(DEV_KEY): | $(B)/bin/keep
	@mkdir -p $(dir $@)
	$(B)/bin/keep key generate --out $(dir $@) --name dev >/dev/null

$(STOCK_DIR)/hello: image/stock/hello.c | deps
	@mkdir -p $(dir $@)
	musl-gcc -static -O2 -Wall -Werror -o $@ $<

# Duktape's own source trips our warning flags; it is compiled as shipped.
$(STOCK_DIR)/js: image/stock/js_main.c | deps
	@mkdir -p $(dir $@)
	musl-gcc -static -O2 -I/usr/share/duktape -o $@ $< \
	    /usr/share/duktape/duktape.c -lm

# glibc warns that getaddrinfo and getpwnam want shared NSS modules at run
# time; the guest has no network or users, so those paths are dead.
# Relinked when Debian's packages change (dpkg keeps a package's file
# times, so libpython3.11.a's own is no guide).
$(STOCK_DIR)/python: image/stock/python_main.c /var/lib/dpkg/status | deps
	@mkdir -p $(dir $@)
	gcc -static -O2 -I/usr/include/python3.11 -o $@ $< \
	    $(PY_CONFIG)/libpython3.11.a -lm -lz -lexpat -lpthread -ldl -lutil \
	    -Wl,--no-warnings

# Remade when Debian's packages change (an update of the standard
# library), with Debian's interpreter, not whichever python3 PATH finds:
# the bytecode it compiles must be the static interpreter's version.
$(STOCK_DIR)/python311.zip: image/stock/stdlib_zip.py /var/lib/dpkg/status | deps
	@mkdir -p $(dir $@)
	PYTHONHASHSEED=0 /usr/bin/python3.11 image/stock/stdlib_zip.py /usr/lib/python3.11 $@

# build -> sign -> rename, so a failed step never leaves an unsigned image.
define sign_image
	$(B)/bin/keep image sign --key $(DEV_KEY) $@.tmp
	mv $@.tmp $@
endef

$(IMG_DIR)/hello.img: $(STOCK_DIR)/hello $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name hello --version 1.0 --memory 16M $< -o $@.tmp
	$(sign_image)

# busybox-static is one of the packages deps installs: on a fresh machine
# /bin/busybox appears only once deps has run, so make is told that deps
# makes it (else `make -j2` stops at once: no rule to make /bin/busybox).
BUSYBOX ?= /bin/busybox
$(BUSYBOX): | deps
	@test -e $@ || { echo "$@: missing after make deps (busybox-static)"; exit 1; }

$(IMG_DIR)/toolbox.img: $(BUSYBOX) $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name toolbox --version 1.0 --memory 64M \
	    $(foreach a,$(TOOLBOX_APPLETS),--command $(a)=$(BUSYBOX)) $< -o $@.tmp
	$(sign_image)

$(IMG_DIR)/js.img: $(STOCK_DIR)/js $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name js --version 2.7 --memory 128M $< -o $@.tmp
	$(sign_image)

# The static interpreter of issue 5: boots about as fast as python, with
# a trimmed standard library and no extension modules
# (docs/image-format.md). Its hashes are deferred as the package images'
# are: checked whole at every open, its 14 MiB were 40 ms of every run
# (the whole body hashed, and signed over).
$(IMG_DIR)/python-static.img: $(STOCK_DIR)/python $(STOCK_DIR)/python311.zip $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name python-static --version 3.11 --memory 256M \
	    --defer-hashes --file /lib/python311.zip=$(STOCK_DIR)/python311.zip \
	    --command python $< -o $@.tmp
	$(sign_image)

# Images from Debian packages (issue 18), hundreds of MiB: rebuilt when
# their manifest, the installed packages (dpkg's status file) or the way
# the builder packs them change, not whenever keep is relinked, so
# `make check` builds them once.
DEB_IMAGE_DEPS = /var/lib/dpkg/status cli/image_deb.c image/pyc.c \
                 image/elfdeps.c | deps $(B)/bin/keep $(DEV_KEY)
DEPS_PKGS += python3.11 python3-numpy python3-pandas python3-matplotlib \
             python3-pil python3-contourpy python3-fonttools tzdata \
             fonts-dejavu-core fonts-dejavu-extra fonts-lyx \
             bash coreutils grep sed gawk findutils diffutils jq file \
             libmagic-mgc tar gzip xz-utils

# matplotlib's font list, made here so that no run scans the fonts
# again (a read-only image keeps nothing a run writes). The image holds it where the
# guest's matplotlib looks with HOME=/; it names the fonts by their
# paths, which the image holds too. Sorted, so the image is reproducible.
$(STOCK_DIR)/mpl/fontlist-v330.json: image/stock/mpl_fontlist.py /var/lib/dpkg/status | deps
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	/usr/bin/python3.11 $< $(dir $@)
	@test -f $@

$(IMG_DIR)/python.img: images/python.manifest images/python.template \
    images/hosts images/nsswitch.conf images/host.conf images/resolv.conf images/passwd images/group images/python-ready.py images/python.reserve image/stock/keep_once.py $(STOCK_DIR)/mpl/fontlist-v330.json $(DEB_IMAGE_DEPS)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name python --version 3.11 --memory 1G \
	    --defer-hashes --manifest $< \
	    --file /.cache/matplotlib/fontlist-v330.json=$(STOCK_DIR)/mpl/fontlist-v330.json \
	    -o $@.tmp
	$(sign_image)

$(STOCK_DIR)/shell.manifest: images/shell.manifest mk/deb-commands.sh /var/lib/dpkg/status
	@mkdir -p $(dir $@)
	{ cat $<; sh mk/deb-commands.sh $$(sed -n 's/^deb //p' $<); } >$@.tmp
	mv $@.tmp $@

$(IMG_DIR)/shell.img: $(STOCK_DIR)/shell.manifest images/hosts \
    images/nsswitch.conf images/host.conf images/resolv.conf images/passwd images/group $(DEB_IMAGE_DEPS)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name shell --version 1.0 --memory 256M \
	    --defer-hashes --manifest $< -o $@.tmp
	$(sign_image)

# The node image: the machine's nodejs package (Debian's, where no other
# is installed under that name). Its version is the package's upstream
# one. 512M of memory: node itself holds about 50 MiB (five 8 MiB thread
# stacks among it), V8 sizes its heap from the limit (MemTotal), and a
# child_process of node is charged as much again; its reservations take
# the image's reserve (images/node.reserve), not memory. WebAssembly's
# memories would each reserve 10 GiB for V8's out-of-bounds trap handler,
# past any guest's address space: where the node has the option (20.15
# and later), the image turns the handler off and V8 checks bounds in
# code instead.
DEPS_PKGS += nodejs

$(IMG_DIR)/node.img: images/node.manifest images/node.reserve images/hosts \
    images/nsswitch.conf images/host.conf images/resolv.conf images/passwd images/group $(DEB_IMAGE_DEPS)
	@mkdir -p $(dir $@)
	wasm=; if /usr/bin/node --disable-wasm-trap-handler -e 0 2>/dev/null; \
	then wasm=--env=NODE_OPTIONS=--disable-wasm-trap-handler; fi; \
	$(B)/bin/keep image build --name node \
	    --version "$$(dpkg-query -W -f '$${Version}' nodejs | sed 's/-.*//; s/^[0-9]*://')" \
	    --memory 512M --defer-hashes --manifest $< $$wasm -o $@.tmp
	$(sign_image)

# The machine image (images/machine.manifest): a whole Debian machine,
# E2B's default template (docs/e2b.md). The manifest's packages and what
# their Depends need in turn (mk/deb-closure.sh), less those named here,
# which Debian declares for what the image never does: the maintainer
# scripts' tools (dpkg, debconf, adduser, passwd, init-system-helpers,
# sysvinit-utils, usr-is-merged); scipy's pythran, a build-time
# transpiler that brings boost, g++ and every python's headers (about
# 250 MiB); Pillow's Tk (X11: matplotlib draws with Agg); and sympy and
# unicode-data, which fonttools needs only for what matplotlib never
# asks of it; the sanitizers' run-time libraries (images/machine.omit
# says why). The files of images/machine.omit are left out of their
# packages. Every program of the manifest's own packages is a command.
MACHINE_SKIP = dpkg debconf adduser passwd init-system-helpers \
               sysvinit-utils usr-is-merged python3-pythran \
               python3-pil.imagetk python3-sympy unicode-data \
               libasan8 libtsan2 liblsan0 libhwasan0
MACHINE_PKGS = bash dash coreutils findutils grep sed gawk diffutils tar \
               gzip xz-utils zip unzip bc jq file less procps curl wget git \
               openssh-client ca-certificates python3 python3-pip \
               python3-venv python3-numpy python3-pandas python3-matplotlib \
               python3-scipy python3-requests fonts-dejavu-core \
               fonts-dejavu-extra fonts-lyx sqlite3 gcc make libc6-dev \
               python3-dev
# npm: Debian's package where no npm is on PATH, else the one there
# (NodeSource's nodejs brings its own, which Debian's npm conflicts with).
# The image takes npm's directory as it is on disk, not only as dpkg
# lists it: `npm install -g npm` replaces it in place (here NodeSource's
# npm 10 had become npm 11, whose new files no package lists).
DEPS_PKGS += $(MACHINE_PKGS) npm:npm
# Go builds tests/guests/go (tests/integration/image_go.sh), run in the
# machine image beside itself natively.
DEPS_PKGS += golang-go

$(STOCK_DIR)/machine.manifest: images/machine.manifest images/machine.omit \
    mk/deb-closure.sh mk/deb-omit.sh mk/deb-commands.sh /var/lib/dpkg/status | deps
	@mkdir -p $(dir $@)
	{ grep -v '^deb ' $<; \
	  sh mk/deb-omit.sh images/machine.omit $$(sh mk/deb-closure.sh \
	      $(foreach p,$(MACHINE_SKIP),-x $(p)) $$(sed -n 's/^deb //p' $<)); \
	  npm=$$(dirname "$$(dirname "$$(readlink -f /usr/bin/npm)")"); \
	  find "$$npm" -type f | LC_ALL=C sort | grep -v '[[:space:]]' | \
	      sed 's/.*/file &=&/'; \
	  for c in npm npx; do \
	      printf '#!/bin/sh\nexec %s "$$@"\n' "$$(readlink -f /usr/bin/$$c)" \
	          >$(STOCK_DIR)/machine-$$c && chmod 755 $(STOCK_DIR)/machine-$$c; \
	      echo "file /usr/bin/$$c=$(STOCK_DIR)/machine-$$c"; \
	      echo "command $$c=/usr/bin/$$c"; \
	  done; \
	  sh mk/deb-commands.sh $$(sh mk/deb-closure.sh -t \
	      $$(sed -n 's/^deb //p' $<)); } >$@.tmp
	awk '/^#omitted / { gone[$$2] = 1; print; next } \
	    /^file / { if ($$2 in seen) next; seen[$$2] = 1; \
	        split($$2, f, "="); given[f[1]] = 1 } \
	    /^command / { split($$2, c, "="); \
	        if ((c[2] in gone && !(c[2] in given)) || c[1] in named) next; \
	        named[c[1]] = 1 } 1' \
	    $@.tmp >$@.tmp2 && mv $@.tmp2 $@.tmp
	mv $@.tmp $@

# 2G of memory: gcc's cc1 on a large file, pip building an sdist, npm
# and node (V8 sizes its heap from MemTotal) and pandas each want
# hundreds of MiB, and a shell runs several at once; the limit is a
# ceiling, charged only as pages are touched, and a policy's memory
# quota still caps it. Its reserve is node's (images/node.reserve), its
# template python's; matplotlib's font list is the python image's.
$(IMG_DIR)/machine.img: $(STOCK_DIR)/machine.manifest images/node.reserve \
    images/python.template images/python-ready.py image/stock/keep_once.py \
    images/hosts images/nsswitch.conf images/host.conf images/passwd \
    images/group $(STOCK_DIR)/mpl/fontlist-v330.json $(DEB_IMAGE_DEPS)
	@mkdir -p $(dir $@)
	wasm=; if /usr/bin/node --disable-wasm-trap-handler -e 0 2>/dev/null; \
	then wasm=--env=NODE_OPTIONS=--disable-wasm-trap-handler; fi; \
	$(B)/bin/keep image build --name machine --version 1.0 --memory 2G \
	    --defer-hashes --manifest $< $$wasm \
	    --file /.cache/matplotlib/fontlist-v330.json=$(STOCK_DIR)/mpl/fontlist-v330.json \
	    -o $@.tmp
	$(sign_image)
