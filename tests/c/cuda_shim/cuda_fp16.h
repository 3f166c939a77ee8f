/* Empty: nccl.h includes it, and names no type of it in a C translation unit. */
