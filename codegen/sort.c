/*
 * codegen/sort.c - the CUDA source of the radix sort kernels for one element type: defines
 * that say how to read a key (codegen/sort.cuh's contract), then the template (codegen.h's
 * fcx_sort_source).
 */
#include "codegen.h"
#include "prelude.h"

#include <stdio.h>
#include <string.h>

int fcx_sort_items(fc_dtype t) {
    size_t es = fc_dtype_size(t);
    return es <= 4 ? 16 : es == 8 ? 8 : 4; /* a tile's elements take 16 KiB or less */
}

int fcx_sort_pass_items(fc_dtype t, bool idx) {
    /* Larger tiles amortise a tile's fixed work (barriers, scans, the look-back) until the
     * registers run out (64 a thread at 4 blocks a multiprocessor) or the static shared memory
     * (48 KiB: the tile's elements, indices and digits, and the warps' counts). Measured on an
     * H100, sort of 2^26 f32: 20 elements a thread 1.82 ms, 24 1.74 (28 spill registers). */
    size_t es = fc_dtype_size(t);
    if (es <= 4) return idx ? 20 : 24;
    return es == 8 ? 12 : 6;
}

int fcx_sort_words(fc_dtype t) { return fcg_is_complex(t) ? 2 : 1; }

int fcx_sort_word_bits(fc_dtype t) {
    return (int)(8 * fc_dtype_size(t)) / fcx_sort_words(t);
}

fc_status fcx_sort_source(fc_ctx *ctx, fc_dtype t, char **out) {
    *out = NULL;
    int bits = fcx_sort_word_bits(t);
    const char *word = bits == 8 ? "unsigned char" : bits == 16 ? "unsigned short"
                     : bits == 32 ? "unsigned int" : "unsigned long long";
    int kind = fcg_is_inexact(t) ? 2 : fcg_is_sint(t) ? 1 : 0;
    const char *exp = "0", *man = "0";
    switch (t) {
    case FC_F16: exp = "0x7C00u", man = "0x03FFu"; break;
    case FC_BF16: exp = "0x7F80u", man = "0x007Fu"; break;
    case FC_F32: case FC_C64: exp = "0x7F800000u", man = "0x007FFFFFu"; break;
    case FC_F64: case FC_C128: exp = "0x7FF0000000000000ull", man = "0x000FFFFFFFFFFFFFull"; break;
    default: break;
    }
    char head[512];
    int n = snprintf(head, sizeof head,
                     "/* fusec radix sort, %s elements */\n#define FCS_WORD %s\n#define FCS_BITS %d\n"
                     "#define FCS_KIND %d\n#define FCS_EXP %s\n#define FCS_MAN %s\n"
                     "#define FCS_NWORDS %d\n#define FCS_ITEMS %d\n#define FCS_PITEMS %d\n"
                     "#define FCS_PITEMS_IDX %d\n",
                     fc_dtype_name(t), word, bits, kind, exp, man, fcx_sort_words(t),
                     fcx_sort_items(t), fcx_sort_pass_items(t, false),
                     fcx_sort_pass_items(t, true));
    char *s = fcg_malloc(ctx, (size_t)n + fcx_sort_kernels_size + 1);
    if (!s) return fcg_error(ctx, FC_ERR_NOMEM, "sort: out of memory");
    memcpy(s, head, (size_t)n);
    memcpy(s + n, fcx_sort_kernels_source, fcx_sort_kernels_size + 1);
    *out = s;
    return FC_OK;
}
