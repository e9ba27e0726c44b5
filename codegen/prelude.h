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

#ifdef __cplusplus
}
#endif
#endif
