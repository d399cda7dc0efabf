#include "textflag.h"

// func cloneReaper(stackTop uintptr, rfd, wfd, pgid int32, name uintptr) int64
//
// Runs on one thread without a call or a safe point: every signal is
// blocked in this thread, the reaper is cloned (CLONE_VM|SIGCHLD: it
// shares the address space, has copies of the descriptors and of the
// blocked mask), and the mask is restored. The child uses registers and
// its own stack only, never Go's: R12 rfd, R13 wfd, BX pgid, R9 name.
TEXT ·cloneReaper(SB),NOSPLIT,$16-40
	MOVL	rfd+8(FP), R12
	MOVL	wfd+12(FP), R13
	MOVL	pgid+16(FP), BX
	MOVQ	name+24(FP), R9

	// rt_sigprocmask(SIG_SETMASK, &all, &old, 8)
	MOVQ	$-1, AX
	MOVQ	AX, all-8(SP)
	MOVL	$2, DI
	LEAQ	all-8(SP), SI
	LEAQ	old-16(SP), DX
	MOVL	$8, R10
	MOVL	$14, AX
	SYSCALL

	// clone(CLONE_VM|SIGCHLD, stackTop, 0, 0, 0)
	MOVL	$0x111, DI
	MOVQ	stackTop+0(FP), SI
	XORL	DX, DX
	XORL	R10, R10
	XORL	R8, R8
	MOVL	$56, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	child

	// The launcher: restore the mask, return the pid (or -errno).
	MOVQ	AX, ret+32(FP)
	MOVL	$2, DI
	LEAQ	old-16(SP), SI
	XORL	DX, DX
	MOVL	$8, R10
	MOVL	$14, AX
	SYSCALL
	RET

child:
	// setpgid(0, 0)
	XORL	DI, DI
	XORL	SI, SI
	MOVL	$109, AX
	SYSCALL
	// prctl(PR_SET_NAME, name)
	MOVL	$15, DI
	MOVQ	R9, SI
	MOVL	$157, AX
	SYSCALL
	// dup2(rfd, 0)
	MOVL	R12, DI
	XORL	SI, SI
	MOVL	$33, AX
	SYSCALL
	// close_range(1, ~0, 0); where the kernel has none, close 1..4095
	MOVL	$1, DI
	MOVL	$-1, SI
	XORL	DX, DX
	MOVL	$436, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	closed
	MOVL	$1, R12
closeloop:
	MOVL	R12, DI
	MOVL	$3, AX
	SYSCALL
	INCL	R12
	CMPL	R12, $4096
	JLT	closeloop
closed:
	SUBQ	$16, SP
readloop:
	// read(0, sp, 1): until the pipe ends (0) or fails
	XORL	DI, DI
	MOVQ	SP, SI
	MOVL	$1, DX
	XORL	AX, AX
	SYSCALL
	CMPQ	AX, $0
	JGT	readloop
	CMPQ	AX, $-4 // EINTR
	JEQ	readloop
	// kill(-pgid, SIGKILL)
	MOVL	BX, DI
	NEGL	DI
	MOVL	$9, SI
	MOVL	$62, AX
	SYSCALL
	// exit(0)
	XORL	DI, DI
	MOVL	$60, AX
	SYSCALL
	INT	$3
