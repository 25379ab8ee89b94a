# egress (issue 9): the tests build a throwaway CA with the openssl CLI and
# serve HTTPS on 127.0.0.1 from Debian's python3.
DEPS_PKGS += openssl python3 libcurl4-openssl-dev libsodium-dev
