/*
 * codegen/tri.c - the CUDA source of the masked triangle copy (codegen.h's fcx_tri_source),
 * the one pass of dense linear algebra's library calls (backend/cuda_lib.c) that keeps one
 * triangle of a stack of row-major matrices and writes zeros over the other: cholesky copies
 * A's lower triangle into its output with zeros above before potrf factors it in place, qr
 * clears the reflections geqrf leaves below R's diagonal.
 *
 * A block takes a row of one matrix at a time (grid-stride over the rows of the whole stack,
 * so any grid covers any batch), its threads consecutive elements of the row: loads and
 * stores coalesce, and a row's zeros are written without reading the source. Elements move as
 * words of their size (4, 8 or 16 bytes: one kernel each), whatever they hold; a thread
 * issues four loads before it stores them (ptxas keeps a load after an earlier store to
 * memory that may alias, so a load-store loop would have one load in flight). Every index is
 * 64-bit. The source has no parameters: one module serves every dtype and size; it needs
 * nothing but itself (not the prelude), so tests/test_codegen_emulated.c compiles it as host
 * C++ too.
 */
#include "codegen.h"

#include <string.h>

static const char tri_source[] =
    "/* fusec masked triangle copy (codegen/tri.c) */\n"
    "#ifndef __CUDACC_RTC__\n#ifndef __device__\n#define __device__\n#endif\n#endif\n"
    "namespace fct {\n"
    "struct alignas(16) w16 { unsigned long long lo, hi; };\n"
    /* count * rows row tasks; row i of matrix b is src + b * ss + i * sp (elements), dst
     * likewise. Kept: columns [lo, hi) (lower: j <= i, upper: j >= i); the rest zero. */
    "template <class W>\n"
    "__device__ static inline void run(const W *__restrict__ src, W *__restrict__ dst,\n"
    "                                  long long rows, long long cols, long long sp,\n"
    "                                  long long ss, long long dp, long long ds,\n"
    "                                  long long tasks, int upper) {\n"
    "    const long long step = (long long)blockDim.x, tid = (long long)threadIdx.x;\n"
    "    const W zero = W();\n"
    "    for (long long t = (long long)blockIdx.x; t < tasks; t += (long long)gridDim.x) {\n"
    "        const long long b = t / rows, i = t - b * rows;\n"
    "        W *d = dst + b * ds + i * dp;\n"
    "        const long long lo = upper ? (i < cols ? i : cols) : 0;\n"
    "        const long long hi = upper ? cols : (i + 1 < cols ? i + 1 : cols);\n"
    "#pragma unroll 4\n"
    "        for (long long j = tid; j < lo; j += step) d[j] = zero;\n"
    "        if (src) {\n"
    "            const W *s = src + b * ss + i * sp;\n"
    "            long long j = lo + tid;\n"
    "            for (; j + 3 * step < hi; j += 4 * step) {\n"
    "                const W v0 = s[j], v1 = s[j + step];\n"
    "                const W v2 = s[j + 2 * step], v3 = s[j + 3 * step];\n"
    "                d[j] = v0;\n"
    "                d[j + step] = v1;\n"
    "                d[j + 2 * step] = v2;\n"
    "                d[j + 3 * step] = v3;\n"
    "            }\n"
    "            for (; j < hi; j += step) d[j] = s[j];\n"
    "        }\n"
    "#pragma unroll 4\n"
    "        for (long long j = hi + tid; j < cols; j += step) d[j] = zero;\n"
    "    }\n"
    "}\n"
    "} /* namespace fct */\n"
    "#define FCT_ENTRY(name, W)                                                            \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256)                                \\\n"
    "    name(const void *src, void *dst, long long rows, long long cols, long long sp,     \\\n"
    "         long long ss, long long dp, long long ds, long long tasks, int upper) {       \\\n"
    "        fct::run<W>((const W *)src, (W *)dst, rows, cols, sp, ss, dp, ds, tasks, upper); \\\n"
    "    }\n"
    "FCT_ENTRY(fct_tri4, unsigned int)\n"
    "FCT_ENTRY(fct_tri8, unsigned long long)\n"
    "FCT_ENTRY(fct_tri16, fct::w16)\n";

const char *const fcx_tri_functions[3] = {"fct_tri4", "fct_tri8", "fct_tri16"};

int fcx_tri_function(size_t es) { return es == 4 ? 0 : es == 8 ? 1 : es == 16 ? 2 : -1; }

fc_status fcx_tri_source(fc_ctx *ctx, char **out) {
    *out = fcg_strdup(ctx, tri_source);
    return *out ? FC_OK : fcg_error(ctx, FC_ERR_NOMEM, "triangle copy: out of memory");
}
