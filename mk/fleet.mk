# More than one box (issue 16, docs/scaling.md): the fleet test puts two
# keepd behind HAProxy (tests/integration/fleet_haproxy.sh).
DEPS_PKGS += haproxy
