/*
 * Runtime of the C oracle (src/oracle/ generates the callees and callers): the recording
 * buffer the callees write what they received into, the bytes they return, and probes for the
 * stack alignment at the call. Compiled into the conformance tests' oracle libraries and, by
 * build.rs, into `nccl-trampoline selftest` (with generated/selftest_oracle.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

unsigned char nt_rec[1 << 16];
size_t nt_rec_len;
_Alignas(16) unsigned char nt_ret_src[1 << 13];

void nt_rec_reset(void) { nt_rec_len = 0; }
const unsigned char *nt_rec_data(void) { return nt_rec; }
size_t nt_rec_size(void) { return nt_rec_len; }
unsigned char *nt_ret_bytes(void) { return nt_ret_src; }

/* Writes into the callee's own copy of a by-value aggregate, as optimized callees do; noinline
 * so the compiler cannot drop the write. */
__attribute__((noinline)) void nt_scribble(void *p, size_t n) { memset(p, 0xA5, n); }

/* Records the stack pointer's alignment at entry: the frame address is the stack pointer at
 * the call (AArch64: sp after the frame record) or minus the return address (x86-64: %rbp
 * after "push %rbp"), both 16-aligned when the caller kept the ABI's alignment. Takes stack
 * arguments so the trampoline's outgoing area is exercised. */
__attribute__((noinline)) int64_t nt_stack_alignment(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e,
                                                     int64_t f, int64_t g, int64_t h, int64_t i) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    return (int64_t)(fp & 15) * 1000000 + (a + b + c + d + e + f + g + h + i);
}
