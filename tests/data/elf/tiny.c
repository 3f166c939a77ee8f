/* The seed of the ELF reader's fuzz target and its unit tests: a function, a data object
   (one that a relocation points at), a thread-local variable and an initialiser. */
int tiny_counter = 1;
int *tiny_pointer = &tiny_counter;
__thread int tiny_thread_local = 3;
static void tiny_init(void) __attribute__((constructor));
static void tiny_init(void) { tiny_counter++; }
int tiny_function(int *out) { *out = tiny_counter + tiny_thread_local; return 0; }
