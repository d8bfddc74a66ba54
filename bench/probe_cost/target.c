// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * target.c: the probed program of the probe-cost benchmark.
 *
 * The functions below are written in assembly so that every instruction kind
 * we want to price sits at a known local label (p_push, p_ret, ...), visible
 * in .symtab. The loader attaches a uprobe_multi link to one label, runs this
 * program, and compares the time per call with an unprobed run.
 *
 *   target [iters] [v|x|n]
 *     v  victim()           every instruction kind on one straight path
 *     x  victim_xpage()     a 5-byte nop that straddles a page boundary, so
 *                           the 6.18 nop5 optimisation cannot apply to it
 *     n  victim_nop5entry() a function that starts with a 5-byte nop
 *                           (like -fpatchable-function-entry=5)
 *
 * Prints "ns_per_call <float>" for the timed loop (one untimed warm-up call
 * first: it faults the page in and lets the kernel optimise a nop5 probe).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long victim(long x);
long victim_xpage(long x);
long victim_nop5entry(long x);

__asm__(
	".text\n"
	".p2align 6\n"
	".globl victim\n"
	".type victim,@function\n"
	"victim:\n"
	"p_push:    push %rbp\n"                   /* 55                     */
	"p_movrr:   mov %rsp,%rbp\n"               /* 48 89 e5               */
	"p_pushbx:  push %rbx\n"                   /* 53                     */
	"p_subrsp:  sub $8,%rsp\n"                 /* 48 83 ec 08            */
	"p_lea:     lea 1(%rdi),%rbx\n"            /* 48 8d 5f 01            */
	"p_nop1:    nop\n"                         /* 90                     */
	"p_nop5:    .byte 0x0f,0x1f,0x44,0x00,0x00\n"  /* nopl 0(%rax,%rax,1)  */
	"p_nop6:    .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" /* nopw */
	"p_call:    call helper\n"                 /* e8 rel32               */
	"p_jmp8:    jmp 1f\n"                      /* eb 00                  */
	"1:\n"
	"p_jmp32:   .byte 0xe9\n .long 0\n"        /* e9 00000000            */
	"p_test:    test %rdi,%rdi\n"              /* 48 85 ff               */
	"p_jcc8:    js 2f\n"                       /* 78 00 (not taken)      */
	"2:\n"
	"p_jcc32:   .byte 0x0f,0x88\n .long 0\n"   /* 0f 88 rel32 (js)       */
	"p_jcc8t:   jns 3f\n"                      /* 79 xx (taken)          */
	"           ud2\n"
	"3:\n"
	"p_addrsp:  add $8,%rsp\n"                 /* 48 83 c4 08            */
	"p_movret:  mov %rbx,%rax\n"               /* 48 89 d8               */
	"p_popbx:   pop %rbx\n"                    /* 5b                     */
	"p_pop:     pop %rbp\n"                    /* 5d                     */
	"p_ret:     ret\n"                         /* c3                     */
	".size victim, .-victim\n"
	"helper:    ret\n"

	/* nop5 at page offset 4094: crosses the page, can_optimize() says no */
	".p2align 12\n"
	".skip 4093\n"
	".globl victim_xpage\n"
	".type victim_xpage,@function\n"
	"victim_xpage:\n"
	"px_push:   push %rbp\n"                   /* at page offset 4093    */
	"px_nop5:   .byte 0x0f,0x1f,0x44,0x00,0x00\n"  /* 4094..4098 */
	"           mov %rdi,%rax\n"
	"           pop %rbp\n"
	"px_ret:    ret\n"
	".size victim_xpage, .-victim_xpage\n"

	".p2align 6\n"
	".globl victim_nop5entry\n"
	".type victim_nop5entry,@function\n"
	"victim_nop5entry:\n"
	"pn_nop5:   .byte 0x0f,0x1f,0x44,0x00,0x00\n"
	"pn_push:   push %rbp\n"
	"           mov %rdi,%rax\n"
	"           pop %rbp\n"
	"pn_ret:    ret\n"
	".size victim_nop5entry, .-victim_nop5entry\n");

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	char which = argc > 2 ? argv[2][0] : 'v';
	long (*volatile fn)(long) = which == 'x' ? victim_xpage
				  : which == 'n' ? victim_nop5entry
						 : victim;
	volatile long sink = 0;

	sink += fn(0); /* warm-up: page-in, first hit optimises nop5 probes */
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		sink += fn(i);
	double t1 = now_ns();
	printf("ns_per_call %.2f\n", (t1 - t0) / iters);
	return sink == 42 ? 1 : 0;
}
