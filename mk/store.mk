# store (issue 8): LMDB and its tools (mdb_stat, mdb_dump for operators and
# the tamper tests), libsodium for BLAKE2b and Ed25519.
DEPS_PKGS += liblmdb-dev lmdb-utils libsodium-dev

# The benchmark (not part of make check): audit appends per second, single
# and batched, beside bare LMDB; store round trips over a socketpair beside
# an empty ping-pong.
.PHONY: bench-store
bench-store: $(B)/bench/store
	$(B)/bench/store

$(B)/bench/store: $(B)/obj/bench/store.o $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeep.a $(LDLIBS)
