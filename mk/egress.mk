# egress (issue 9): the tests build a throwaway CA with the openssl CLI and
# serve HTTPS on 127.0.0.1 from Debian's python3.
# iproute2 and util-linux (unshare) run the tests in a loopback-only netns.
# tests/integration/egress_e2e.sh drives keepd's API with the curl CLI.
DEPS_PKGS += openssl python3 iproute2 util-linux libcurl4-openssl-dev \
             libsodium-dev curl
