/* The environment plugin family, transcribed for the layout test (tests/plugin_layouts.rs).
 * Facts from NCCL v2.30.7-1 src/include/plugin/env/env_v<N>.h; each declaration cites the
 * lines it transcribes. */
#ifndef PLUGIN_ABI_ENV_H
#define PLUGIN_ABI_ENV_H
#include "common.h"

/* env_v1.h:13-34 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char *suffix);
  ncclResult_t (*finalize)(void);
  const char *(*getEnv)(const char *name);
} ncclEnv_v1_t;

/* env_v2.h:13-36 */
typedef struct {
  const char *name;
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char *suffix,
                       ncclDebugLogger_t logFunction);
  ncclResult_t (*finalize)(void);
  const char *(*getEnv)(const char *name);
} ncclEnv_v2_t;
#endif
