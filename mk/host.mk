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

.PHONY: host-golden host-lint install

# Regenerate the golden output of the config tests: tests/config/NAME.out
# is what `keepd -n -f tests/config/NAME.yaml` prints.
host-golden: $(B)/bin/keepd
	@for f in tests/config/*.yaml; do \
	  $(B)/bin/keepd -n -f $$f >$${f%.yaml}.out 2>&1; \
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

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man5 \
	  $(DESTDIR)$(SYSCONFDIR)/keep/policy $(DESTDIR)$(UNITDIR)
	install -m 0755 $(B)/bin/keepd $(DESTDIR)$(PREFIX)/sbin/keepd
	install -m 0755 $(B)/bin/keep $(DESTDIR)$(PREFIX)/bin/keep
	install -m 0755 $(B)/bin/keep-api $(DESTDIR)$(PREFIX)/bin/keep-api
	install -m 0644 docs/keepd.8 $(DESTDIR)$(PREFIX)/share/man/man8/keepd.8
	install -m 0644 docs/keepd.yaml.5 $(DESTDIR)$(PREFIX)/share/man/man5/keepd.yaml.5
	@# Never overwrite an operator's configuration or policy.
	[ -e $(DESTDIR)$(SYSCONFDIR)/keep/keepd.yaml ] || \
	  install -m 0644 etc/keepd.yaml $(DESTDIR)$(SYSCONFDIR)/keep/keepd.yaml
	[ -e $(DESTDIR)$(SYSCONFDIR)/keep/policy/default.policy ] || \
	  install -m 0644 etc/policy/default.policy $(DESTDIR)$(SYSCONFDIR)/keep/policy/default.policy
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' etc/keepd.service >$(DESTDIR)$(UNITDIR)/keepd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/keepd.service
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && ! getent passwd _keep >/dev/null; then \
	  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin _keep; fi
	@echo "install: done; systemctl daemon-reload && systemctl enable --now keepd"
