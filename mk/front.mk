# The network front (issue 7): HTTP parser, API, keep api.
#
# docs/api.yaml is converted to JSON at build time and embedded in
# libkeep.a, because the front is chrooted and cannot open it at run time.
# keep-api-testserver serves the API over the in-memory fake backend
# (tests/api_fake.c, in $(B)/libkeeptest.a, never in libkeep.a), for
# the integration tests of `keep api` and for bench/api.

DEPS_PKGS += libjansson-dev libtls-dev libsodium-dev libcurl4-openssl-dev \
             python3-yaml
# Only bench-api needs wrk and nginx (Debian starts nginx on port 80 when
# it installs it), so make deps leaves them out and bench-api installs them.
DEPS_BENCH_API = wrk nginx-light

FRONT_GEN = $(B)/gen/api_openapi.c
LIB_OBJS += $(B)/obj/gen/api_openapi.o
ALL_EXTRA += $(B)/bin/keep-api-testserver

$(FRONT_GEN): docs/api.yaml mk/openapi2c.py | deps
	@mkdir -p $(dir $@)
	python3 mk/openapi2c.py docs/api.yaml $@

$(B)/obj/gen/api_openapi.o: $(FRONT_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/bin/keep-api-testserver: $(B)/obj/tests/api_testserver.o $(B)/libkeeptest.a $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeeptest.a $(B)/libkeep.a $(LDLIBS)

$(B)/obj/tests/api_testserver.o: tests/api_testserver.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

.PHONY: bench-api
bench-api: all
	@sh mk/deps.sh $(DEPS_BENCH_API)
	bash bench/api.sh $(B)

integration: $(B)/bin/keep-api-testserver $(B)/tests/test_http_front
