/*
 * LD_PRELOAD for the examples' tests (tests/examples_without_gpu.rs): bounds how deep a program
 * may start programs, so that one which starts itself again and again (the GPU quickstart's
 * `allreduce` did, with a world of one) fails at once instead of filling the machine with
 * processes before any time limit is reached.
 *
 * NCCL_TRAMPOLINE_TEST_SPAWN_DEPTH=N: while N > 0 this process may start processes, each with
 * N - 1 in its environment; at 0, posix_spawn and posix_spawnp return EAGAIN and fork fails
 * with EAGAIN, after one line on stderr naming what was refused. Unset: no limit.
 *
 * Rust's std::process::Command starts programs with posix_spawn on glibc when no pre_exec
 * hook, uid, gid or groups are set (the Unix process module of Rust's std), as the examples
 * do; fork is refused at depth 0 too, but not counted down.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VAR "NCCL_TRAMPOLINE_TEST_SPAWN_DEPTH"

/* This process's depth, or -1 for no limit. */
static int depth(void) {
    const char *d = getenv(VAR);
    return d && *d ? atoi(d) : -1;
}

static void refuse(const char *what) {
    char line[160];
    int n = snprintf(line, sizeof line, "spawn_limit: %s refused: " VAR "=0 (this process may not start another)\n", what);
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* `envp` with VAR set to `d`, in a new array (its strings borrowed, but one). */
static char **with_depth(char *const envp[], int d, char *slot, size_t slot_len) {
    size_t n = 0;
    while (envp && envp[n]) n++;
    char **out = calloc(n + 2, sizeof *out);
    if (!out) return NULL;
    snprintf(slot, slot_len, VAR "=%d", d);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], VAR "=", sizeof VAR) != 0) out[k++] = envp[i];
    out[k++] = slot;
    out[k] = NULL;
    return out;
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

static int spawn(const char *name, pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    spawn_fn real = (spawn_fn)dlsym(RTLD_NEXT, name);
    if (!real) return ENOSYS;
    int d = depth();
    if (d < 0) return real(pid, path, actions, attr, argv, envp);
    if (d == 0) {
        refuse(name);
        return EAGAIN;
    }
    char slot[64];
    char **env = with_depth(envp, d - 1, slot, sizeof slot);
    if (!env) return ENOMEM;
    int r = real(pid, path, actions, attr, argv, env);
    free(env);
    return r;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    return spawn("posix_spawn", pid, path, actions, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    return spawn("posix_spawnp", pid, file, actions, attr, argv, envp);
}

pid_t fork(void) {
    pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
    if (depth() == 0) {
        refuse("fork");
        errno = EAGAIN;
        return -1;
    }
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real();
}
