/* The profiler plugin family, transcribed for the layout test (tests/plugin_layouts.rs). Facts
 * from NCCL v2.30.7-1 src/include/plugin/nccl_profiler.h (nccl_profiler.h below) and
 * src/include/plugin/profiler/profiler_v<N>.h (profiler_vN.h), and src/include/os/linux.h;
 * each declaration cites the lines it transcribes. */
#ifndef PLUGIN_ABI_PROFILER_H
#define PLUGIN_ABI_PROFILER_H
#include <stdbool.h>
#include <sys/types.h>
#include "common.h"

/* os/linux.h:34 */
typedef pid_t ncclPid_t;

/* nccl_profiler.h:11-28: event types, one bit each */
enum {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,
  ncclProfileCollApi = 1 << 9,
  ncclProfileP2pApi = 1 << 10,
  ncclProfileKernelLaunch = 1 << 11,
  ncclProfileCeColl = 1 << 12,
  ncclProfileCeSync = 1 << 13,
  ncclProfileCeBatch = 1 << 14,
};

/* nccl_profiler.h:30-74: states (0..18 v1, 19..22 v4, 23..24 v5, 25..30 v6) */
typedef enum {
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeCollStart = 25,
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;
/* nccl_profiler.h:76-81 */
typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

/* The anonymous members every version shares, as macros: profiler_v1.h:46-57 (proxyOp,
 * proxyStep) and profiler_v3.h:59-62 (netPlugin); unchanged up to profiler_v6.h:71-92. */
#define PROFILER_ABI_PROXY_MEMBERS \
  struct {                    \
    ncclPid_t pid;            \
    uint8_t channelId;        \
    int peer;                 \
    int nSteps;               \
    int chunkSize;            \
    int isSend;               \
  } proxyOp;                  \
  struct {                    \
    int step;                 \
  } proxyStep;
#define PROFILER_ABI_NET_PLUGIN \
  struct {                      \
    int64_t id;                 \
    void *data;                 \
  } netPlugin;

/* profiler_v1.h:11-59 */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char *name;
      uint64_t commHash;
      uint8_t func;
      void *buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    PROFILER_ABI_PROXY_MEMBERS
  };
} ncclProfilerEventDescr_v1_t;

/* profiler_v1.h:61-70; the same union at profiler_v2.h:58-67 and profiler_v3.h:66-75 */
#define PROFILER_ABI_STATE_ARGS_V1 \
  union {                          \
    struct {                       \
      size_t transSize;            \
      int steps;                   \
    } proxyOp;                     \
    struct {                       \
      int appendedProxyOps;        \
    } proxyCtrl;                   \
  }
typedef PROFILER_ABI_STATE_ARGS_V1 ncclProfilerEventStateArgs_v1_t;

/* profiler_v1.h:72-107 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v1_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v1_t eState,
                                   ncclProfilerEventStateArgs_v1_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

/* profiler_v2.h:33-41, the same p2p at profiler_v3.h:32-40 */
#define PROFILER_ABI_P2P_V2 \
  struct {                  \
    const char *name;       \
    uint64_t commHash;      \
    const char *func;       \
    void *buff;             \
    const char *datatype;   \
    size_t count;           \
    int peer;               \
  } p2p;

/* profiler_v2.h:11-56 */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    PROFILER_ABI_P2P_V2
    PROFILER_ABI_PROXY_MEMBERS
  };
} ncclProfilerEventDescr_v2_t;

/* profiler_v2.h:58-67 */
typedef PROFILER_ABI_STATE_ARGS_V1 ncclProfilerEventStateArgs_v2_t;

/* profiler_v2.h:69-104 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v2_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v2_t eState,
                                   ncclProfilerEventStateArgs_v2_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

/* profiler_v3.h:11-64 */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    PROFILER_ABI_P2P_V2
    PROFILER_ABI_PROXY_MEMBERS
    struct {
      uint8_t channelId;
    } kernelCh;
    PROFILER_ABI_NET_PLUGIN
  };
} ncclProfilerEventDescr_v3_t;

/* profiler_v3.h:66-75 */
typedef PROFILER_ABI_STATE_ARGS_V1 ncclProfilerEventStateArgs_v3_t;

/* profiler_v3.h:77-112 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v3_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v3_t eState,
                                   ncclProfilerEventStateArgs_v3_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

/* profiler_v4.h:52-55, the same kernelCh at profiler_v5.h:80-83 and profiler_v6.h:84-87 */
#define PROFILER_ABI_KERNEL_CH_V4 \
  struct {                        \
    uint8_t channelId;            \
    uint64_t pTimer;              \
  } kernelCh;

/* profiler_v4.h:11-62 */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    PROFILER_ABI_PROXY_MEMBERS
    PROFILER_ABI_KERNEL_CH_V4
    PROFILER_ABI_NET_PLUGIN
  };
} ncclProfilerEventDescr_v4_t;

/* profiler_v4.h:64-80; the same union at profiler_v5.h:92-108 */
#define PROFILER_ABI_STATE_ARGS_V4 \
  union {                          \
    struct {                       \
      size_t transSize;            \
    } proxyStep;                   \
    struct {                       \
      int appendedProxyOps;        \
    } proxyCtrl;                   \
    struct {                       \
      void *data;                  \
    } netPlugin;                   \
    struct {                       \
      uint64_t pTimer;             \
    } kernelCh;                    \
  }
typedef PROFILER_ABI_STATE_ARGS_V4 ncclProfilerEventStateArgs_v4_t;

/* profiler_v4.h:82-124 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

/* profiler_v5.h:16-89: the union's members, the same at profiler_v6.h:20-92 */
#define PROFILER_ABI_DESCR_V5_MEMBERS \
  struct {                            \
    bool graphCaptured;               \
    int groupDepth;                   \
  } groupApi;                         \
  struct {                            \
    const char *func;                 \
    size_t count;                     \
    const char *datatype;             \
    int root;                         \
    void *stream;                     \
    bool graphCaptured;               \
  } collApi;                          \
  struct {                            \
    const char *func;                 \
    size_t count;                     \
    const char *datatype;             \
    void *stream;                     \
    bool graphCaptured;               \
  } p2pApi;                           \
  struct {                            \
    void *stream;                     \
  } kernelLaunch;                     \
  struct {                            \
    uint64_t seqNumber;               \
    const char *func;                 \
    const void *sendBuff;             \
    void *recvBuff;                   \
    size_t count;                     \
    int root;                         \
    const char *datatype;             \
    uint8_t nChannels;                \
    uint8_t nWarps;                   \
    const char *algo;                 \
    const char *proto;                \
    void *parentGroup;                \
  } coll;                             \
  struct {                            \
    const char *func;                 \
    void *buff;                       \
    const char *datatype;             \
    size_t count;                     \
    int peer;                         \
    uint8_t nChannels;                \
    void *parentGroup;                \
  } p2p;                              \
  PROFILER_ABI_PROXY_MEMBERS               \
  PROFILER_ABI_KERNEL_CH_V4           \
  PROFILER_ABI_NET_PLUGIN

/* profiler_v5.h:11-90 */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    PROFILER_ABI_DESCR_V5_MEMBERS
  };
} ncclProfilerEventDescr_v5_t;

/* profiler_v5.h:92-108 */
typedef PROFILER_ABI_STATE_ARGS_V4 ncclProfilerEventStateArgs_v5_t;

/* profiler_v5.h:110-152 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* profiler_v6.h:14-122 */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    PROFILER_ABI_DESCR_V5_MEMBERS
    struct {
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      const char *syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void *stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

/* profiler_v6.h:126 */
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

/* profiler_v6.h:128-147 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;
#endif
