/*
 * The terminal of an interactive run (RUN_F_TERMINAL, docs/terminal.md):
 * when cfg->tty is set, the guest's fds 0-2 as first opened (stdin, the
 * output sink) answer the terminal ioctls, so isatty() is true and a
 * shell finds its terminal. The line discipline is the minimum a shell
 * with its own line editing needs, decided here:
 *
 * - termios is kept per guest process (TCGETS, TCSETS[WF]) and its
 *   flags are honoured for two translations only: ICRNL on input (a
 *   terminal's Enter is \r) and OPOST|ONLCR on output (\n as \r\n);
 * - no echo and no canonical editing: bash's readline (and busybox's
 *   line editing) put the terminal in raw mode and echo and edit
 *   themselves; a program that reads a cooked terminal gets its input as
 *   it comes, unechoed;
 * - the window size is what the client last sent (TIOCGWINSZ reads the
 *   page the vmm writes); no SIGWINCH is raised;
 * - job control ioctls (TIOCGPGRP, TIOCSPGRP, TIOCSCTTY) succeed, the
 *   foreground group being the caller's: no signal comes from keys.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

/* The kernel's numbers (asm-generic/ioctls.h) and flags. */
#define K_TCGETS 0x5401
#define K_TCSETS 0x5402
#define K_TCSETSW 0x5403
#define K_TCSETSF 0x5404
#define K_TCFLSH 0x540b
#define K_TIOCSCTTY 0x540e
#define K_TIOCGPGRP 0x540f
#define K_TIOCSPGRP 0x5410
#define K_TIOCGWINSZ 0x5413
#define K_TIOCSWINSZ 0x5414
#define K_FIONREAD 0x541b
#define K_TIOCNOTTY 0x5422
#define K_ICRNL 0x100u
#define K_OPOST 0x1u
#define K_ONLCR 0x4u

/* struct termios as the kernel has it: four flag words, c_line, 19 c_cc. */
struct k_termios {
	uint32_t iflag, oflag, cflag, lflag;
	uint8_t line;
	uint8_t cc[19];
};
_Static_assert(sizeof(struct k_termios) == VM_TERMIOS_BYTES, "termios");

void
vm_tty_init(struct vm *vm)
{
	static const uint8_t cc[19] = { 3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26,
		0, 18, 15, 23, 22, 0, 0, 0 };
	struct k_termios t;

	memset(&t, 0, sizeof(t));
	t.iflag = 0x100 | 0x400; /* ICRNL IXON */
	t.oflag = K_OPOST | K_ONLCR;
	t.cflag = 0xf | 0x30 | 0x80 | 0x400; /* B38400 CS8 CREAD HUPCL */
	/* ISIG ICANON ECHO ECHOE ECHOK ECHOCTL ECHOKE IEXTEN */
	t.lflag = 0x1 | 0x2 | 0x8 | 0x10 | 0x20 | 0x200 | 0x800 | 0x8000;
	memcpy(t.cc, cc, sizeof(cc));
	memcpy(vm->termios, &t, sizeof(t));
}

/* Whether f is the terminal: the run's own stdin or output. */
int
vm_tty_is(const struct vm *vm, const struct vfd *f)
{
	return vm->cfg->tty && (f->kind == VFD_STDIN || f->kind == VFD_OUT);
}

int64_t
vm_tty_ioctl(struct vm *vm, struct vfd *f, uint64_t req, uint64_t arg)
{
	const uint64_t none[6] = { 0 };
	void *p;
	uint16_t ws[4];
	int32_t v;

	if (!vm_tty_is(vm, f))
		return -ENOTTY;
	switch (req) {
	case K_TCGETS:
		if ((p = vm_gptr(vm, arg, VM_TERMIOS_BYTES)) == NULL)
			return -EFAULT;
		memcpy(p, vm->termios, VM_TERMIOS_BYTES);
		return 0;
	case K_TCSETS:
	case K_TCSETSW:
	case K_TCSETSF:
		if ((p = vm_gptr(vm, arg, VM_TERMIOS_BYTES)) == NULL)
			return -EFAULT;
		memcpy(vm->termios, p, VM_TERMIOS_BYTES);
		return 0;
	case K_TIOCGWINSZ:
		if ((p = vm_gptr(vm, arg, sizeof(ws))) == NULL)
			return -EFAULT;
		memset(ws, 0, sizeof(ws));
		ws[0] = vm->cfg->winsize != NULL ? vm->cfg->winsize->rows : 24;
		ws[1] = vm->cfg->winsize != NULL ? vm->cfg->winsize->cols : 80;
		if (ws[0] == 0 || ws[1] == 0) {
			ws[0] = 24;
			ws[1] = 80;
		}
		memcpy(p, ws, sizeof(ws));
		return 0;
	case K_TIOCSWINSZ:
		/* The client's size is the terminal's; a program's own
		 * setting is accepted and not kept. */
		return vm_gptr(vm, arg, sizeof(ws)) != NULL ? 0 : -EFAULT;
	case K_TIOCGPGRP:
		if ((p = vm_gptr(vm, arg, sizeof(v))) == NULL)
			return -EFAULT;
		v = (int32_t)sys_getpgrp(vm, none);
		memcpy(p, &v, sizeof(v));
		return 0;
	case K_TIOCSPGRP:
		return vm_gptr(vm, arg, sizeof(v)) != NULL ? 0 : -EFAULT;
	case K_FIONREAD:
		/* Not known without asking the host: nothing, which makes a
		 * caller read and wait as it would for an empty terminal. */
		if ((p = vm_gptr(vm, arg, sizeof(v))) == NULL)
			return -EFAULT;
		v = 0;
		memcpy(p, &v, sizeof(v));
		return 0;
	case K_TCFLSH:
	case K_TIOCSCTTY:
	case K_TIOCNOTTY:
		return 0;
	default:
		return -ENOTTY;
	}
}

void
vm_tty_input(struct vm *vm, const struct vfd *f, uint8_t *buf, size_t n)
{
	struct k_termios t;
	size_t i;

	if (!vm_tty_is(vm, f))
		return;
	memcpy(&t, vm->termios, sizeof(t));
	if (!(t.iflag & K_ICRNL))
		return;
	for (i = 0; i < n; i++)
		if (buf[i] == '\r')
			buf[i] = '\n';
}

int
vm_tty_output(struct vm *vm, const struct vfd *f, const void *g, size_t len,
    uint8_t **out, size_t *outlen)
{
	struct k_termios t;
	const uint8_t *s = g;
	uint8_t *d;
	size_t i, o = 0;

	*out = NULL;
	if (!vm_tty_is(vm, f))
		return 0;
	memcpy(&t, vm->termios, sizeof(t));
	if ((t.oflag & (K_OPOST | K_ONLCR)) != (K_OPOST | K_ONLCR) ||
	    memchr(g, '\n', len) == NULL)
		return 0;
	if ((d = malloc(2 * len)) == NULL)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == '\n')
			d[o++] = '\r';
		d[o++] = s[i];
	}
	*out = d;
	*outlen = o;
	return 0;
}
