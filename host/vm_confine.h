/*
 * The confinement of a `keepd: vm` process, in the order it is applied
 * after the fork from the vmm (which is already chrooted at the state
 * directory, `_keep`, with no capabilities and NO_NEW_PRIVS):
 *
 *  1. logging goes to stderr only (the syslog socket is closed);
 *  2. Landlock (lib/landlock.h): its own workspace is the only file
 *     hierarchy it can open anything in (the image is already in its
 *     memory); signals and abstract UNIX sockets are scoped to its own
 *     domain (ABI 6), so it cannot signal keepd's other processes, which
 *     run as the same user;
 *  3. its seccomp filter (seccomp_vm, SCF_NO_SOCKETS: no socket() or
 *     connect(); plain open and openat are not there either).
 *
 * Without Landlock, or with an ABI before 6, the remaining steps still
 * apply: docs/threat-model.md says what that leaves open.
 */
#ifndef KEEP_HOST_VM_CONFINE_H
#define KEEP_HOST_VM_CONFINE_H

#include <stddef.h>

/*
 * Confine the calling process to ws_fd (its workspace directory). Returns
 * the Landlock ABI enforced (0: none, the kernel has no Landlock), or -1
 * with a reason in err: the process must not go on.
 */
int vm_confine(int ws_fd, char *err, size_t errlen);

/*
 * Confine a template's holder (host/vmmproc/vmm_template.c) before it boots
 * image code: Landlock as above, but beneath the state directory's
 * workspaces/ as a whole, since the layers of its clones' own workspaces
 * stack on this one and Landlock layers only narrow. The store, the keys,
 * the images and uploads are out of its reach. Call with the state
 * directory as the working directory. Returns the ABI enforced, or -1
 * with a reason in err.
 */
int vm_confine_holder(char *err, size_t errlen);

/*
 * keepd's hidden -J test mode (tests/integration/vmm_confine.sh), as
 * root: drop privilege as the vmm does (chroot state, user, the vmm's
 * filter), open the workspace ws (relative to state), then for each probe
 * fork a child that confines itself as a vm process does and tries it:
 *   open:PATH     openat2 of PATH (from the root: the state directory)
 *   create:NAME   openat2 of NAME beneath the workspace, created
 *   kill:PID      kill(PID, 0), fully confined
 *   llkill:PID    the same under Landlock alone (a filter that allows kill)
 *   socket        socket(AF_UNIX, SOCK_DGRAM)
 *   holder:PROBE  PROBE (open, llkill) confined as a template's holder is
 *   clone:PROBE   PROBE (open, create) as its clone: the holder's layer,
 *                 then the vm process's
 * and print "PROBE: allowed", "PROBE: denied (errno text)" or
 * "PROBE: killed by signal N". Returns the exit status for main.
 */
int vm_confine_selftest(
    const char *state, const char *user, int nprobes, char **probes);

#endif
