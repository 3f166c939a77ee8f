/* The project's test network plugin: a working NCCL net v8 plugin over TCP on loopback, exporting
 * `ncclNetPlugin_v8` (the table of tests/c/plugin_abi/net.h). One device, "lo-tcp"; every comm is
 * one non-blocking TCP socket on 127.0.0.1; messages are framed as an 8-byte [tag, size] header
 * (two host-order int32) followed by the payload.
 *
 * Build: gcc -shared -fPIC -O2 -Wall -Wextra -std=gnu11 -I tests/c/plugin_abi \
 *          tests/c/plugins/net_tcp.c -o libnccl-net-tcp.so [-DMISBEHAVE=<variant>]
 * The variants (tests/c/plugins/README.md) each change one entry point; look for MIS(<variant>).
 *
 * The rules it follows are NCCL's (v2.30.7-1), cited where modelled:
 *   net_v8.h     = src/include/plugin/net/net_v8.h      (the v8 contract's comments)
 *   net_socket.cc = src/transport/net_socket.cc         (NCCL's own socket transport)
 *   socket.cc    = src/misc/socket.cc, linux.cc = src/os/linux.cc (its socket helpers)
 *   nccl.h.in    = src/nccl.h.in, nccl_common.h = src/include/nccl_common.h
 * What a host must do: pass the same handle buffer to every connect call for one connection (the
 * connect stage lives in it, as in net_socket.cc:448-453); call connect/accept again while they
 * return success with a NULL comm (connect: at least twice); keep calling test on both ends (a
 * comm's bytes move only inside test, so a single-threaded host must alternate between sender
 * and receiver); post receives in the order the peer posts the sends, with the same tags. */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- compile-time misbehaving variants: -DMISBEHAVE=<name> ---- */
#define TT_V_none 0
#define TT_V_never_complete 1   /* test never sets *done */
#define TT_V_error_isend 2      /* isend returns ncclSystemError */
#define TT_V_null_listen 3      /* listen: success, *listenComm NULL, handle all zero */
#define TT_V_null_table_entry 4 /* the exported table's test is NULL */
#define TT_V_bad_log_format 5   /* init logs "%q %s %n %" with no arguments */
#define TT_V_hang_connect 6     /* connect sleeps for ever */
#define TT_V_no_devices 7       /* devices reports 0 */
#define TT_V_bad_props 8        /* getProperties succeeds with name NULL */
#define TT_V_corrupt 9          /* a completed receive of 2 bytes or more has its middle byte flipped */
#define TT_V_short_size 10      /* test reports one byte fewer received than arrived (2 bytes or more) */
#define TT_CAT2(a, b) a##b
#define TT_CAT(a, b) TT_CAT2(a, b)
#ifdef MISBEHAVE
#define TT_VARIANT TT_CAT(TT_V_, MISBEHAVE)
#if TT_VARIANT == 0
#error "MISBEHAVE names no known variant (see tests/c/plugins/README.md)"
#endif
#else
#define TT_VARIANT TT_V_none
#endif
#define MIS(name) (TT_VARIANT == TT_V_##name)

/* ---- NCCL constants that common.h leaves out ---- */
/* nccl.h.in:44-51: ncclResult_t values */
#define TT_SYSTEM_ERROR ((ncclResult_t)2)
#define TT_INTERNAL_ERROR ((ncclResult_t)3)
#define TT_INVALID_ARGUMENT ((ncclResult_t)4)
#define TT_INVALID_USAGE ((ncclResult_t)5)
#define TT_REMOTE_ERROR ((ncclResult_t)6)
/* nccl_common.h:27-34 (levels) and :36-56 (subsystems) */
#define TT_LOG_WARN ((ncclDebugLogLevel)2)
#define TT_LOG_INFO ((ncclDebugLogLevel)3)
#define TT_SUBSYS_INIT 0x1UL
#define TT_SUBSYS_NET 0x10UL

#define TT_MAX_REQUESTS 8 /* per comm; a full comm answers isend/irecv/iflush with *request NULL */
#define TT_HDR 8          /* [int32 tag, int32 size] */
#define TT_FILE "net_tcp.c" /* the file name handed to the logger (fixed, whatever the build path) */

/* ---- logging ---- */
static ncclDebugLogger_t tt_logger;
#define TT_LOG(level, flags, ...)                                     \
  do {                                                                \
    ncclDebugLogger_t tt_l_ = tt_logger;                              \
    if (tt_l_) tt_l_((level), (flags), TT_FILE, __LINE__, __VA_ARGS__); \
  } while (0)
/* Every usage error and every variant's own line: "NET/TestTcp : <entry> : <reason>". */
#define TT_FAIL(code, entry, reason)                                                    \
  do {                                                                                  \
    TT_LOG(TT_LOG_WARN, TT_SUBSYS_NET, "NET/TestTcp : %s : %s", (entry), (reason));   \
    return (code);                                                                      \
  } while (0)

/* A failed system call: "NET/TestTcp : <entry> : <call> failed : <strerror>". */
static void tt_warn_errno(const char *entry, const char *call, int err) {
  char buf[128];
  const char *msg = strerror_r(err, buf, sizeof(buf)); /* GNU strerror_r */
  TT_LOG(TT_LOG_WARN, TT_SUBSYS_NET, "NET/TestTcp : %s : %s failed : %s", entry, call, msg);
}

/* ---- objects ---- */
enum { TT_KIND_LISTEN = 0x4c545454, TT_KIND_SEND = 0x53545454, TT_KIND_RECV = 0x52545454 };
#define TT_MR_MAGIC 0x4d525454u

/* What listen writes into NCCL's handle buffer. The connect stage lives in the handle, as NCCL's
 * socket transport keeps it there (net_socket.cc:216-222, 448-456), so connect's handle argument
 * must be the same buffer on every call for one connection. */
struct tt_handle {
  uint64_t magic;             /* per listen; the connector's hello repeats it (net_socket.cc:420) */
  struct sockaddr_in addr;    /* 127.0.0.1:<port> of the listening socket */
  uint32_t state;             /* TT_CONNECT_*: 0 in what listen wrote */
  uint32_t reserved;
  struct tt_comm *pending;    /* the send comm being built between connect calls */
};
/* net_socket.cc:417: the handle fits NCCL's buffer */
_Static_assert(sizeof(struct tt_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle larger than NCCL_NET_HANDLE_MAXSIZE");
enum { TT_CONNECT_START = 0, TT_CONNECT_POLL = 1, TT_CONNECT_HELLO = 2 };

enum { TT_REQ_SEND = 1, TT_REQ_RECV = 2, TT_REQ_FLUSH = 3 };
struct tt_req {
  struct tt_comm *comm;
  int used;        /* slot taken: from the post until test reports done */
  int kind;        /* TT_REQ_* */
  int transferred; /* all bytes moved; test reports done next */
  uint64_t seq;    /* position in the comm's stream (posting order) */
  char *data;
  int size;        /* posted size */
  int tag;         /* posted tag */
  int actual;      /* bytes sent, or received (from the header) */
  size_t off;      /* bytes of header + payload moved */
  unsigned char hdr[TT_HDR];
};

struct tt_comm {
  uint32_t kind; /* TT_KIND_SEND or TT_KIND_RECV */
  int fd;
  uint64_t magic;
  size_t hello_off;
  unsigned char hello[sizeof(uint64_t)];
  ncclResult_t err;     /* sticky: the first transfer error, returned by every later test */
  uint64_t next_post;   /* seq of the next isend/irecv */
  uint64_t next_io;     /* seq of the request whose bytes move now */
  struct tt_req reqs[TT_MAX_REQUESTS];
};

struct tt_listen {
  uint32_t kind; /* TT_KIND_LISTEN */
  int fd;
  uint64_t magic;
  struct tt_comm *pending; /* accepted socket whose hello is not complete (net_socket.cc:488-498) */
};

struct tt_mr {
  uint32_t magic;
  int type;
  char *data;
  size_t size;
};

static int tt_ndev(void) { return MIS(no_devices) ? 0 : 1; }

static uint64_t tt_new_magic(void) {
  static _Atomic uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = ((uint64_t)getpid() << 32) ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^
               (atomic_fetch_add(&counter, 1) + 1) * 0x9e3779b97f4a7c15ULL;
  return x | 1; /* never 0: 0 marks an empty handle */
}

static struct tt_comm *tt_comm_new(uint32_t kind, uint64_t magic) {
  struct tt_comm *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->kind = kind;
  c->fd = -1;
  c->magic = magic;
  memcpy(c->hello, &magic, sizeof(magic));
  for (int i = 0; i < TT_MAX_REQUESTS; i++) c->reqs[i].comm = c;
  return c;
}

static void tt_comm_free(struct tt_comm *c) {
  if (!c) return;
  if (c->fd >= 0) close(c->fd);
  c->kind = 0;
  free(c);
}

static void tt_nodelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* linux.cc:228-229 */
}

/* ---- init / devices / properties ---- */
static ncclResult_t tt_init(ncclDebugLogger_t logFunction) {
  tt_logger = logFunction;
#if MIS(bad_log_format)
  /* A malformed format with no arguments: the host's formatter must cope. */
  TT_LOG(TT_LOG_INFO, TT_SUBSYS_INIT | TT_SUBSYS_NET, "%q %s %n %");
#else
  TT_LOG(TT_LOG_INFO, TT_SUBSYS_INIT | TT_SUBSYS_NET, "NET/TestTcp : %d device(s), loopback %s, %zu-byte handles",
         tt_ndev(), "127.0.0.1", sizeof(struct tt_handle));
#endif
  return ncclSuccess;
}

static ncclResult_t tt_devices(int *ndev) {
  if (!ndev) TT_FAIL(TT_INVALID_ARGUMENT, "devices", "ndev is NULL");
  *ndev = tt_ndev();
  return ncclSuccess;
}

static char tt_dev_name[] = "lo-tcp";
static char tt_dev_pci[] = "/sys/devices/virtual/net/lo";

static ncclResult_t tt_get_properties(int dev, ncclNetProperties_v8_t *props) {
  if (dev < 0 || dev >= tt_ndev()) TT_FAIL(TT_INVALID_ARGUMENT, "getProperties", "no such device");
  if (!props) TT_FAIL(TT_INVALID_ARGUMENT, "getProperties", "props is NULL");
  props->name = MIS(bad_props) ? NULL : tt_dev_name;
  props->pciPath = tt_dev_pci;
  props->guid = 0x1234abcd;
  props->ptrSupport = NCCL_PTR_HOST; /* as net_socket.cc:170: host memory only */
  props->regIsGlobal = 0;
  props->speed = 10000;
  props->port = 1;
  props->latency = 0.5f;
  props->maxComms = 1024;
  props->maxRecvs = 1; /* as net_socket.cc:177; irecv takes n == 1 only */
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
  return ncclSuccess;
}

/* ---- listen / connect / accept ---- */
static ncclResult_t tt_listen(int dev, void *handle, void **listenComm) {
  if (!handle || !listenComm) TT_FAIL(TT_INVALID_ARGUMENT, "listen", "handle or listenComm is NULL");
  *listenComm = NULL;
  /* net_socket.cc:409-413: a bad device is ncclInternalError */
  if (dev < 0 || dev >= tt_ndev()) TT_FAIL(TT_INTERNAL_ERROR, "listen", "no such device");
  /* The whole NCCL_NET_HANDLE_MAXSIZE buffer is the plugin's (net_v8.h:36-39); clear it all, as
   * net_socket.cc:416 clears its handle. */
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
#if MIS(null_listen)
  return ncclSuccess; /* success, yet no listenComm and an empty handle */
#endif
  struct tt_listen *l = calloc(1, sizeof(*l));
  if (!l) TT_FAIL(TT_SYSTEM_ERROR, "listen", "out of memory");
  l->kind = TT_KIND_LISTEN;
  l->magic = tt_new_magic();
  struct sockaddr_in sa;
  socklen_t salen = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  const char *call = "socket";
  /* non-blocking listening socket, so accept4 never waits (linux.cc:188-207 treats EAGAIN as "no peer yet") */
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0) goto fail;
  call = "bind";
  if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) goto fail;
  call = "listen";
  if (listen(l->fd, 64) != 0) goto fail;
  call = "getsockname";
  if (getsockname(l->fd, (struct sockaddr *)&sa, &salen) != 0) goto fail;
  struct tt_handle *h = handle;
  h->magic = l->magic;
  h->addr = sa;
  h->state = TT_CONNECT_START;
  h->pending = NULL;
  *listenComm = l;
  return ncclSuccess;
fail:
  tt_warn_errno("listen", call, errno);
  if (l->fd >= 0) close(l->fd);
  free(l);
  return TT_SYSTEM_ERROR;
}

/* The non-blocking contract (net_v8.h:40-45): return success with *sendComm NULL until the comm is
 * ready. Stages as net_socket.cc:440-486: start a non-blocking connect (always answering NULL on
 * this first call), poll it (linux.cc:314-335), then send the 8-byte magic hello (socket.cc:400-421),
 * then hand out the comm. So at least two calls; on loopback usually exactly two. */
static ncclResult_t tt_connect(int dev, void *handle, void **sendComm, ncclNetDeviceHandle_v8_t **sendDevComm) {
#if MIS(hang_connect)
  TT_LOG(TT_LOG_WARN, TT_SUBSYS_NET, "NET/TestTcp : %s : %s", "connect", "hangs on purpose (MISBEHAVE=hang_connect)");
  for (;;) sleep(1);
#endif
  if (!handle || !sendComm) TT_FAIL(TT_INVALID_ARGUMENT, "connect", "handle or sendComm is NULL");
  *sendComm = NULL; /* net_socket.cc:453 */
  if (sendDevComm) *sendDevComm = NULL; /* no device offload */
  if (dev < 0 || dev >= tt_ndev()) TT_FAIL(TT_INTERNAL_ERROR, "connect", "no such device"); /* net_socket.cc:442-445 */
  struct tt_handle *h = handle;
  if (h->magic == 0 || h->addr.sin_family != AF_INET)
    TT_FAIL(TT_INVALID_ARGUMENT, "connect", "handle holds no listening address");
  struct tt_comm *c = h->pending;
  const char *call = "connect";
  int err = 0;
  switch (h->state) {
  case TT_CONNECT_START:
    c = tt_comm_new(TT_KIND_SEND, h->magic);
    if (!c) TT_FAIL(TT_SYSTEM_ERROR, "connect", "out of memory");
    call = "socket";
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) { err = errno; goto fail; }
    tt_nodelay(c->fd);
    call = "connect";
    if (connect(c->fd, (struct sockaddr *)&h->addr, sizeof(h->addr)) != 0 && errno != EINPROGRESS) {
      err = errno; /* linux.cc:300-303: any other error fails the connect */
      goto fail;
    }
    h->pending = c;
    h->state = TT_CONNECT_POLL;
    return ncclSuccess; /* first call: always NULL */
  case TT_CONNECT_POLL: {
    if (!c) TT_FAIL(TT_INTERNAL_ERROR, "connect", "handle's connect stage is corrupt");
    struct pollfd pfd = {.fd = c->fd, .events = POLLOUT, .revents = 0};
    int n = poll(&pfd, 1, 0); /* never waits (linux.cc:323 waits 1 ms) */
    if (n == 0 || (n < 0 && errno == EINTR)) return ncclSuccess;
    call = "poll";
    if (n < 0) { err = errno; goto fail; }
    socklen_t len = sizeof(err);
    call = "getsockopt(SO_ERROR)";
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) { err = errno; goto fail; }
    call = "connect";
    if (err != 0) goto fail;
    h->state = TT_CONNECT_HELLO;
  }
    __attribute__((fallthrough));
  case TT_CONNECT_HELLO:
    if (!c) TT_FAIL(TT_INTERNAL_ERROR, "connect", "handle's connect stage is corrupt");
    call = "send";
    while (c->hello_off < sizeof(c->hello)) {
      ssize_t b = send(c->fd, c->hello + c->hello_off, sizeof(c->hello) - c->hello_off, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (b < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return ncclSuccess;
        err = errno;
        goto fail;
      }
      c->hello_off += (size_t)b;
    }
    h->state = TT_CONNECT_START;
    h->pending = NULL;
    *sendComm = c;
    return ncclSuccess;
  default:
    TT_FAIL(TT_INTERNAL_ERROR, "connect", "handle's connect stage is corrupt");
  }
fail:
  tt_warn_errno("connect", call, err);
  tt_comm_free(c);
  h->state = TT_CONNECT_START;
  h->pending = NULL;
  return TT_SYSTEM_ERROR;
}

/* The non-blocking contract (net_v8.h:46-51), stages as net_socket.cc:488-539: accept4 on the
 * non-blocking listening socket (nothing yet: NULL), then read the 8-byte hello; a peer that
 * closes before its hello, or sends the wrong magic, is discarded and accepting goes on
 * (socket.cc:345-366, linux.cc:247-253). The comm appears on the first call that finds a hello. */
static ncclResult_t tt_accept(void *listenComm, void **recvComm, ncclNetDeviceHandle_v8_t **recvDevComm) {
  if (!recvComm) TT_FAIL(TT_INVALID_ARGUMENT, "accept", "recvComm is NULL");
  *recvComm = NULL; /* net_socket.cc:496 */
  if (recvDevComm) *recvDevComm = NULL;
  struct tt_listen *l = listenComm;
  if (!l || l->kind != TT_KIND_LISTEN) TT_FAIL(TT_INVALID_ARGUMENT, "accept", "not a listen comm");
  if (!l->pending) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      /* linux.cc:193-206: these mean "try again" (and ECONNABORTED, accept(2)) */
      if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED || e == ENETDOWN || e == EPROTO ||
          e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH)
        return ncclSuccess;
      tt_warn_errno("accept", "accept4", e);
      return TT_SYSTEM_ERROR;
    }
    l->pending = tt_comm_new(TT_KIND_RECV, l->magic);
    if (!l->pending) {
      close(fd);
      TT_FAIL(TT_SYSTEM_ERROR, "accept", "out of memory");
    }
    l->pending->fd = fd;
    tt_nodelay(fd);
  }
  struct tt_comm *c = l->pending;
  while (c->hello_off < sizeof(c->hello)) {
    ssize_t b = recv(c->fd, c->hello + c->hello_off, sizeof(c->hello) - c->hello_off, MSG_DONTWAIT);
    if (b < 0 && errno == EINTR) continue;
    if (b < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (b <= 0) {
      TT_LOG(TT_LOG_INFO, TT_SUBSYS_NET, "NET/TestTcp : %s : %s", "accept", "peer closed before its hello, discarded");
      tt_comm_free(c);
      l->pending = NULL;
      return ncclSuccess;
    }
    c->hello_off += (size_t)b;
  }
  uint64_t magic;
  memcpy(&magic, c->hello, sizeof(magic));
  l->pending = NULL;
  if (magic != l->magic) {
    TT_LOG(TT_LOG_INFO, TT_SUBSYS_NET, "NET/TestTcp : %s : %s", "accept", "peer's hello has the wrong magic, discarded");
    tt_comm_free(c);
    return ncclSuccess;
  }
  *recvComm = c;
  return ncclSuccess;
}

/* ---- memory registration ---- */
static ncclResult_t tt_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  (void)comm;
  if (!mhandle) TT_FAIL(TT_INVALID_ARGUMENT, "regMr", "mhandle is NULL");
  *mhandle = NULL;
  /* net_socket.cc:721-723: anything but host memory is ncclInternalError */
  if (type != NCCL_PTR_HOST) TT_FAIL(TT_INTERNAL_ERROR, "regMr", "only NCCL_PTR_HOST memory");
  struct tt_mr *mr = malloc(sizeof(*mr));
  if (!mr) TT_FAIL(TT_SYSTEM_ERROR, "regMr", "out of memory");
  mr->magic = TT_MR_MAGIC;
  mr->type = type;
  mr->data = data;
  mr->size = size;
  *mhandle = mr;
  return ncclSuccess;
}

static ncclResult_t tt_dereg_mr(void *comm, void *mhandle) {
  (void)comm;
  struct tt_mr *mr = mhandle;
  if (!mr) return ncclSuccess;
  if (mr->magic != TT_MR_MAGIC) TT_FAIL(TT_INVALID_ARGUMENT, "deregMr", "not a handle from regMr");
  mr->magic = 0;
  free(mr);
  return ncclSuccess;
}

/* A non-NULL mhandle must come from regMr and cover [data, data+size). */
static int tt_mr_covers(void *mhandle, const void *data, int size) {
  if (!mhandle) return 1;
  const struct tt_mr *mr = mhandle;
  if (mr->magic != TT_MR_MAGIC) return 0;
  uintptr_t lo = (uintptr_t)mr->data, p = (uintptr_t)data;
  return size == 0 || (p >= lo && p - lo <= mr->size && (size_t)size <= mr->size - (p - lo));
}

/* ---- requests ---- */
/* net_v8.h:58-63: isend/irecv "may return request == NULL if the call cannot be performed";
 * a full comm does that, and the caller posts again later. (net_socket.cc:541-560 answers
 * ncclInternalError when its 32 slots are full instead.) */
static struct tt_req *tt_req_get(struct tt_comm *c, int kind) {
  for (int i = 0; i < TT_MAX_REQUESTS; i++) {
    struct tt_req *r = &c->reqs[i];
    if (r->used) continue;
    memset(r, 0, sizeof(*r));
    r->comm = c;
    r->used = 1;
    r->kind = kind;
    if (kind != TT_REQ_FLUSH) r->seq = c->next_post++;
    return r;
  }
  return NULL;
}

static ncclResult_t tt_isend(void *sendComm, void *data, int size, int tag, void *mhandle, void **request) {
  if (!request) TT_FAIL(TT_INVALID_ARGUMENT, "isend", "request is NULL");
  *request = NULL;
#if MIS(error_isend)
  (void)sendComm, (void)data, (void)size, (void)tag, (void)mhandle;
  TT_FAIL(TT_SYSTEM_ERROR, "isend", "fails on purpose (MISBEHAVE=error_isend)");
#endif
  struct tt_comm *c = sendComm;
  if (!c || c->kind != TT_KIND_SEND) TT_FAIL(TT_INVALID_ARGUMENT, "isend", "not a send comm");
  if (size < 0 || (size > 0 && !data)) TT_FAIL(TT_INVALID_ARGUMENT, "isend", "bad data or size");
  if (!tt_mr_covers(mhandle, data, size)) TT_FAIL(TT_INVALID_ARGUMENT, "isend", "mhandle does not cover the data");
  struct tt_req *r = tt_req_get(c, TT_REQ_SEND);
  if (!r) return ncclSuccess; /* full: *request stays NULL */
  r->data = data;
  r->size = size;
  r->tag = tag;
  r->actual = size;
  int32_t hdr[2] = {tag, size};
  memcpy(r->hdr, hdr, TT_HDR);
  *request = r;
  return ncclSuccess;
}

static ncclResult_t tt_irecv(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles, void **request) {
  if (!request) TT_FAIL(TT_INVALID_ARGUMENT, "irecv", "request is NULL");
  *request = NULL; /* also clears NCCL's NCCL_NET_OPTIONAL_RECV_COMPLETION hint (net_v8.cc:73) */
  struct tt_comm *c = recvComm;
  if (!c || c->kind != TT_KIND_RECV) TT_FAIL(TT_INVALID_ARGUMENT, "irecv", "not a recv comm");
  if (n != 1) TT_FAIL(TT_INTERNAL_ERROR, "irecv", "n != 1 (maxRecvs is 1)"); /* net_socket.cc:743 */
  if (!data || !sizes || !tags) TT_FAIL(TT_INVALID_ARGUMENT, "irecv", "data, sizes or tags is NULL");
  if (sizes[0] < 0 || (sizes[0] > 0 && !data[0])) TT_FAIL(TT_INVALID_ARGUMENT, "irecv", "bad data or size");
  if (!tt_mr_covers(mhandles ? mhandles[0] : NULL, data[0], sizes[0]))
    TT_FAIL(TT_INVALID_ARGUMENT, "irecv", "mhandle does not cover the data");
  struct tt_req *r = tt_req_get(c, TT_REQ_RECV);
  if (!r) return ncclSuccess; /* full: *request stays NULL */
  r->data = data[0];
  r->size = sizes[0];
  r->tag = tags[0];
  *request = r;
  return ncclSuccess;
}

/* Host memory needs no flush; NCCL's socket transport answers ncclInternalError here
 * (net_socket.cc:754-757) because NCCL never flushes host memory. This one hands out a request
 * whose first test is done (sizes untouched). */
static ncclResult_t tt_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request) {
  (void)n, (void)data, (void)sizes, (void)mhandles;
  if (!request) TT_FAIL(TT_INVALID_ARGUMENT, "iflush", "request is NULL");
  *request = NULL;
  struct tt_comm *c = recvComm;
  if (!c || c->kind != TT_KIND_RECV) TT_FAIL(TT_INVALID_ARGUMENT, "iflush", "not a recv comm");
  struct tt_req *r = tt_req_get(c, TT_REQ_FLUSH);
  if (!r) return ncclSuccess;
  r->transferred = 1;
  *request = r;
  return ncclSuccess;
}

/* One socket call's outcome, as linux.cc:337-377: EAGAIN moves nothing, a closed peer (recv 0,
 * EPIPE, ECONNRESET) is ncclRemoteError (socket.cc:52-60), so is any other failure (linux.cc:361-364). */
static ncclResult_t tt_io_failed(ssize_t b, int err, const char *call) {
  if (b == 0 || err == EPIPE || err == ECONNRESET)
    TT_FAIL(TT_REMOTE_ERROR, "test", "connection closed by peer");
  tt_warn_errno("test", call, err);
  return TT_REMOTE_ERROR;
}

/* Moves the head request's bytes until the socket would block; *complete when all moved. */
static ncclResult_t tt_send_some(struct tt_comm *c, struct tt_req *r, int *complete) {
  size_t total = TT_HDR + (size_t)r->size;
  while (r->off < total) {
    struct iovec iov[2];
    int n = 0;
    if (r->off < TT_HDR) {
      iov[n].iov_base = r->hdr + r->off;
      iov[n++].iov_len = TT_HDR - r->off;
      if (r->size > 0) {
        iov[n].iov_base = r->data;
        iov[n++].iov_len = (size_t)r->size;
      }
    } else {
      iov[n].iov_base = r->data + (r->off - TT_HDR);
      iov[n++].iov_len = total - r->off;
    }
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)n;
    ssize_t b = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL); /* linux.cc:349-350 */
    if (b < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return ncclSuccess;
      return tt_io_failed(b, e, "sendmsg");
    }
    r->off += (size_t)b;
  }
  *complete = 1;
  return ncclSuccess;
}

static ncclResult_t tt_recv_some(struct tt_comm *c, struct tt_req *r, int *complete) {
  while (r->off < TT_HDR) {
    ssize_t b = recv(c->fd, r->hdr + r->off, TT_HDR - r->off, MSG_DONTWAIT);
    if (b < 0 && errno == EINTR) continue;
    if (b < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (b <= 0) return tt_io_failed(b, b < 0 ? errno : 0, "recv");
    r->off += (size_t)b;
    if (r->off < TT_HDR) continue;
    int32_t hdr[2];
    memcpy(hdr, r->hdr, TT_HDR);
    /* Tags: NCCL's socket transport never sends them (its header is the size alone,
     * net_socket.cc:618-623, and irecv ignores tags, :740-745); receives match sends in posting
     * order. Here too, and the message's tag must equal the posted one. */
    if (hdr[0] != r->tag) {
      TT_LOG(TT_LOG_WARN, TT_SUBSYS_NET, "NET/TestTcp : tag mismatch : message tag %d, posted tag %d", (int)hdr[0],
             r->tag);
      return TT_INVALID_USAGE;
    }
    /* net_socket.cc:632-642: a message larger than the posted receive is ncclInvalidUsage. */
    if (hdr[1] < 0 || hdr[1] > r->size) {
      TT_LOG(TT_LOG_WARN, TT_SUBSYS_NET, "NET/TestTcp : message truncated : receiving %d bytes instead of %d",
             (int)hdr[1], r->size);
      return TT_INVALID_USAGE;
    }
    r->actual = hdr[1];
  }
  size_t total = TT_HDR + (size_t)r->actual;
  while (r->off < total) {
    ssize_t b = recv(c->fd, r->data + (r->off - TT_HDR), total - r->off, MSG_DONTWAIT);
    if (b < 0 && errno == EINTR) continue;
    if (b < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ncclSuccess;
    if (b <= 0) return tt_io_failed(b, b < 0 ? errno : 0, "recv");
    r->off += (size_t)b;
  }
  *complete = 1;
  return ncclSuccess;
}

/* Moves the comm's stream forward: requests in posting order, each one's bytes after the last. */
static ncclResult_t tt_progress(struct tt_comm *c) {
  while (c->err == ncclSuccess) {
    struct tt_req *head = NULL;
    for (int i = 0; i < TT_MAX_REQUESTS; i++) {
      struct tt_req *r = &c->reqs[i];
      if (r->used && r->kind != TT_REQ_FLUSH && !r->transferred && r->seq == c->next_io) head = r;
    }
    if (!head) break;
    int complete = 0;
    c->err = c->kind == TT_KIND_SEND ? tt_send_some(c, head, &complete) : tt_recv_some(c, head, &complete);
    if (!complete) break;
    head->transferred = 1;
    c->next_io++;
  }
  return c->err;
}

/* net_v8.h:67-69: done when complete, and then sizes[0] = bytes sent/received when sizes != NULL
 * (net_socket.cc:707-710: the receive's size is the sender's). A request is gone after it
 * reported done. */
static ncclResult_t tt_test(void *request, int *done, int *sizes) {
  struct tt_req *r = request;
  if (!r) TT_FAIL(TT_INTERNAL_ERROR, "test", "request is NULL"); /* net_socket.cc:611-614 */
  if (!done) TT_FAIL(TT_INVALID_ARGUMENT, "test", "done is NULL");
  *done = 0;
#if MIS(never_complete)
  (void)sizes;
  return ncclSuccess; /* never done */
#endif
  if (!r->used || !r->comm) TT_FAIL(TT_INTERNAL_ERROR, "test", "request not in use");
  if (r->kind != TT_REQ_FLUSH) {
    ncclResult_t rc = tt_progress(r->comm);
    if (rc != ncclSuccess) return rc;
  }
  if (!r->transferred) return ncclSuccess;
#if MIS(corrupt)
  if (r->kind == TT_REQ_RECV && r->actual >= 2) r->data[r->actual / 2] ^= 0x5a;
#endif
#if MIS(short_size)
  if (r->kind == TT_REQ_RECV && r->actual >= 2) r->actual -= 1;
#endif
  if (sizes && r->kind != TT_REQ_FLUSH) sizes[0] = r->actual;
  *done = 1;
  r->used = 0;
  return ncclSuccess;
}

/* ---- close (net_socket.cc:759-796: a NULL comm is fine) ---- */
static ncclResult_t tt_close_comm(void *comm, uint32_t kind, const char *entry) {
  struct tt_comm *c = comm;
  if (!c) return ncclSuccess;
  if (c->kind != kind) TT_FAIL(TT_INVALID_ARGUMENT, entry, kind == TT_KIND_SEND ? "not a send comm" : "not a recv comm");
  tt_comm_free(c);
  return ncclSuccess;
}
static ncclResult_t tt_close_send(void *sendComm) { return tt_close_comm(sendComm, TT_KIND_SEND, "closeSend"); }
static ncclResult_t tt_close_recv(void *recvComm) { return tt_close_comm(recvComm, TT_KIND_RECV, "closeRecv"); }

static ncclResult_t tt_close_listen(void *listenComm) {
  struct tt_listen *l = listenComm;
  if (!l) return ncclSuccess;
  if (l->kind != TT_KIND_LISTEN) TT_FAIL(TT_INVALID_ARGUMENT, "closeListen", "not a listen comm");
  tt_comm_free(l->pending);
  if (l->fd >= 0) close(l->fd);
  l->kind = 0;
  free(l);
  return ncclSuccess;
}

const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "TestTcp",
    .init = tt_init,
    .devices = tt_devices,
    .getProperties = tt_get_properties,
    .listen = tt_listen,
    .connect = tt_connect,
    .accept = tt_accept,
    .regMr = tt_reg_mr,
    .regMrDmaBuf = NULL, /* no NCCL_PTR_DMABUF, as net_socket.cc:812 */
    .deregMr = tt_dereg_mr,
    .isend = tt_isend,
    .irecv = tt_irecv,
    .iflush = tt_iflush,
    .test = MIS(null_table_entry) ? NULL : tt_test,
    .closeSend = tt_close_send,
    .closeRecv = tt_close_recv,
    .closeListen = tt_close_listen,
    .getDeviceMr = NULL,   /* net_socket.cc:821 */
    .irecvConsumed = NULL, /* net_socket.cc:822 */
};
