/*
 * tests/callback_lifetimes.rs: a library that keeps a callback it is given, as a plugin keeps
 * the functions of its host, and calls it. Loaded, unloaded (dlclose) and loaded again by the
 * test; `loads` counts its loads since it was last mapped, so the test can see a fresh copy.
 */
#include <stdint.h>

typedef int32_t (*binary_fn)(int32_t, int32_t);

static binary_fn held;
static int32_t calls;

/* Keeps `f`; returns how many callbacks this copy of the library was given before. */
int32_t nt_holder_keep(binary_fn f) {
    static int32_t given;
    held = f;
    return given++;
}

/* Calls the kept callback: f(a, b) + 1000 * (the calls this copy made before). */
int32_t nt_holder_call(int32_t a, int32_t b) { return held(a, b) + 1000 * calls++; }
