/*
 * codegen/prelude.h - the device prelude (codegen/prelude.cuh) as a string (internal).
 *
 * Every generated kernel starts with this text: CUDA C++ implementing each op's NumPy
 * semantics per dtype (fcx_ names; the contract is described at the top of prelude.cuh).
 * The build embeds the file verbatim (cmake/embed_prelude.cmake), so it is part of every
 * kernel's source, and so of its cache key.
 */
#ifndef FUSEC_PRELUDE_H
#define FUSEC_PRELUDE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The prelude's text, NUL-terminated; fcx_prelude_size bytes before the NUL. */
extern const char fcx_prelude_source[];
extern const size_t fcx_prelude_size;
/* codegen/fast_math.cuh: what a kernel of the fast-math tier has in front of the prelude. */
extern const char fcx_fast_math_source[];
extern const size_t fcx_fast_math_size;
/* codegen/sort.cuh, the radix sort kernels' template (codegen/sort.c), embedded the same way. */
extern const char fcx_sort_kernels_source[];
extern const size_t fcx_sort_kernels_size;

/* The optional parts of the prelude (its "#if FCX_PART_<NAME>" blocks; prelude_parts.c):
 * how many, the name of part i (NULL out of range), and those the kernel text[0, len) needs,
 * one bit per part (every part when the prelude could not be read). Thread-safe. */
int fcx_prelude_parts_count(void);
const char *fcx_prelude_part_name(int i);
unsigned fcx_prelude_parts_needed(const char *text, size_t len);
/* What goes in front of the prelude for a kernel that needs the parts `needed`: a line
 * "#define FCX_PART_<NAME> 0" for each other part. Writes at most size bytes with the NUL
 * (snprintf's rules: buf may be NULL with size 0); returns the text's length. */
size_t fcx_prelude_parts_defines(unsigned needed, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
