/* C callers of variadic callbacks (tests/variadic_callbacks.rs): NCCL's logger type, called as
 * NCCL calls it, with the reference text from the C library's own snprintf. No architecture
 * assumption: the compiler places every argument. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* include/nccl_common.h (NCCL 2.x). */
typedef enum {
    NCCL_LOG_NONE = 0,
    NCCL_LOG_VERSION = 1,
    NCCL_LOG_WARN = 2,
    NCCL_LOG_INFO = 3,
    NCCL_LOG_ABORT = 4,
    NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);

/* One logger call and its reference: the text snprintf makes of the same format and arguments
 * is appended to `want`, one line per call. */
#define LOG(level, flags, line, ...)                                                                  \
    do {                                                                                          \
        size_t used = strlen(want);                                                               \
        snprintf(want + used, cap - used, __VA_ARGS__);                                           \
        used = strlen(want);                                                                      \
        snprintf(want + used, cap - used, "\n");                                                  \
        logger(level, flags, __FILE__, line, __VA_ARGS__);                                          \
    } while (0)

/* Calls `log` as NCCL's init, net and collective code does (the formats are NCCL's own shapes:
 * strings, ints, sizes, pointers, doubles), and writes the reference lines into `want`. */
void nt_vcb_logger(ncclDebugLogger_t logger, char *want, size_t cap) {
    int dummy = 0;
    want[0] = '\0';
    LOG(NCCL_LOG_VERSION, 0, 1, "%s", "NCCL version 2.28.9+cuda13.0");
    LOG(NCCL_LOG_INFO, 0x1, 101, "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d",
        (void *)&dummy, 3, 8, 1, 8, 3, 0);
    LOG(NCCL_LOG_INFO, 0x10, 202, "NET/Socket : Using [%d]%s:%s<%d>", 0, "eth0", "10.0.0.7", 0);
    LOG(NCCL_LOG_WARN, 0x2, 303, "%s:%d -> %d (%s) after %.3f ms, %zu bytes, %lu ops, %lld ns", "enqueue.cc", 1234,
        5, "invalid usage", 12.625, (size_t)1 << 33, 18446744073709551615UL, -9007199254740993LL);
    LOG(NCCL_LOG_TRACE, 0xffffffffUL, 404, "%hhd %hd %hhu %hu %c%c %x %o %#llx %e %g %Lg %.20Lf %a", (signed char)-7,
        (short)-30000, (unsigned char)200, (unsigned short)65000, 'o', 'k', 0xdeadbeefu, 0755u, 0x123456789abcdefULL,
        -1.5e-300, 6.02214076e23, (long double)1.0 / 3, (long double)-2.75, 0.1);
    /* More arguments than registers: a mix of ints and doubles past both register files. */
    LOG(NCCL_LOG_INFO, 0x4, 505, "%d %f %d %f %d %f %d %f %d %f %d %f %d %f %d %f %d %f %d %f %Lg %s", 1, 1.5, 2, 2.5,
        3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, (long double)11.25, "end");
    LOG(NCCL_LOG_ABORT, 0, 606, "no arguments, 100%% literal");
}
