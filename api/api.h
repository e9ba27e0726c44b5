/*
 * api/api.h - internal to the API layer: the public calls that are not op constructors
 * (contexts, evaluation, transfers, streams, events, memory). They dispatch through the
 * backend table and never ask which backend it is. Prefix fca_.
 */
#ifndef FUSEC_API_H
#define FUSEC_API_H

#include "backend.h"
#include "formats.h" /* fcf_trace_eval */

/* fc_eval on a stream (NULL: the context's own); api/eval.c. */
fc_status fca_eval_on(fc_ctx *ctx, fc_array *const *arrays, int n, fc_stream *stream);

/* Destroys the raw modules a context still has (fc_ctx_destroy); api/raw.c. */
void fca_modules_destroy(fc_ctx *ctx);

/* Interop (api/interop.c). Frees the export holds given back since the last call (the
 * context's thread; every evaluation calls it). */
void fca_interop_drain(fc_ctx *ctx);
/* Whether fc_write must refuse a (imported read-only memory). */
bool fca_read_only(const fc_array *a);
/* fc_ctx_destroy, once the arrays are gone: true when the context may be finished now; false
 * when exports are still held outside, the last release then finishing it. */
bool fca_interop_close(fc_ctx *ctx);
/* Frees the backend and the context (the end of fc_ctx_destroy). */
void fca_ctx_finish(fc_ctx *ctx);

#endif /* FUSEC_API_H */
