/* NCCL's plugin ABI, transcribed for the layout test (tests/plugin_layouts.rs): the types every
 * family shares. Facts from NCCL v2.30.7-1 src/include/nccl_common.h and src/include/nccl.h;
 * each declaration cites the lines it transcribes. */
#ifndef PLUGIN_ABI_COMMON_H
#define PLUGIN_ABI_COMMON_H
#include <stddef.h>
#include <stdint.h>

/* nccl.h: ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums (int-sized). */
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclInt8 = 0 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;

/* nccl_common.h:27-34 */
typedef enum { NCCL_LOG_NONE = 0, NCCL_LOG_TRACE = 5 } ncclDebugLogLevel;
/* nccl_common.h:58-59 */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);
/* nccl_common.h:69-70 */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle, int64_t pluginId,
                                               void *extData);
/* nccl_common.h:73-85: ncclFunc_t, an enum */
typedef enum { ncclFuncBroadcast = 0 } ncclFunc_t;
#endif
