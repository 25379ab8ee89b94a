# make check-kvm (issue 27): the tests that exercise the KVM platform
# itself, listed in tests/kvm.list (make check-kvm-full:
# tests/kvm-full.list), against a real /dev/kvm: natively
# where it opens, else in a nested VM (tests/nested-kvm.sh: Debian's own
# kernel under QEMU's TCG with emulated SVM). Not part of make check;
# .ci/run runs it after. T=TEST... runs those tests instead of the list:
#   make check-kvm T=tests/integration/vmm_procs.sh
# The nested VM's packages are installed here, only where it is needed
# (make deps leaves them out: a machine with KVM never boots QEMU).
DEPS_KVM_NESTED = qemu-system-x86 linux-image-amd64 busybox-static

.PHONY: check-kvm check-kvm-full
check-kvm: all
	@[ -c /dev/kvm ] || sh mk/deps.sh $(DEPS_KVM_NESTED)
	@B=$(B) bash tests/check-kvm.sh $(T)

# The whole KVM platform (tests/kvm-full.list): more than CI's budget
# nested; natively, minutes.
check-kvm-full: all
	@[ -c /dev/kvm ] || sh mk/deps.sh $(DEPS_KVM_NESTED)
	@B=$(B) KVM_LIST=tests/kvm-full.list KEEP_NESTED_TIMEOUT=$${KEEP_NESTED_TIMEOUT:-5400} \
	    bash tests/check-kvm.sh $(T)
