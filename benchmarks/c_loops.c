/* The C baseline measured inside the benchmark's own process (scripts/bench).
 *
 * The GPU machines' speed differs from one process to the next (the same raw call has
 * measured 0.24 us in one interpreter and 0.50 us in the next), so a ratio whose two sides
 * come from different processes says more about the processes than the code.  These loops
 * are built with the system C compiler when the benchmark starts, loaded into the process
 * that times pygraphrt, and timed trial by trial beside it.  Each takes the runtime
 * function to call as an address: the entry point of the very library pygraphrt loaded, so
 * nothing here links against a vendor library or includes its headers.  Every loop returns
 * 0, or the first nonzero status the runtime gave.
 */
#include <stddef.h>

typedef int (*pgr_launch_fn)(void *exec, void *stream);
typedef int (*pgr_is_capturing_fn)(void *stream, int *status);
typedef int (*pgr_add_empty_fn)(void **node, void *graph, void *const *deps, size_t n);
typedef int (*pgr_instantiate_fn)(void **exec, void *graph, unsigned long long flags);
typedef int (*pgr_exec_destroy_fn)(void *exec);

/* `n` launches of `exec` on `stream`. */
int pgr_c_launch(void *fn, void *exec, void *stream, int n) {
    pgr_launch_fn f = (pgr_launch_fn)fn;
    int i, rc;
    for (i = 0; i < n; i++)
        if ((rc = f(exec, stream)) != 0) return rc;
    return 0;
}

/* `n` capture-status queries of `stream`. */
int pgr_c_is_capturing(void *fn, void *stream, int n) {
    pgr_is_capturing_fn f = (pgr_is_capturing_fn)fn;
    int i, rc, status;
    for (i = 0; i < n; i++)
        if ((rc = f(stream, &status)) != 0) return rc;
    return 0;
}

/* `n` empty nodes added to `graph`: each depending on the one before, starting at `root`
 * (`chain` nonzero), or all on `root`. */
int pgr_c_add_empty(void *fn, void *graph, void *root, int n, int chain) {
    pgr_add_empty_fn f = (pgr_add_empty_fn)fn;
    void *prev = root, *node = NULL;
    int i, rc;
    for (i = 0; i < n; i++) {
        if ((rc = f(&node, graph, &prev, 1)) != 0) return rc;
        if (chain) prev = node;
    }
    return 0;
}

/* `graph` instantiated with no flags; the executable graph is written to `*exec`. */
int pgr_c_instantiate(void *fn, void *graph, void **exec) {
    return ((pgr_instantiate_fn)fn)(exec, graph, 0ULL);
}

/* `exec` destroyed. */
int pgr_c_exec_destroy(void *fn, void *exec) {
    return ((pgr_exec_destroy_fn)fn)(exec);
}
