/* The GIN plugin family, transcribed for the layout test (tests/plugin_layouts.rs). Facts
 * from NCCL v2.30.7-1 src/include/plugin/gin/gin_v<N>.h, and the network types they use from
 * src/include/plugin/net/net_v12.h and src/include/nccl_device/net_device.h; each declaration
 * cites the lines it transcribes. */
#ifndef PLUGIN_ABI_GIN_H
#define PLUGIN_ABI_GIN_H
#ifndef __cplusplus
#include <stdbool.h>
#endif
#include "common.h"
#include "net.h"

/* net_device.h:34-37: v11 is v7 under another name (a repeated typedef is allowed) */
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;

/* The network family's v12 properties, unless net.h already has them. */
#ifndef NCCL_NET_MAX_DEVS_PER_NIC_V12
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8 /* net_v12.h:11 */
/* net_v12.h:13-16 */
typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;
/* net_v12.h:25-46 */
typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v12_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
} ncclNetProperties_v12_t;
#endif

/* gin_v13.h:12-18 */
typedef struct {
  int nSignals;
  int nCounters;
  int nContexts;
  int queueDepth;
  int trafficClass;
} ncclGinConfig_v13_t;

/* gin_v13.h:20-73 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
  ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(void *ctx, void *handles[], int nranks, int rank, void *listenComm, void **collComm);
  ncclResult_t (*createContext)(void *collComm, ncclGinConfig_v13_t *config, void **ginCtx,
                                ncclNetDeviceHandle_v11_t **devHandle);
  ncclResult_t (*regMrSym)(void *collComm, void *data, size_t size, int type, uint64_t mrFlags, void **mhandle,
                           void **ginHandle);
  ncclResult_t (*regMrSymDmaBuf)(void *collComm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 uint64_t mrFlags, void **mhandle, void **ginHandle);
  ncclResult_t (*deregMrSym)(void *collComm, void *mhandle);
  ncclResult_t (*destroyContext)(void *ginCtx);
  ncclResult_t (*closeColl)(void *collComm);
  ncclResult_t (*closeListen)(void *listenComm);
  ncclResult_t (*iput)(void *ginCtx, int context, uint64_t srcOff, void *srcMhandle, size_t size, uint64_t dstOff,
                       void *dstMhandle, uint32_t rank, void **request);
  ncclResult_t (*iputSignal)(void *ginCtx, int context, uint64_t srcOff, void *srcMhandle, size_t size, uint64_t dstOff,
                             void *dstMhandle, uint32_t rank, uint64_t signalOff, void *signalMhandle,
                             uint64_t signalValue, uint32_t signalOp, void **request);
  ncclResult_t (*iget)(void *ginCtx, int context, uint64_t remoteOff, void *remoteMhandle, size_t size,
                       uint64_t localOff, void *localMhandle, uint32_t rank, void **request);
  ncclResult_t (*iflush)(void *ginCtx, int context, void *mhandle, uint32_t rank, void **request);
  ncclResult_t (*test)(void *collComm, void *request, int *done);
  ncclResult_t (*ginProgress)(void *ginCtx);
  ncclResult_t (*queryLastError)(void *ginCtx, bool *hasError);
  ncclResult_t (*finalize)(void *ctx);
} ncclGin_v13_t;

/* gin_v14.h:12-15 */
typedef struct {
  bool supportsStrongSignals;
  bool supportsVASignals;
} ncclGinProperties_v14_t;

/* gin_v14.h:17-25 */
typedef struct {
  int nSignals;
  int nCounters;
  int nContexts;
  int queueDepth;
  int trafficClass;
  int backendVersion;
  int rankStride;
} ncclGinConfig_v14_t;

/* gin_v14.h:27-67 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getGinProperties)(ncclGinProperties_v14_t *ginProps);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
  ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(void *ctx, void *handles[], int nranks, int rank, void *listenComm, void **collComm);
  ncclResult_t (*createContext)(void *collComm, ncclGinConfig_v14_t *config, void **ginCtx,
                                ncclNetDeviceHandle_v11_t **devHandle);
  ncclResult_t (*regMrSym)(void *collComm, void *data, size_t size, int type, uint64_t mrFlags, void **mhandle,
                           void **ginHandle);
  ncclResult_t (*regMrSymDmaBuf)(void *collComm, void *data, size_t size, int type, uint64_t offset, int fd,
                                 uint64_t mrFlags, void **mhandle, void **ginHandle);
  ncclResult_t (*deregMrSym)(void *collComm, void *mhandle);
  ncclResult_t (*destroyContext)(void *ginCtx);
  ncclResult_t (*closeColl)(void *collComm);
  ncclResult_t (*closeListen)(void *listenComm);
  ncclResult_t (*ginProgress)(void *ginCtx);
  ncclResult_t (*queryLastError)(void *ginCtx, bool *hasError);
  ncclResult_t (*finalize)(void *ctx);
} ncclGin_v14_t;
#endif
