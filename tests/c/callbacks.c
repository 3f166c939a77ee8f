/*
 * tests/callbacks.rs: C callers of Rust callbacks, the compiler as the oracle of where every
 * argument goes and where the result is read from. Each nt_cbc_<shape>(f) calls `f` (a
 * Callback's entry) with the literal values below, which the Rust handler checks byte for
 * byte, and checks the result the handler returns (the Rust test knows the same literals).
 * Returns 0 when the result is the expected one, else the line of the failed check.
 */
#include <stdint.h>
#include <string.h>

#define CHECK(cond) do { if (!(cond)) return __LINE__; } while (0)

/* Integers of every width, all in registers; the result from their sum. */
typedef int64_t (*ints6_fn)(int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t);
int nt_cbc_ints6(ints6_fn f) {
    CHECK(f(-5, 250, -1234, 65000, -123456789, 4000000000u) == -5 + 250 - 1234 + 65000 - 123456789 + 4000000000LL);
    return 0;
}

/* Narrow results: each returned as its C type; the caller reads them as C does. */
typedef int8_t (*ret_i8_fn)(int32_t);
typedef uint8_t (*ret_u8_fn)(int32_t);
typedef int16_t (*ret_i16_fn)(int32_t);
typedef uint16_t (*ret_u16_fn)(int32_t);
typedef uint32_t (*ret_u32_fn)(int32_t);
typedef void *(*ret_ptr_fn)(void *);
int nt_cbc_ret_i8(ret_i8_fn f) { CHECK(f(1) == -7); return 0; }
int nt_cbc_ret_u8(ret_u8_fn f) { CHECK(f(2) == 249); return 0; }
int nt_cbc_ret_i16(ret_i16_fn f) { CHECK(f(3) == -30000); return 0; }
int nt_cbc_ret_u16(ret_u16_fn f) { CHECK(f(4) == 60000); return 0; }
int nt_cbc_ret_u32(ret_u32_fn f) { CHECK(f(5) == 0xfedcba98u); return 0; }
int nt_cbc_ret_ptr(ret_ptr_fn f) {
    static char target[16];
    CHECK(f(target) == target + 5);
    return 0;
}

/* Floats and doubles mixed, all in registers; a float result and a double result. */
typedef double (*fd4_fn)(float, double, float, double);
typedef float (*df_fn)(double, float);
int nt_cbc_fd4(fd4_fn f) { CHECK(f(1.5f, -2.25, 3.125f, 1e300) == 0.1); return 0; }
int nt_cbc_df(df_fn f) { CHECK(f(6.5, -0.75f) == -3.5f); return 0; }

/* Ten integers: four on the stack, two of them narrow (their slots' upper bytes are the
 * caller's to leave as they are). */
typedef int64_t (*ints10_fn)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t,
                             int8_t);
int nt_cbc_ints10(ints10_fn f) {
    CHECK(f(1, -2, 3, -4, 5, -6, 0x7000000000000007LL, -8, -9, -10) == 0x0123456789abcdefLL);
    return 0;
}

/* Eleven floating-point arguments: three on the stack. */
typedef double (*floats11_fn)(double, double, double, double, double, double, double, double, float, double,
                              float);
int nt_cbc_floats11(floats11_fn f) {
    CHECK(f(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.25f, 9.75, -10.5f) == 12345.5);
    return 0;
}

/* Seven integers and nine doubles interleaved: the seventh and the ninth on the stack, in
 * argument order. */
typedef int32_t (*mixed16_fn)(int32_t, double, int32_t, double, int32_t, double, int32_t, double, int32_t, double,
                              int32_t, double, int32_t, double, double, double);
int nt_cbc_mixed16(mixed16_fn f) {
    CHECK(f(1, 1.25, 2, 2.25, 3, 3.25, 4, 4.25, 5, 5.25, 6, 6.25, 7, 7.25, 8.25, 9.25) == -77);
    return 0;
}

/* Small structs in registers, every class mix. */
struct ii { int32_t a, b; };              /* INTEGER */
struct dd { double a, b; };               /* SSE, SSE */
struct dl { double d; int64_t l; };       /* SSE, INTEGER */
struct fid { float f; int32_t i; double d; }; /* INTEGER (float + int), SSE */
struct c3 { char a, b, c; };              /* INTEGER, 3 bytes */
typedef int64_t (*small_structs_fn)(struct ii, struct dd, struct dl, struct fid, struct c3);
int nt_cbc_small_structs(small_structs_fn f) {
    struct ii ii = {-11, 22};
    struct dd dd = {3.5, -4.5};
    struct dl dl = {5.75, -0x66666666666LL};
    struct fid fid = {7.5f, -8, 9.125};
    struct c3 c3 = {'x', 'y', 'z'};
    CHECK(f(ii, dd, dl, fid, c3) == 424242);
    return 0;
}

/* A 16-byte struct when only one integer register is left: wholly on the stack, and the next
 * integer still takes r9. */
struct ll { int64_t a, b; };
typedef int64_t (*struct_to_stack_fn)(int64_t, int64_t, int64_t, int64_t, int64_t, struct ll, int64_t);
int nt_cbc_struct_to_stack(struct_to_stack_fn f) {
    struct ll s = {0x1111111111111111LL, -0x2222222222222222LL};
    CHECK(f(1, 2, 3, 4, 5, s, 6) == 7);
    return 0;
}

/* Structs in memory: 24 bytes with tail padding, and ncclCommInitRank's 128-byte id. */
struct big24 { int64_t a; double b; int32_t c; };
typedef struct { char internal[128]; } unique_id;
typedef int32_t (*memory_structs_fn)(struct big24, void *, int32_t, unique_id, int32_t);
int nt_cbc_memory_structs(memory_structs_fn f) {
    struct big24 b = {-0x123456789LL, 2.5, 77};
    unique_id id;
    for (int i = 0; i < 128; i++) id.internal[i] = (char)(i * 7 + 3);
    CHECK(f(b, (void *)0x1234567890, 4, id, 3) == 11);
    return 0;
}

/* Struct results in registers: rax:rdx, xmm0:xmm1, xmm0 + rax, rax + 4 bytes of rdx,
 * xmm0 + 4 bytes of xmm1. */
struct iii { int32_t a, b, c; };
struct fff { float a, b, c; };
typedef struct ll (*ret_ll_fn)(int32_t);
typedef struct dd (*ret_dd_fn)(int32_t);
typedef struct dl (*ret_dl_fn)(int32_t);
typedef struct iii (*ret_iii_fn)(int32_t);
typedef struct fff (*ret_fff_fn)(int32_t);
int nt_cbc_ret_ll(ret_ll_fn f) { struct ll r = f(1); CHECK(r.a == -1 && r.b == 0x7766554433221100LL); return 0; }
int nt_cbc_ret_dd(ret_dd_fn f) { struct dd r = f(2); CHECK(r.a == 1.25 && r.b == -2.5); return 0; }
int nt_cbc_ret_dl(ret_dl_fn f) { struct dl r = f(3); CHECK(r.d == 0.125 && r.l == -99); return 0; }
int nt_cbc_ret_iii(ret_iii_fn f) { struct iii r = f(4); CHECK(r.a == 1 && r.b == -2 && r.c == 3); return 0; }
int nt_cbc_ret_fff(ret_fff_fn f) { struct fff r = f(5); CHECK(r.a == 1.5f && r.b == 2.5f && r.c == -3.5f); return 0; }

/* A MEMORY-class result through the hidden pointer (%rdi), with a memory struct argument too;
 * the callee must return the pointer in %rax, which gcc's caller may use. */
typedef struct big24 (*ret_big_fn)(int32_t, double, struct big24);
int nt_cbc_ret_big(ret_big_fn f) {
    struct big24 in = {5, 6.5, 7};
    struct big24 r = f(-3, 0.5, in);
    CHECK(r.a == 0x0102030405060708LL && r.b == -1.75 && r.c == -42);
    return 0;
}

/* long double: in memory as an argument, %st(0) as a result; _Complex long double in %st(0)
 * and %st(1). */
typedef long double (*long_double_fn)(long double, int32_t, long double, double);
typedef _Complex long double (*complex_ld_fn)(int32_t, long double);
int nt_cbc_long_double(long_double_fn f) { CHECK(f(1.5L, 2, -3.25L, 4.0) == -0.0625L); return 0; }
int nt_cbc_complex_ld(complex_ld_fn f) {
    _Complex long double r = f(9, 2.5L);
    CHECK(__real__ r == 3.0L && __imag__ r == -4.5L);
    return 0;
}

/* __int128 in a register pair and returned in rax:rdx; the complex types as SSE pairs. */
typedef __int128 (*int128_fn)(__int128, int32_t, unsigned __int128);
typedef _Complex double (*complex_fn)(_Complex float, _Complex double);
int nt_cbc_int128(int128_fn f) {
    __int128 a = ((__int128)-0x0123456789abcdefLL << 64) | 0xfedcba9876543210ULL;
    unsigned __int128 c = ((unsigned __int128)0x1111222233334444ULL << 64) | 0x5555666677778888ULL;
    __int128 r = f(a, -1, c);
    CHECK(r == (((__int128)0x7fffffffffffffffLL << 64) | 1));
    return 0;
}
int nt_cbc_complex(complex_fn f) {
    _Complex double r = f(1.5f + 2.5fi, -3.5 + 4.5i);
    CHECK(__real__ r == 0.25 && __imag__ r == -0.75);
    return 0;
}

/* __int128 where the registers run short: SysV puts it wholly on the stack with one integer
 * register left (and the next int64_t still takes r9); AAPCS64 skips x5 for the even pair
 * x6:x7; in int128_split LP64D splits it between a7 and the stack, and AAPCS64 sends it to the
 * stack with x7 left. */
typedef __int128 (*int128_late_fn)(int64_t, int64_t, int64_t, int64_t, int64_t, __int128, int64_t, int64_t,
                                   __int128);
typedef __int128 (*int128_split_fn)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, __int128,
                                    int64_t);
int nt_cbc_int128_late(int128_late_fn f) {
    __int128 x = ((__int128)0x0102030405060708LL << 64) | 0x1112131415161718ULL;
    __int128 y = ((__int128)-2 << 64) | 0x2122232425262728ULL;
    CHECK(f(1, 2, 3, 4, 5, x, 6, 7, y) == x + y + 28);
    return 0;
}
int nt_cbc_int128_split(int128_split_fn f) {
    __int128 x = ((__int128)0x3132333435363738LL << 64) | 0x4142434445464748ULL;
    CHECK(f(1, 2, 3, 4, 5, 6, 7, x, -8) == x + 20);
    return 0;
}

/* void result; the handler writes through a pointer argument. */
typedef void (*void_fn)(int32_t *, int32_t);
int nt_cbc_void(void_fn f) {
    int32_t out = 0;
    f(&out, 41);
    CHECK(out == 42);
    return 0;
}

/* Re-entrancy: C calls the callback, whose handler calls back into C (this function) with a
 * smaller depth, which calls the callback again. */
typedef int32_t (*depth_fn)(int32_t);
int32_t nt_cbc_reenter(depth_fn f, int32_t depth) { return f(depth) + 1; }

/* Unwinding through the callback stub: the handler calls nt_cbc_unwind_run, which runs libgcc's
 * unwinder (_Unwind_Backtrace, reading .eh_frame as debuggers and profilers do) from inside the
 * handler, through the Rust dispatcher's frames, cb_common and the C caller, and reports whether
 * it reached nt_cbc_unwind_outer: 1000 + frames walked, or -frames walked when it stopped
 * before. nt_cbc_unwind_outer(caller, f) calls caller(f), which calls f(7): caller is
 * nt_cbc_unwind_call (C, with call frame information) or nt_cbc_no_cfi_call
 * (tests/c/callbacks_probe.S, a frame without it: the negative control, where the walk must
 * stop). */
#include <unwind.h>

typedef int64_t (*unwind_fn)(int32_t);
typedef int64_t (*unwind_caller)(unwind_fn);

static void *unwind_target;
static int unwind_found;
static int unwind_depth;

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg) {
    (void)arg;
    void *ip = (void *)_Unwind_GetIP(ctx);
    if (++unwind_depth > 128)
        return _URC_END_OF_STACK;
    if (ip && _Unwind_FindEnclosingFunction(ip) == unwind_target) {
        unwind_found = 1;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

int64_t nt_cbc_unwind_run(void) {
    unwind_found = 0;
    unwind_depth = 0;
    _Unwind_Backtrace(unwind_step, 0);
    return unwind_found ? 1000 + unwind_depth : -unwind_depth;
}

__attribute__((noinline)) int64_t nt_cbc_unwind_call(unwind_fn f) {
    int64_t r = f(7);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame must be there */
    return r;
}

__attribute__((noinline)) int64_t nt_cbc_unwind_outer(unwind_caller caller, unwind_fn f) {
    unwind_target = (void *)nt_cbc_unwind_outer;
    int64_t r = caller(f);
    __asm__ volatile("" ::: "memory");
    return r;
}
