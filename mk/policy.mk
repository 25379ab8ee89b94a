# Policy language and evaluator (issue 3).
#
# make policy-golden-update   regenerate lang/tests/*.ok (and *.fmt) from
#                             the current `keep policy check` / `fmt`
# make bench-policy           the decision benchmark beside Cedar
#                             (bench/policy.sh; not part of make check)
#
# The golden and CLI tests run as tests/integration/policy_*.sh, the
# unit and differential tests as tests/unit/test_lang.c and
# test_policy.c, the fuzz harness as fuzz/policy.c.
# The benchmark needs node and npm (Debian: nodejs, npm) for its Cedar
# baseline; they are not build dependencies, so bench-policy installs
# them (and bench/policy.sh still says so when they are missing): each
# only when its command is missing, so a nodejs that brings its own npm
# (NodeSource's) is used as it is, not fought with Debian's npm.

.PHONY: policy-golden-update bench-policy
policy-golden-update: $(B)/bin/keep
	UPDATE=1 B=$(B) bash tests/integration/policy_golden.sh

DEPS_BENCH_POLICY = node:nodejs npm:npm
bench-policy: $(B)/bench/policy
	@sh mk/deps.sh $(DEPS_BENCH_POLICY)
	B=$(B) sh bench/policy.sh

$(B)/bench/policy: $(B)/obj/bench/policy.o $(B)/libkeep.a | deps
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeep.a $(LDLIBS)
