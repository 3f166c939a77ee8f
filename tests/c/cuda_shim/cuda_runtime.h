/* Just enough of the CUDA runtime's header for nccl.h to compile with a plain C compiler (the
 * ABI tests read NCCL's struct layouts; nothing here is called): its two handle types. */
#ifndef NCCL_TRAMPOLINE_CUDA_SHIM_H
#define NCCL_TRAMPOLINE_CUDA_SHIM_H
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#endif
