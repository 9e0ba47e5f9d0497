/* The reader never reaches ggml's backends; these only satisfy the linker. */
#include <stdlib.h>
#include <stddef.h>
int ggml_backend_buffer_get_usage(void* b) { (void)b; abort(); }
void ggml_backend_tensor_get(const void* t, void* d, size_t o, size_t n) { (void)t; (void)d; (void)o; (void)n; abort(); }
void ggml_backend_tensor_set(void* t, const void* d, size_t o, size_t n) { (void)t; (void)d; (void)o; (void)n; abort(); }
void ggml_backend_tensor_memset(void* t, unsigned char v, size_t o, size_t n) { (void)t; (void)v; (void)o; (void)n; abort(); }
