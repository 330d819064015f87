/* A stand-in libnccl.so.2 for testing pygraphrt.nccl without a GPU or NCCL.
 *
 * Compiled against the pinned nccl.h (bindgen's nccl header set, with its cuda_runtime.h
 * stand-ins) with -Wall -Werror, so every definition below is checked against NCCL's
 * prototype.  The model: every rank of every communicator lives in this one process (what
 * Communicator.init_all makes); buffers are host memory, read and written in place when the
 * operation can run (the stream is ignored: work runs at the call that completes it).  A
 * collective runs once every rank of the communicator has issued it (each rank's collectives
 * queue in order); a send runs when the peer's matching receive is there.  Reductions: sum,
 * prod, max, min, avg (integers truncate, as NCCL's do) and pre-multiplied sums (the scalar
 * read when the collective runs, for ncclScalarDevice), on the integer and 32/64-bit float
 * types.  An address at or above 2**56 (the sim backend's device memory, not host-reachable)
 * is refused with ncclInvalidArgument rather than dereferenced.
 *
 * Non-blocking communicators (config.blocking = 0) answer ncclInProgress from init, split and
 * finalize, and from an operation issued outside a group (NCCL launches it from a thread of its
 * own), and ncclCommGetAsyncError says ncclInProgress for FAKE_NCCL_POLLS polls (default 2)
 * before ncclSuccess -- or forever while fake_nccl_stuck is set (a peer that never comes).  An
 * operation issued on a non-blocking communicator still in progress is refused with
 * ncclInvalidArgument, as NCCL's ncclCommEnsureReady refuses it.
 * ncclGetVersion reports FAKE_NCCL_VERSION (default: the header's NCCL_VERSION_CODE).
 * fake_nccl_fail(api, code) makes the next call of ``api`` return ``code`` (with a last-error
 * message); fake_nccl_async(code) makes every communicator's async error ``code``.  Counters:
 * fake_nccl_aborts, fake_nccl_destroys, fake_nccl_finalizes, fake_nccl_redop_destroys, and
 * fake_nccl_calls (every call but ncclGetVersion, the error strings, ncclCommGetAsyncError,
 * ncclCommCuDevice and ncclCommAbort).
 * Written for pygraphrt's tests; it implements only what they call.
 */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 16
#define MAXQ 64
#define MAXOPS 16

int fake_nccl_aborts, fake_nccl_destroys, fake_nccl_finalizes, fake_nccl_redop_destroys;
int fake_nccl_stuck;
int fake_nccl_calls;
static int fake_async = 0;
static char fail_api[64];
static ncclResult_t fail_code;
static __thread char last_error[256];
static unsigned long id_counter;

enum kind { K_ALLREDUCE, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_REDUCESCATTER, K_SEND, K_RECV, K_SPLIT };

struct op {
    enum kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t redop;
    int root; /* root, or peer for send/recv, or color for split */
    int key;
    ncclComm_t *newcomm;
    ncclConfig_t *config;
};

struct clique {
    char id[NCCL_UNIQUE_ID_BYTES];
    int nranks, joined;
    struct ncclComm *ranks[MAXR];
    struct clique *next;
};

struct redop {
    int used, residence;
    ncclDataType_t dtype;
    const void *scalar;
    double value;
};

struct ncclComm {
    struct clique *cl;
    int rank, blocking, polls;
    struct op queue[MAXQ];
    int nq;
    struct op p2p[MAXQ];
    int np;
    struct redop ops[MAXOPS];
};

static struct clique *cliques;

void fake_nccl_fail(const char *api, int code) {
    snprintf(fail_api, sizeof fail_api, "%s", api);
    fail_code = (ncclResult_t)code;
}

void fake_nccl_async(int code) { fake_async = code; }

static ncclResult_t fail(ncclResult_t rc, const char *msg) {
    snprintf(last_error, sizeof last_error, "%s", msg);
    return rc;
}

static int injected(const char *api, ncclResult_t *rc) {
    if (fail_api[0] && strcmp(api, fail_api) == 0) {
        fail_api[0] = 0;
        snprintf(last_error, sizeof last_error, "fake libnccl: %s failed as the test asked", api);
        *rc = fail_code;
        return 1;
    }
    return 0;
}

#define INJECT(api) do { ncclResult_t injected_rc; fake_nccl_calls++; if (injected(api, &injected_rc)) return injected_rc; } while (0)

static int polls_default(void) {
    const char *e = getenv("FAKE_NCCL_POLLS");
    return e ? atoi(e) : 2;
}

static __thread int group_depth;

/* NCCL's ncclCommEnsureReady: a non-blocking communicator must have settled before the next call. */
static int not_ready(ncclComm_t comm) {
    return comm && !comm->blocking && (comm->polls > 0 || fake_nccl_stuck);
}
#define ENSURE_READY(comm) do { if (not_ready(comm)) return fail(ncclInvalidArgument, \
    "fake libnccl: Attempt to use communicator before the previous operation returned ncclSuccess"); } while (0)

static ncclResult_t started(struct ncclComm *c) {
    if (c->blocking) return ncclSuccess;
    c->polls = polls_default();
    return ncclInProgress;
}

ncclResult_t ncclGetVersion(int *version) {
    const char *e = getenv("FAKE_NCCL_VERSION");
    *version = e ? atoi(e) : NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    static const char *names[] = {"no error", "unhandled cuda error", "unhandled system error",
                                  "internal error", "invalid argument", "invalid usage",
                                  "remote process exited or there was a network error",
                                  "NCCL operation in progress", "timeout"};
    return (unsigned)result < sizeof names / sizeof names[0] ? names[result] : "unknown result code";
}

const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_error;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
    INJECT("ncclGetUniqueId");
    memset(uniqueId, 0, sizeof *uniqueId);
    snprintf(uniqueId->internal, sizeof uniqueId->internal, "fake-nccl-id-%lu", ++id_counter);
    return ncclSuccess;
}

static struct clique *clique_of(const char *id, int nranks) {
    for (struct clique *c = cliques; c; c = c->next)
        if (memcmp(c->id, id, NCCL_UNIQUE_ID_BYTES) == 0) return c;
    struct clique *c = calloc(1, sizeof *c);
    memcpy(c->id, id, NCCL_UNIQUE_ID_BYTES);
    c->nranks = nranks;
    c->next = cliques;
    cliques = c;
    return c;
}

static struct ncclComm *new_comm(struct clique *cl, int rank, ncclConfig_t *config) {
    struct ncclComm *c = calloc(1, sizeof *c);
    c->cl = cl;
    c->rank = rank;
    c->blocking = !(config && config->blocking == 0);
    cl->ranks[rank] = c;
    cl->joined++;
    return c;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
    INJECT("ncclCommInitRankConfig");
    if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "fake libnccl: bad nranks or rank");
    if (config && config->magic != NCCL_API_MAGIC)
        return fail(ncclInvalidArgument, "fake libnccl: config not initialised (magic)");
    struct clique *cl = clique_of(commId.internal, nranks);
    if (cl->nranks != nranks) return fail(ncclInvalidArgument, "fake libnccl: nranks differs between ranks");
    if (cl->ranks[rank]) return fail(ncclInvalidArgument, "fake libnccl: rank joined twice");
    *comm = new_comm(cl, rank, config);
    return started(*comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
    if (!comm) return fail(ncclInvalidArgument, "fake libnccl: NULL communicator");
    if (fake_async) {
        *asyncError = (ncclResult_t)fake_async;
    } else if (fake_nccl_stuck && !comm->blocking) {
        *asyncError = ncclInProgress;
    } else if (comm->polls > 0) {
        comm->polls--;
        *asyncError = ncclInProgress;
    } else {
        *asyncError = ncclSuccess;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    INJECT("ncclCommCount");
    *count = comm->cl->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    INJECT("ncclCommUserRank");
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    *device = comm->rank;
    return ncclSuccess;
}

static void forget(ncclComm_t comm) {
    struct clique *cl = comm->cl;
    cl->ranks[comm->rank] = NULL;
    free(comm);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    INJECT("ncclCommFinalize");
    fake_nccl_finalizes++;
    return started(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    INJECT("ncclCommDestroy");
    fake_nccl_destroys++;
    forget(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    fake_nccl_aborts++;
    if (comm) forget(comm);
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
    INJECT("ncclGroupStart");
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    INJECT("ncclGroupEnd");
    if (group_depth > 0) group_depth--;
    return ncclSuccess;
}

/* -- element access ---------------------------------------------------------------------- */
static size_t width(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

static int is_float(ncclDataType_t t) { return t == ncclFloat32 || t == ncclFloat64; }

static double get_f(const void *p, ncclDataType_t t, size_t i) {
    return t == ncclFloat32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static int64_t get_i(const void *p, ncclDataType_t t, size_t i) {
    switch (t) {
    case ncclInt8: return ((const int8_t *)p)[i];
    case ncclUint8: return ((const uint8_t *)p)[i];
    case ncclInt32: return ((const int32_t *)p)[i];
    case ncclUint32: return ((const uint32_t *)p)[i];
    case ncclInt64: return ((const int64_t *)p)[i];
    default: return (int64_t)((const uint64_t *)p)[i];
    }
}

static void put(void *p, ncclDataType_t t, size_t i, double f, int64_t v) {
    switch (t) {
    case ncclInt8: ((int8_t *)p)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t *)p)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t *)p)[i] = v; break;
    case ncclUint64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case ncclFloat32: ((float *)p)[i] = (float)f; break;
    default: ((double *)p)[i] = f; break;
    }
}

static double scalar_of(struct redop *r) {
    if (r->residence == ncclScalarHostImmediate) return r->value;
    return is_float(r->dtype) ? get_f(r->scalar, r->dtype, 0) : (double)get_i(r->scalar, r->dtype, 0);
}

/* out[i] = reduce over ranks r of in[r][offset + i] */
static void reduce_into(void *out, const void *const *in, int n, size_t offset, size_t count,
                        ncclDataType_t t, ncclRedOp_t op, struct ncclComm *const *ranks) {
    char *tmp = malloc(count * width(t) + 1);
    for (size_t i = 0; i < count; i++) {
        double f = 0;
        int64_t v = 0;
        for (int r = 0; r < n; r++) {
            double x = is_float(t) ? get_f(in[r], t, offset + i) : 0;
            int64_t y = is_float(t) ? 0 : get_i(in[r], t, offset + i);
            if (op >= ncclNumOps) {
                double s = scalar_of(&ranks[r]->ops[op - ncclNumOps]);
                x *= s;
                y = (int64_t)((double)y * s);
            }
            if (r == 0) { f = x; v = y; continue; }
            switch (op) {
            case ncclProd: f *= x; v *= y; break;
            case ncclMax: if (x > f) f = x; if (y > v) v = y; break;
            case ncclMin: if (x < f) f = x; if (y < v) v = y; break;
            default: f += x; v += y; break; /* sum, avg, premulsum */
            }
        }
        if (op == ncclAvg) { f /= n; v /= n; }
        put(tmp, t, i, f, v);
    }
    memcpy((char *)out, tmp, count * width(t));
    free(tmp);
}

static void run_collective(struct clique *cl) {
    struct op heads[MAXR];
    int n = cl->nranks;
    for (int r = 0; r < n; r++) {
        struct ncclComm *c = cl->ranks[r];
        heads[r] = c->queue[0];
        memmove(c->queue, c->queue + 1, (size_t)(--c->nq) * sizeof(struct op));
    }
    struct op *h = &heads[0];
    size_t bytes = h->count * width(h->dtype);
    const void *in[MAXR];
    for (int r = 0; r < n; r++) in[r] = heads[r].send;
    switch (h->kind) {
    case K_ALLREDUCE: {
        char *res = malloc(bytes + 1);
        reduce_into(res, in, n, 0, h->count, h->dtype, h->redop, cl->ranks);
        for (int r = 0; r < n; r++) memcpy(heads[r].recv, res, bytes);
        free(res);
        break;
    }
    case K_REDUCE:
        reduce_into(heads[h->root].recv, in, n, 0, h->count, h->dtype, h->redop, cl->ranks);
        break;
    case K_BROADCAST: {
        char *res = malloc(bytes + 1);
        memcpy(res, heads[h->root].send, bytes);
        for (int r = 0; r < n; r++) memcpy(heads[r].recv, res, bytes);
        free(res);
        break;
    }
    case K_ALLGATHER: {
        char *res = malloc(bytes * (size_t)n + 1);
        for (int r = 0; r < n; r++) memcpy(res + bytes * (size_t)r, heads[r].send, bytes);
        for (int r = 0; r < n; r++) memcpy(heads[r].recv, res, bytes * (size_t)n);
        free(res);
        break;
    }
    case K_REDUCESCATTER: {
        char *res = malloc(bytes * (size_t)n + 1);
        for (int r = 0; r < n; r++)
            reduce_into(res + bytes * (size_t)r, in, n, h->count * (size_t)r, h->count, h->dtype, h->redop, cl->ranks);
        for (int r = 0; r < n; r++) memcpy(heads[r].recv, res + bytes * (size_t)r, bytes);
        free(res);
        break;
    }
    case K_SPLIT: {
        struct clique *made[MAXR] = {0};
        int colors[MAXR], ncolors = 0;
        for (int r = 0; r < n; r++) {
            if (heads[r].root < 0) { *heads[r].newcomm = NULL; continue; }
            int k = 0;
            while (k < ncolors && colors[k] != heads[r].root) k++;
            if (k == ncolors) {
                colors[ncolors++] = heads[r].root;
                made[k] = calloc(1, sizeof(struct clique));
                snprintf(made[k]->id, sizeof made[k]->id, "fake-nccl-split-%lu", ++id_counter);
                made[k]->next = cliques;
                cliques = made[k];
            }
            made[k]->nranks++;
        }
        for (int k = 0; k < ncolors; k++) { /* ranks by (key, parent rank) */
            int placed = 0;
            for (int pass = 0; pass < n; pass++) {
                int best = -1;
                for (int r = 0; r < n; r++) {
                    if (heads[r].root != colors[k] || heads[r].newcomm == NULL) continue;
                    if (best < 0 || heads[r].key < heads[best].key) best = r;
                }
                if (best < 0) break;
                *heads[best].newcomm = new_comm(made[k], placed++, heads[best].config);
                started(*heads[best].newcomm);
                heads[best].newcomm = NULL;
            }
        }
        break;
    }
    default:
        break;
    }
}

static void progress(struct clique *cl) {
    for (;;) {
        for (int r = 0; r < cl->nranks; r++)
            if (!cl->ranks[r] || cl->ranks[r]->nq == 0) return;
        run_collective(cl);
    }
}

static int unreachable(const void *p) { return (uintptr_t)p >= ((uintptr_t)1 << 56); }

static ncclResult_t enqueue(ncclComm_t comm, struct op o, const char *api) {
    if (!comm) return fail(ncclInvalidArgument, "fake libnccl: NULL communicator");
    if (o.kind != K_SPLIT) {
        if (width(o.dtype) == 0) return fail(ncclInvalidArgument, "fake libnccl: this dtype is not modelled");
        if (unreachable(o.send) || unreachable(o.recv)) {
            snprintf(last_error, sizeof last_error, "fake libnccl: %s: simulated device memory is not "
                     "reachable from the fake (host memory only)", api);
            return ncclInvalidArgument;
        }
        if (o.redop >= ncclNumOps && (o.redop - ncclNumOps >= MAXOPS || !comm->ops[o.redop - ncclNumOps].used))
            return fail(ncclInvalidArgument, "fake libnccl: unknown reduction");
    }
    if (o.kind != K_SPLIT) ENSURE_READY(comm);
    if (comm->nq == MAXQ) return fail(ncclInternalError, "fake libnccl: queue full");
    comm->queue[comm->nq++] = o;
    progress(comm->cl);
    return o.kind != K_SPLIT && group_depth == 0 ? started(comm) : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    INJECT("ncclAllReduce");
    struct op o = {K_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, 0, NULL, NULL};
    return enqueue(comm, o, "ncclAllReduce");
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    INJECT("ncclReduce");
    struct op o = {K_REDUCE, sendbuff, recvbuff, count, datatype, op, root, 0, NULL, NULL};
    return enqueue(comm, o, "ncclReduce");
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    INJECT("ncclBroadcast");
    struct op o = {K_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, 0, NULL, NULL};
    return enqueue(comm, o, "ncclBroadcast");
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    INJECT("ncclAllGather");
    struct op o = {K_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, 0, NULL, NULL};
    return enqueue(comm, o, "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    INJECT("ncclReduceScatter");
    struct op o = {K_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, 0, NULL, NULL};
    return enqueue(comm, o, "ncclReduceScatter");
}

static ncclResult_t p2p(ncclComm_t comm, struct op o, const char *api) {
    if (!comm) return fail(ncclInvalidArgument, "fake libnccl: NULL communicator");
    if (width(o.dtype) == 0) return fail(ncclInvalidArgument, "fake libnccl: this dtype is not modelled");
    if (unreachable(o.send) || unreachable(o.recv)) {
        snprintf(last_error, sizeof last_error, "fake libnccl: %s: simulated device memory is not "
                 "reachable from the fake (host memory only)", api);
        return ncclInvalidArgument;
    }
    ENSURE_READY(comm);
    struct ncclComm *peer = comm->cl->ranks[o.root];
    if (!peer) return fail(ncclInvalidUsage, "fake libnccl: peer not in this process");
    enum kind want = o.kind == K_SEND ? K_RECV : K_SEND;
    for (int i = 0; i < peer->np; i++) {
        struct op *m = &peer->p2p[i];
        if (m->kind == want && m->root == comm->rank) {
            const struct op *s = o.kind == K_SEND ? &o : m;
            const struct op *r = o.kind == K_SEND ? m : &o;
            memcpy(r->recv, s->send, s->count * width(s->dtype));
            memmove(m, m + 1, (size_t)(peer->np - i - 1) * sizeof(struct op));
            peer->np--;
            return group_depth == 0 ? started(comm) : ncclSuccess;
        }
    }
    if (comm->np == MAXQ) return fail(ncclInternalError, "fake libnccl: queue full");
    comm->p2p[comm->np++] = o;
    return group_depth == 0 ? started(comm) : ncclSuccess;
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    (void)stream;
    INJECT("ncclSend");
    struct op o = {K_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, 0, NULL, NULL};
    return p2p(comm, o, "ncclSend");
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    (void)stream;
    INJECT("ncclRecv");
    struct op o = {K_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, 0, NULL, NULL};
    return p2p(comm, o, "ncclRecv");
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
    INJECT("ncclCommSplit");
    *newcomm = NULL;
    struct op o = {K_SPLIT, NULL, NULL, 0, ncclInt8, ncclSum, color, key, newcomm, config};
    ncclResult_t rc = enqueue(comm, o, "ncclCommSplit");
    if (rc != ncclSuccess) return rc;
    return comm->blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
    INJECT("ncclRedOpCreatePreMulSum");
    for (int i = 0; i < MAXOPS; i++) {
        struct redop *r = &comm->ops[i];
        if (r->used) continue;
        r->used = 1;
        r->residence = residence;
        r->dtype = datatype;
        r->scalar = scalar;
        if (residence == ncclScalarHostImmediate)
            r->value = is_float(datatype) ? get_f(scalar, datatype, 0) : (double)get_i(scalar, datatype, 0);
        *op = (ncclRedOp_t)(ncclNumOps + i);
        return ncclSuccess;
    }
    return fail(ncclInternalError, "fake libnccl: too many reductions");
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
    INJECT("ncclRedOpDestroy");
    if (op < ncclNumOps || op - ncclNumOps >= MAXOPS || !comm->ops[op - ncclNumOps].used)
        return fail(ncclInvalidArgument, "fake libnccl: unknown reduction");
    comm->ops[op - ncclNumOps].used = 0;
    fake_nccl_redop_destroys++;
    return ncclSuccess;
}
