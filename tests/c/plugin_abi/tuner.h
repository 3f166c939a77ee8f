/* The tuner plugin family, transcribed for the layout test (tests/plugin_layouts.rs). Facts
 * from NCCL v2.30.7-1 src/include/plugin/tuner/tuner_v<N>.h and
 * src/include/plugin/nccl_tuner.h; each declaration cites the lines it transcribes. */
#ifndef PLUGIN_ABI_TUNER_H
#define PLUGIN_ABI_TUNER_H
#include "common.h"

/* tuner_v5.h:19-23 */
#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

/* tuner_v2.h:13-51 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                              int numPipeOps, int *algorithm, int *protocol, int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v2_t;

/* tuner_v3.h:13-53 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float **collCostTable,
                              int numAlgo, int numProto, int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v3_t;

/* tuner_v4.h:13-54 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float **collCostTable,
                              int numAlgo, int numProto, int regBuff, int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v4_t;

/* tuner_v5.h:12-17 */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

/* tuner_v5.h:25-35 */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

/* tuner_v5.h:38-84 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t *nvlDomainInfo, ncclTunerConstants_v5_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float **collCostTable,
                              int numAlgo, int numProto, int regBuff, int *nChannels);
  ncclResult_t (*finalize)(void *context);
} ncclTuner_v5_t;

/* tuner_v6.h:15-16 */
typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

/* tuner_v6.h:19-81 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v6_t *nvlDomainInfo, ncclTunerConstants_v6_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float **collCostTable,
                              int numAlgo, int numProto, int regBuff, int *nChannels);
  ncclResult_t (*finalize)(void *context);
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t *chunkSize);
} ncclTuner_v6_t;
#endif
