# keepd, the process framework and their checks (issue 2).
# Included by the Makefile; see its header.

DEPS_PKGS += passwd mandoc

# msg_type_name's table: every message type in host/'s headers, by name.
MSG_NAMES_C = $(B)/gen/msg_names.c
MSG_HEADERS = $(sort $(shell find host -name '*.h'))
LIB_OBJS += $(B)/obj/gen/msg_names.o

$(MSG_NAMES_C): mk/msgnames.py $(MSG_HEADERS) | deps
	@mkdir -p $(dir $@)
	python3 mk/msgnames.py $@ $(MSG_HEADERS)

$(B)/obj/gen/msg_names.o: $(MSG_NAMES_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/keep
DOCDIR     ?= $(PREFIX)/share/doc/keep

.PHONY: host-golden host-lint install

# Regenerate the golden output of the config tests: tests/config/NAME.out
# is what `keepd -n -f tests/config/NAME.yaml` prints.
host-golden: $(B)/bin/keepd
	@for f in tests/config/*.yaml; do \
	  $(B)/bin/keepd -n -f $$f 2>&1 | grep -v '^keepd: ' >$${f%.yaml}.out; \
	done; echo "host-golden: regenerated tests/config/*.out"

# The bundled configs parse, the manual pages lint clean, and every
# process file has its entry point in the process table.  A file
# host/proc_X_Y.c beside host/proc_X.c is part of process X, not a process.
CHECK_EXTRA += host-lint
host-lint: $(B)/bin/keepd
	@p=0; f=0; \
	for c in etc/keepd.yaml etc/keepd.dev.yaml; do \
	  if $(B)/bin/keepd -n -f $$c >/dev/null; then p=$$((p+1)); \
	  else echo "FAIL: keepd -n -f $$c"; f=$$((f+1)); fi; \
	done; \
	for m in docs/keepd.8 docs/keepd.yaml.5; do \
	  if [ ! -f $$m ]; then echo "FAIL: $$m missing"; f=$$((f+1)); \
	  elif out=$$(mandoc -T lint -W warning $$m 2>&1) && [ -z "$$out" ]; then p=$$((p+1)); \
	  else echo "FAIL: mandoc -T lint $$m"; echo "$$out"; f=$$((f+1)); fi; \
	done; \
	for s in host/proc_*.c; do \
	  n=$$(basename $$s .c | sed 's/^proc_//'); \
	  case $$n in *_*) [ -f host/proc_$${n%%_*}.c ] && continue;; esac; \
	  if grep -q "^$${n}_main(" $$s && grep -q "$${n}_main," host/proc.c; then p=$$((p+1)); \
	  else echo "FAIL: $$s: no $${n}_main in it or in host/proc.c's table"; f=$$((f+1)); fi; \
	done; \
	echo "host-lint: $$p passed, $$f failed"; \
	[ -n "$$RESULTS" ] && echo "host-lint $$p $$f 0" >>"$$RESULTS"; \
	[ $$f -eq 0 ]

# Everything the Debian package holds (mk/deb.mk builds it with this
# target): programs, every manual page, the unit, the production config
# and deny-all policy (never over an operator's), the stock images with
# their public key, the docs and policy examples. As root without
# DESTDIR, keep-setup then makes the user, state dir, issuer key and
# installs the stock images where keepd boots them.
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	  $(DESTDIR)$(SYSCONFDIR)/keep/policy $(DESTDIR)$(UNITDIR) \
	  $(DESTDIR)$(DATADIR)/images $(DESTDIR)$(DATADIR)/keys \
	  $(DESTDIR)$(DOCDIR)/examples/policy
	install -m 0755 $(B)/bin/keepd $(DESTDIR)$(PREFIX)/sbin/keepd
	install -m 0755 $(B)/bin/keep $(DESTDIR)$(PREFIX)/bin/keep
	install -m 0755 $(B)/bin/keep-api $(DESTDIR)$(PREFIX)/bin/keep-api
	for m in $(wildcard docs/*.1 docs/*.5 docs/*.8); do \
	  install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m#docs/}; done
	install -m 0644 $(filter-out $(if $(NO_MACHINE_IMAGE),%/machine.img),$(wildcard $(B)/images/*.img)) \
	  $(DESTDIR)$(DATADIR)/images/
	install -m 0644 $(B)/keys/dev.public $(DESTDIR)$(DATADIR)/keys/stock-images.public
	install -m 0755 etc/keep-setup.sh $(DESTDIR)$(DATADIR)/keep-setup
	install -m 0644 docs/*.md docs/api.yaml $(DESTDIR)$(DOCDIR)/
	install -m 0644 policy/examples/*.policy $(DESTDIR)$(DOCDIR)/examples/policy/
	install -m 0644 etc/haproxy-keep.cfg $(DESTDIR)$(DOCDIR)/examples/
	@# Never overwrite an operator's configuration or policy.
	[ -e $(DESTDIR)$(SYSCONFDIR)/keep/keepd.yaml ] || \
	  (umask 022 && sed 's|/usr/share/keep/|$(DATADIR)/|g' etc/keepd.yaml \
	    >$(DESTDIR)$(SYSCONFDIR)/keep/keepd.yaml)
	[ -e $(DESTDIR)$(SYSCONFDIR)/keep/policy/default.policy ] || \
	  install -m 0644 etc/production/default.policy $(DESTDIR)$(SYSCONFDIR)/keep/policy/default.policy
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' etc/keepd.service >$(DESTDIR)$(UNITDIR)/keepd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/keepd.service
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ]; then \
	  $(DATADIR)/keep-setup $(DATADIR) $(PREFIX)/bin; fi
	@echo "install: done; systemctl daemon-reload && systemctl enable --now keepd"
