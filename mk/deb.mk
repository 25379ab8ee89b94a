# The Debian package (issue 16): `make deb` builds build/keep_<version>_amd64.deb
# with debhelper from debian/, in a copy of the source tree under
# build/deb/ (dpkg-buildpackage writes its results beside the tree it
# builds, so the copy keeps them inside build/), then runs lintian on it.
# Its tools are installed by the target, not by `make deps`.

DEB_PKGS    = debhelper dpkg-dev lintian fakeroot
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
DEB_ARCH    = amd64
DEB_FILE    = $(B)/keep_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_TREE    = $(B)/deb/keep-$(DEB_VERSION)

.PHONY: deb
deb:
	@sh mk/deps.sh $(DEB_PKGS) $(sort $(DEPS_PKGS))
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version); \
	c=$$(sed -n 's/^#define KEEP_VERSION "\(.*\)"/\1/p' cli/keep.c); \
	[ "$$v" = "$$c" ] || { echo "deb: debian/changelog says $$v, cli/keep.c says $$c"; exit 1; }
	rm -rf $(B)/deb && mkdir -p $(DEB_TREE)
	tar -C . --exclude=./build --exclude=./.git --exclude=./debian/keep \
	    --exclude=./debian/.debhelper -cf - . | tar -C $(DEB_TREE) -xf -
	cd $(DEB_TREE) && DEB_BUILD_OPTIONS="parallel=2 $$DEB_BUILD_OPTIONS" \
	    dpkg-buildpackage -b -us -uc
	cp $(B)/deb/keep_$(DEB_VERSION)_$(DEB_ARCH).deb $(DEB_FILE)
	lintian --fail-on error --info \
	    $(B)/deb/keep_$(DEB_VERSION)_$(DEB_ARCH).changes || exit 1
	@echo "deb: $(DEB_FILE)"

# The fresh-machine proof (tests/deb_install.sh): the .deb into a fresh
# debootstrap minbase root, keepd started from the installed files, Python
# run through the API. Not part of make check (it downloads a Debian root
# from the configured mirror); .ci/run calls it after make check.
.PHONY: deb-install-check
deb-install-check: deb
	@sh mk/deps.sh debootstrap
	@bash tests/deb_install.sh; rc=$$?; r="1 0 0"; \
	if [ $$rc -eq 77 ]; then echo "deb-install-check: SKIPPED (see above)"; rc=0; r="0 0 1"; \
	elif [ $$rc -ne 0 ]; then r="0 1 0"; fi; \
	[ -z "$$RESULTS" ] || echo "deb-install-check $$r" >>"$$RESULTS"; \
	exit $$rc

# A new user's first command in a fresh debootstrap minbase root
# (tests/fresh_build.sh): `make -j2 run` from a checkout with only make
# installed, and the README's first execute. Not part of make check (it
# downloads every build dependency and builds from nothing).
.PHONY: check-fresh
check-fresh:
	@sh mk/deps.sh debootstrap
	@bash tests/fresh_build.sh
