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

#endif /* FUSEC_API_H */
