/*
 * ncclCollConfig_t and ncclWaitSignalDesc_t as the C compiler lays them out, for the tests that
 * check the crate's offsets (src/nccl/types/coll_config.rs):
 *  - with -DREAL_NCCL_H='"/path/nccl.h"' and -I tests/c/cuda_shim: NCCL's own header (the shim
 *    gives it cudaStream_t and cudaEvent_t; CUDART_VERSION stays undefined, so no bf16/fp8
 *    header is included): tests/real_nccl.rs, with the wheel's nccl.h;
 *  - else the definitions below, copied from the nvidia-nccl-cu12 wheels' nccl.h
 *    (2.31.2: `ncclCollConfig_v23100`; 2.32.3: `ncclCollConfig_v23200`), selected with
 *    -DCOLL_CONFIG_VERSION=23102|23203 (members and types as there, some comments shortened):
 *    tests/device_api.rs, for both layouts on every target.
 * coll_config_layout(out, cap) writes the offsets of size, magic, version, ext, minCTAs,
 * maxCTAs, nvlsCTAs, cgaClusterSize, algSelection, forceAlgSelection, CTAPolicy,
 * userProfilerTag[, launchCompletionEvent], then sizeof, and returns how many it wrote.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef REAL_NCCL_H
#include REAL_NCCL_H
#define LAYOUT_VERSION NCCL_VERSION_CODE
#else
#define LAYOUT_VERSION COLL_CONFIG_VERSION
typedef struct CUevent_st *cudaEvent_t;
typedef struct {
  int opCnt;    // Number of signal operations to wait for
  int peer;     // Target peer to wait for signals from
  int sigIdx;   // Signal index identifier
  int ctx;      // Context identifier
} ncclWaitSignalDesc_t;
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;       /* next option in the list, or NULL to terminate */
  struct {
    int vendorId;                   /* vendor choose their own unique value as vendorId */
    int optionId;                   /* vendor-defined id distinguishing options within a vendor */
  } key;
  union {
    int i;                          /* integer value */
    const char* s;                  /* C-style string value */
    void* raw;                      /* opaque pointer-sized value */
  } val;
} ncclConfigExt_t;
#if COLL_CONFIG_VERSION == 23102
typedef struct ncclCollConfig_v23100 {
  /* attributes that users should never touch. */
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* non-circular linked list of vendor-specific extension options, or NULL. */
  ncclConfigExt_t* ext;
  /* resource tuning (NCCL_CONFIG_UNDEF_INT == unset; NCCL picks). */
  int minCTAs;          /* lower bound on channels/CTAs */
  int maxCTAs;          /* upper bound on channels/CTAs, must be <= comm->maxCTAs */
  int nvlsCTAs;         /* NVLS-pool-specific channel cap */
  int cgaClusterSize;
  /* algorithm selection: filter which algorithm(s) this call may use. */
  const char* algSelection;   /* selection string; NULL/UNDEF/"" == automatic */
  int forceAlgSelection;      /* default 1 (true): unsatisfiable selection is an error */
  int CTAPolicy;              /* NCCL_CTA_POLICY_* bitmask; UNDEF == inherit comm-level CTAPolicy */
  uint64_t userProfilerTag;
} ncclCollConfig_t;
#elif COLL_CONFIG_VERSION == 23203
typedef struct ncclCollConfig_v23200 {
  /* attributes that users should never touch. */
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* non-circular linked list of vendor-specific extension options, or NULL. */
  ncclConfigExt_t* ext;
  /* resource tuning (NCCL_CONFIG_UNDEF_INT == unset; NCCL picks). */
  int minCTAs;          /* lower bound on channels/CTAs */
  int maxCTAs;          /* upper bound on channels/CTAs, must be <= comm->maxCTAs */
  int nvlsCTAs;         /* NVLS-pool-specific channel cap */
  int cgaClusterSize;
  /* algorithm selection: filter which algorithm(s) this call may use. */
  const char* algSelection;   /* selection string; NULL/UNDEF/"" == automatic */
  int forceAlgSelection;      /* default 1 (true): unsatisfiable selection is an error */
  int CTAPolicy;              /* NCCL_CTA_POLICY_* bitmask; UNDEF == inherit comm-level CTAPolicy */
  uint64_t userProfilerTag;
  cudaEvent_t launchCompletionEvent;
} ncclCollConfig_t;
#else
#error "COLL_CONFIG_VERSION must be 23102 or 23203"
#endif
#endif

#define AT(m) offsetof(ncclCollConfig_t, m)

size_t coll_config_layout(size_t *out, size_t cap) {
    size_t v[] = {
        AT(size), AT(magic), AT(version), AT(ext), AT(minCTAs), AT(maxCTAs), AT(nvlsCTAs), AT(cgaClusterSize),
        AT(algSelection), AT(forceAlgSelection), AT(CTAPolicy), AT(userProfilerTag),
#if LAYOUT_VERSION >= 23203
        AT(launchCompletionEvent),
#endif
        sizeof(ncclCollConfig_t),
    };
    size_t n = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n && i < cap; i++) out[i] = v[i];
    return n;
}

size_t wait_signal_desc_size(void) { return sizeof(ncclWaitSignalDesc_t); }
int coll_config_layout_version(void) { return LAYOUT_VERSION; }
