/*
 * fuzz/fuzz_npy.c - libFuzzer target: the .npy loader (fc_npy_load) on arbitrary bytes.
 *
 * Each input is the whole file, handed over as a file in memory (memfd). Checked:
 *   - no crash, no sanitizer report, no leak, whatever the bytes (formats/npy.c parses a
 *     Python dict literal, versions 1.0-3.0, either byte order, Fortran order);
 *   - a failed load is a poisoned array with one of the documented statuses (PARSE, DTYPE,
 *     SHAPE, IO, NOMEM) and a message;
 *   - a load that succeeds gives an array whose element count fits the bytes the file held,
 *     and that survives a round trip: fc_npy_save then fc_npy_load give the same dtype, shape
 *     and bytes (the save is what np.save writes; bools were made 0/1 by the first load).
 * Deterministic: one host context for the process, every array released per input.
 *
 * Build and run: tools/fuzz.sh [SECONDS] fuzz_npy (docs/ARCHITECTURE.md, "Fuzzing").
 * Without libFuzzer, ctest replays the seeds (fuzz_seeds_fuzz_npy, fuzz/replay.c).
 */
#include <fusec.h>

#include "fuzz_util.h"

#include <stdbool.h>

static fc_ctx *ctx;
static fz_memfile in_file;
static char saved_path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* How far inputs got, printed at exit (tools/fuzz.sh shows the line). */
static unsigned long long inputs, loaded;

static void teardown(void) {
    fc_ctx_destroy(ctx);
    fprintf(stderr, "fuzz_npy: stats: %llu inputs, %llu loaded (and saved, reloaded)\n", inputs,
            loaded);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fc_ctx_options o = {.backend = FC_BACKEND_HOST, .cache_dir = fz_tempdir()};
    if (fc_ctx_create(&ctx, &o) != FC_OK) {
        fprintf(stderr, "fuzz_npy: no host context\n");
        exit(1);
    }
    atexit(teardown);
    fz_memfile_init(&in_file, "fuzz.npy");
    snprintf(saved_path, sizeof saved_path, "%s/saved.npy", fz_tempdir());
    return 0;
}

static void *contents(fc_array *a, size_t *bytes) {
    *bytes = (size_t)fc_array_size(a) * fc_dtype_size(fc_array_dtype(a));
    void *buf = malloc(*bytes ? *bytes : 1);
    if (!buf) fz_fail("out of memory for %zu bytes", *bytes);
    fc_status st = fc_to_host(a, buf, *bytes);
    if (st != FC_OK) fz_fail("fc_to_host of a loaded array: %s", fc_errmsg(ctx));
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_memfile_set(&in_file, data, size);
    inputs++;
    fc_scope *s = fc_scope_open(ctx);
    if (!s) fz_fail("fc_scope_open failed");
    fc_array *a = fc_npy_load(ctx, in_file.path);
    fc_status st = fc_array_status(a);
    if (st != FC_OK) {
        if (st != FC_ERR_PARSE && st != FC_ERR_DTYPE && st != FC_ERR_SHAPE && st != FC_ERR_IO &&
            st != FC_ERR_NOMEM)
            fz_fail("fc_npy_load failed with an undocumented status %d (%s): %s", st,
                    fc_strerror(st), fc_array_errmsg(a));
        if (!fc_array_errmsg(a)[0]) fz_fail("fc_npy_load failed (%s) without a message",
                                            fc_strerror(st));
        fc_scope_close(s);
        return 0;
    }
    loaded++;
    fc_dtype dt = fc_array_dtype(a);
    fc_shape shape = fc_array_shape(a);
    int64_t n = fc_array_size(a);
    if (n < 0 || (uint64_t)n * fc_dtype_size(dt) > size)
        fz_fail("loaded %lld elements of %s from a file of %zu bytes", (long long)n,
                fc_dtype_name(dt), size);
    size_t bytes1, bytes2;
    void *v1 = contents(a, &bytes1);
    const unsigned char *bools = v1;
    for (size_t i = 0; dt == FC_BOOL && i < bytes1; i++)
        if (bools[i] > 1) fz_fail("a loaded bool is %u", bools[i]);

    /* Round trip through a real file. */
    st = fc_npy_save(a, saved_path);
    if (st != FC_OK) fz_fail("fc_npy_save of a loaded array: %s", fc_errmsg(ctx));
    fc_array *b = fc_npy_load(ctx, saved_path);
    if (fc_array_status(b) != FC_OK) fz_fail("reloading a saved array: %s", fc_array_errmsg(b));
    fc_shape shape2 = fc_array_shape(b);
    if (fc_array_dtype(b) != dt || shape2.ndim != shape.ndim)
        fz_fail("save/load changed the dtype or rank");
    for (int d = 0; d < shape.ndim; d++)
        if (shape.dim[d] != shape2.dim[d]) fz_fail("save/load changed extent %d", d);
    void *v2 = contents(b, &bytes2);
    if (bytes1 != bytes2 || memcmp(v1, v2, bytes1) != 0) fz_fail("save/load changed the data");
    free(v1);
    free(v2);
    remove(saved_path);
    fc_scope_close(s);
    return 0;
}
