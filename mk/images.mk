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
               $(IMG_DIR)/js.img $(IMG_DIR)/python.img
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
$(STOCK_DIR)/python: image/stock/python_main.c | deps
	@mkdir -p $(dir $@)
	gcc -static -O2 -I/usr/include/python3.11 -o $@ $< \
	    $(PY_CONFIG)/libpython3.11.a -lm -lz -lexpat -lpthread -ldl -lutil \
	    -Wl,--no-warnings

$(STOCK_DIR)/python311.zip: image/stock/stdlib_zip.py | deps
	@mkdir -p $(dir $@)
	python3 image/stock/stdlib_zip.py /usr/lib/python3.11 $@

# build -> sign -> rename, so a failed step never leaves an unsigned image.
define sign_image
	$(B)/bin/keep image sign --key $(DEV_KEY) $@.tmp
	mv $@.tmp $@
endef

$(IMG_DIR)/hello.img: $(STOCK_DIR)/hello $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name hello --version 1.0 --memory 16M $< -o $@.tmp
	$(sign_image)

$(IMG_DIR)/toolbox.img: /bin/busybox $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name toolbox --version 1.0 --memory 64M \
	    $(foreach a,$(TOOLBOX_APPLETS),--command $(a)=/bin/busybox) $< -o $@.tmp
	$(sign_image)

$(IMG_DIR)/js.img: $(STOCK_DIR)/js $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name js --version 2.7 --memory 128M $< -o $@.tmp
	$(sign_image)

$(IMG_DIR)/python.img: $(STOCK_DIR)/python $(STOCK_DIR)/python311.zip $(B)/bin/keep $(DEV_KEY)
	@mkdir -p $(dir $@)
	$(B)/bin/keep image build --name python --version 3.11 --memory 256M \
	    --file /lib/python311.zip=$(STOCK_DIR)/python311.zip $< -o $@.tmp
	$(sign_image)
