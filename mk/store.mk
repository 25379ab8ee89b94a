# store (issue 8): LMDB and its tools (mdb_stat, mdb_dump for operators and
# the tamper tests), libsodium for BLAKE2b and Ed25519.
DEPS_PKGS += liblmdb-dev lmdb-utils libsodium-dev
