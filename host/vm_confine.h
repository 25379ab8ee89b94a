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
 *  3. its seccomp filter (seccomp_vm, SCF_NO_SOCKETS: no syslog socket;
 *     the guest's own sockets are AF_UNIX, and AF_INET and AF_INET6
 *     only with a network namespace of its own, SCF_VM_NET; plain open
 *     and openat are not there either).
 *
 * Before all of it, vm_confine_net_join (its sandbox's, keepd) or
 * vm_confine_net (its own) gives the process a network namespace with
 * only lo (docs/vmm.md, "Sockets"); joining, its root becomes its
 * workspace.
 *
 * Without Landlock, or with an ABI before 6, the remaining steps still
 * apply: docs/threat-model.md says what that leaves open.
 */
#ifndef KEEP_HOST_VM_CONFINE_H
#define KEEP_HOST_VM_CONFINE_H

#include <stddef.h>

/*
 * A network namespace of the calling process's own with nothing but
 * `lo`, up: the guest's AF_INET and AF_INET6 sockets live there, reach
 * each other over loopback and nothing else, and abstract AF_UNIX names
 * are private to it. Unprivileged, inside a user namespace that maps
 * only the caller's own uid and gid, whose capabilities are dropped
 * once lo is up. Call single-threaded, before vm_confine. Returns 1 when
 * made, 0 when it cannot be had here (a chroot without /proc: keepd
 * started as root; user namespaces refused) with the reason in err and
 * nothing changed, or -1 with a reason when the process is left half
 * way and must not go on.
 */
int vm_confine_net(char *err, size_t errlen);

/*
 * A network namespace made earlier (vm_netns_make), joined: the user
 * namespace that owns it first (userfd; -1: none, a privileged caller),
 * then it; with a user namespace the process's root becomes ws_fd (its
 * workspace; -1: none) while it may, then every capability that gave is
 * dropped. 1, or -1 with a reason in err (the process must not go on).
 */
int vm_confine_net_join(
    int userfd, int netfd, int ws_fd, char *err, size_t errlen);

/*
 * A sandbox's port connector (host/vmmproc/vmm_port.c) joins its user
 * and network namespaces as vm_confine_net_join does, and drops every
 * capability the user namespace lends (no chroot, no resolver: it only
 * connects). 0, or -1 with a reason in err.
 */
int vm_confine_port_join(int userfd, int netfd, char *err, size_t errlen);

/*
 * The namespace maker: a child of the vmm forked before its privilege
 * drop (host/proc.c), so that it keeps /proc and no chroot, the two
 * things a user namespace needs; it runs as user (the vmm's), with
 * NO_NEW_PRIVS, and holds nothing but its socket. For each request it
 * forks a child that enters vm_confine_net's namespaces and sends their
 * descriptors back. A sandbox holds its pair for its life, so that its
 * runs, its contexts and its background commands share one loopback
 * (host/vmmproc/vmm_sandbox.c).
 *
 * start: the maker's socket, or -1 (a root vmm without a user to run
 * as, or no fork). make: the user and network namespaces' descriptors
 * (close-on-exec), 0; or -1, none (the run then tries vm_confine_net).
 */
#define VM_NETNS_WAIT_MS 2000
int vm_netns_maker_start(const char *user);
int vm_netns_make(int maker, int *userfd, int *netfd);

/*
 * Confine the calling process to ws_fd (its workspace directory); net:
 * vm_confine_net made its namespace (TCP then left to it rather than
 * Landlock, and the internet families' sockets allowed). Returns the
 * Landlock ABI enforced (0: none, the kernel has no Landlock), or -1
 * with a reason in err: the process must not go on.
 */
int vm_confine(int ws_fd, int net, char *err, size_t errlen);

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
 *   inet, inet6   socket(AF_INET, SOCK_STREAM), socket(AF_INET6, ...)
 *   netlink       socket(AF_NETLINK, SOCK_RAW)
 *   packet        socket(AF_PACKET, SOCK_RAW)
 *   unshare       unshare(CLONE_NEWNET), confined
 *   net:PROBE     PROBE after vm_confine_net (its outcome printed)
 *   holder:PROBE  PROBE (open, llkill) confined as a template's holder is
 *   clone:PROBE   PROBE (open, create) as its clone: the holder's layer,
 *                 then the vm process's
 * and print "PROBE: allowed", "PROBE: denied (errno text)" or
 * "PROBE: killed by signal N". Returns the exit status for main.
 */
int vm_confine_selftest(
    const char *state, const char *user, int nprobes, char **probes);

#endif
