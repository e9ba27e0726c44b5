/*
 * fusec_dlpack.h - DLPack for fusec: arrays to and from DLManagedTensor and its versioned
 * form (DLPack 1.0's DLManagedTensorVersioned), zero-copy.
 *
 * Apart from fusec.h so that fusec.h needs only libc headers: include this one (after or
 * instead of fusec.h) where DLPack is wanted; it includes <dlpack/dlpack.h>. The rules of
 * fusec.h's "Interop" section hold: strides in elements (DLPack's unit), memory of the
 * context's device, values that are not written behind fusec's back, releases from any
 * thread.
 *
 *     DLManagedTensor *t;
 *     if (fc_dlpack_export(y, NULL, &t) == FC_OK) {   // y's memory, y evaluated first
 *         fc_array *z = fc_dlpack_import(ctx, t, NULL); // and back: the same memory
 *         ...                                           // t->deleter runs when z is gone
 *     }
 *
 * Mapping. Dtypes: bool <-> kDLBool (code 6, bits 8), i8..i64 <-> kDLInt, u8..u64 <-> kDLUInt,
 * f16 f32 f64 <-> kDLFloat, bf16 <-> kDLBfloat, c64 c128 <-> kDLComplex 64 / 128, lanes 1.
 * Every fusec dtype has a DLPack form; DLPack types fusec lacks (lanes != 1, float8 and other
 * codes, other widths) fail to import with FC_ERR_DTYPE naming the type. Devices: the CUDA
 * backend exports kDLCUDA with its device ordinal and imports kDLCUDA of that device and
 * kDLCUDAManaged (managed memory, which the device reads); the host backend exports kDLCPU
 * and imports kDLCPU and kDLCUDAHost (pinned host memory is host memory to the CPU). Any
 * other device fails with FC_ERR_INVALID naming it.
 *
 * The versioned struct: DLPack 1.0 added DLManagedTensorVersioned (a version, flags such as
 * read-only, then the same DLTensor). Debian 12's libdlpack-dev is DLPack 0.6, which lacks
 * it, so where <dlpack/dlpack.h> is older than 1.0 this header declares fc_dlpack_versioned
 * with the same layout (the ABI DLPack 1.x fixes), and with a 1.x header fc_dlpack_versioned
 * IS DLManagedTensorVersioned. Either way the library reads and writes the same bytes.
 */
#ifndef FUSEC_DLPACK_H
#define FUSEC_DLPACK_H

#include <dlpack/dlpack.h>

#include "fusec.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
typedef DLManagedTensorVersioned fc_dlpack_versioned;
#define FC_DLPACK_FLAG_READ_ONLY DLPACK_FLAG_BITMASK_READ_ONLY
#define FC_DLPACK_FLAG_IS_COPIED DLPACK_FLAG_BITMASK_IS_COPIED
#else
/** DLPackVersion of DLPack >= 1.0. */
typedef struct fc_dlpack_version {
    uint32_t major;
    uint32_t minor;
} fc_dlpack_version;
/** DLManagedTensorVersioned of DLPack >= 1.0, field for field (see above). */
typedef struct fc_dlpack_versioned {
    fc_dlpack_version version;
    void *manager_ctx;
    void (*deleter)(struct fc_dlpack_versioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} fc_dlpack_versioned;
#define FC_DLPACK_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define FC_DLPACK_FLAG_IS_COPIED (UINT64_C(1) << 1)
#endif

/** The DLPack ABI fusec writes in versioned exports, and the major version it reads. */
#define FC_DLPACK_MAJOR 1
#define FC_DLPACK_MINOR 0

/** kDLBool (DLPack >= 0.8; 0.6 headers lack the name). */
#define FC_DLPACK_BOOL 6

/** The DLPack dtype of a fusec dtype. @return FC_OK; FC_ERR_NULL; FC_ERR_DTYPE (invalid). */
FC_API fc_status fc_dlpack_dtype(fc_dtype dtype, DLDataType *out);
/** The fusec dtype of a DLPack dtype. @return FC_OK; FC_ERR_NULL; FC_ERR_DTYPE (no fusec
 *  form: lanes != 1, an unknown code, a width fusec lacks). */
FC_API fc_status fc_dtype_from_dlpack(DLDataType type, fc_dtype *out);
/** The device the context's exports name (what __dlpack_device__ answers): {kDLCUDA,
 *  ordinal} on the CUDA backend, {kDLCPU, 0} on the host backend.
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_UNSUPPORTED (a sharded context). */
FC_API fc_status fc_dlpack_device(fc_ctx *ctx, DLDevice *out);

/** Exports a (evaluated first if needed, on `stream`) as a DLManagedTensor of its memory:
 *  data, dtype, shape, strides in elements (always set, compact row-major), byte_offset 0,
 *  the context's device. The consumer calls (*out)->deleter(*out) exactly once when done,
 *  from any thread; until then the memory stays valid and unchanged by fusec, whatever
 *  happens to a or its context (fc_export_release's rules).
 *  @param[in]  stream  the consumer's stream (fc_stream_wrap): ordered after the work that
 *                      writes a. NULL: the call waits for that work.
 *  @return FC_OK; FC_ERR_NULL; fc_array_export's errors (*out NULL). */
FC_API fc_status fc_dlpack_export(fc_array *a, fc_stream *stream, DLManagedTensor **out);
/** fc_dlpack_export in the versioned form: version {FC_DLPACK_MAJOR, FC_DLPACK_MINOR} and
 *  flags (FC_DLPACK_FLAG_READ_ONLY, recommended: a consumer that writes the memory changes
 *  a's value behind fusec's back; FC_DLPACK_FLAG_IS_COPIED is never set: nothing is
 *  copied). Other bits: FC_ERR_INVALID. */
FC_API fc_status fc_dlpack_export_versioned(fc_array *a, fc_stream *stream, uint64_t flags,
                                            fc_dlpack_versioned **out);
/** Imports a DLManagedTensor as fc_from_external does (data + byte_offset, strides NULL:
 *  compact row-major): on success fusec owns t and calls t->deleter(t) (if not NULL)
 *  exactly once, when its last reference to the memory goes. On failure t is untouched and
 *  still the caller's (call its deleter, or try elsewhere).
 *  @param[in] stream  the stream the producer wrote on (NULL: the memory is ready).
 *  @return the array, poisoned with fc_from_external's statuses, FC_ERR_DTYPE naming a
 *          DLPack type fusec lacks, FC_ERR_INVALID naming a device it cannot read. */
FC_API fc_array *fc_dlpack_import(fc_ctx *ctx, DLManagedTensor *t, fc_stream *stream);
/** fc_dlpack_import of the versioned form. A major version other than FC_DLPACK_MAJOR fails
 *  with FC_ERR_UNSUPPORTED (DLPack's rule: the layout may differ; t is not read further).
 *  FC_DLPACK_FLAG_READ_ONLY makes the array read-only (fc_write fails). */
FC_API fc_array *fc_dlpack_import_versioned(fc_ctx *ctx, fc_dlpack_versioned *t,
                                            fc_stream *stream);

#ifdef __cplusplus
}
#endif

#endif /* FUSEC_DLPACK_H */
