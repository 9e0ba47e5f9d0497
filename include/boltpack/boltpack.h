/*
 * bolt-pack C API: a stable C99 interface for reading models: .bolt files
 * (the C++ boltpack::Reader), GGUF files (a split set by its first shard)
 * and safetensors files (a sharded set by its index .json), all behind one
 * bp_reader handle.
 *
 * Conventions
 * -----------
 * - Every function that can fail returns a bp_status. BP_OK is 0; the other
 *   numbers are pinned and will never change meaning.
 * - A NULL pointer where an object or output pointer is required gives
 *   BP_ERR_INVALID_ARGUMENT. Indices past the end give BP_ERR_OUT_OF_RANGE.
 * - On failure, output arguments are left unchanged unless stated otherwise.
 * - No C++ exception, abort or assertion crosses this interface: anything
 *   unexpected inside the library becomes BP_ERR_INTERNAL (or
 *   BP_ERR_RESOURCE for an allocation failure).
 * - Error messages: every failing call stores a message on the calling thread
 *   (bp_last_error_message) and, when it was given a reader, on that reader
 *   too (bp_last_error). Messages name the file and, where one is involved,
 *   the tensor, stream or metadata key, exactly as the C++ status does.
 *   Successful calls do not clear them: read them only right after a call
 *   returned an error.
 *
 * Ownership and lifetime
 * ----------------------
 * - bp_open creates a reader; bp_close destroys it. Every pointer the API
 *   hands out for a reader (tensor names, codec ids, stream roles, metadata
 *   keys and strings, zero-copy stream data) stays valid, unchanged, until
 *   bp_close on that reader, and must not be freed by the caller.
 * - Strings returned by bp_last_error / bp_last_error_message belong to the
 *   library and stay valid until the calling thread's next call into the
 *   library.
 * - bp_version_string returns a static string.
 *
 * Thread safety
 * -------------
 * A reader is immutable once open: any number of threads may call any
 * function on the same reader at the same time (listing, metadata, stream
 * data, bp_decode, bp_verify), except bp_close, which must not race with any
 * other use of that reader. Different readers are independent.
 *
 * Each declaration below carries its own "Threads:" and "Ownership:" line:
 * "Threads: any" means any number of threads may make that call at once,
 * on the same objects, together with any other "any" call; "exclusive"
 * means no other call on that object may overlap it or follow it. Under
 * "Ownership", "belongs to r" means the library frees it at bp_close.
 */
#ifndef BOLTPACK_BOLTPACK_H_
#define BOLTPACK_BOLTPACK_H_

#include <stddef.h>
#include <stdint.h>

#include "boltpack/version.h" /* BOLTPACK_VERSION_* of the headers in use */

#if defined(__GNUC__)
#define BP_API __attribute__((visibility("default")))
#else
#define BP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes (numbers are part of the ABI) ------------------------
 * Numbering rule: a number, once released, keeps its meaning forever and is
 * never reused. 1..8 are the first release's codes. Later codes come in
 * blocks of 100 by kind, leaving room to grow each kind without renumbering:
 *   100..199  damaged input, refinements of BP_ERR_CORRUPT
 *   200..299  refinements of argument errors   (none yet)
 *   300..399  refinements of unsupported input (none yet)
 * A caller that knows only 1..8 can map a refinement back to its kind with
 * bp_status_kind. Callers must treat an unknown non-zero code as an error. */

typedef enum bp_status {
  BP_OK = 0,
  BP_ERR_INVALID_ARGUMENT = 1, /* bad argument, NULL pointer, type mismatch */
  BP_ERR_NOT_FOUND = 2,        /* no such file, tensor or key */
  BP_ERR_CORRUPT = 3,          /* the file is malformed (bounds, structure, ...) */
  BP_ERR_UNSUPPORTED = 4,      /* unknown codec / feature; copyable, not decodable */
  BP_ERR_RESOURCE = 5,         /* a limit was exceeded or memory ran out */
  BP_ERR_IO = 6,               /* the operating system refused (permissions, ...) */
  BP_ERR_INTERNAL = 7,         /* a bug in bolt-pack */
  BP_ERR_OUT_OF_RANGE = 8,     /* an index past the end */
  /* Well-formed bytes differ from the XXH3-64 the file records for them
   * (header, footer, manifest, a stream, a chunk, a chunk's line prefix):
   * they changed after they were written (disk, copy, download). Fetching
   * the file again may help; a BP_ERR_CORRUPT file stays broken. Kind:
   * BP_ERR_CORRUPT. */
  BP_ERR_CHECKSUM = 100,
  /* Never returned. They make every int a valid bp_status (and pin the
   * enum's size), so any number can be passed to bp_status_name. */
  BP_STATUS_RESERVED_MIN_ = -1,
  BP_STATUS_RESERVED_MAX_ = 0x7FFFFFFF
} bp_status;

/* Decode targets (numbers are part of the ABI). */
typedef enum bp_output {
  BP_OUT_F32 = 0,
  BP_OUT_BF16 = 1,
  BP_OUT_F16 = 2,
  BP_OUT_NATIVE = 3, /* the codec's stored element form (raw codecs: the dtype) */
  /* Not outputs. They make every int a valid bp_output, so a bad number gets
   * BP_ERR_INVALID_ARGUMENT rather than undefined behaviour. */
  BP_OUT_RESERVED_MIN_ = -1,
  BP_OUT_RESERVED_MAX_ = 0x7FFFFFFF
} bp_output;

/* Tensor dtypes: the numbers of the DType enum in spec/boltpack.proto. */
enum {
  BP_DTYPE_UNSPECIFIED = 0,
  BP_DTYPE_F32 = 1,
  BP_DTYPE_F16 = 2,
  BP_DTYPE_BF16 = 3,
  BP_DTYPE_F64 = 4,
  BP_DTYPE_I8 = 5,
  BP_DTYPE_I16 = 6,
  BP_DTYPE_I32 = 7,
  BP_DTYPE_I64 = 8,
  BP_DTYPE_U8 = 9,
  BP_DTYPE_U16 = 10,
  BP_DTYPE_U32 = 11,
  BP_DTYPE_U64 = 12,
  BP_DTYPE_BOOL = 13,
  BP_DTYPE_F8_E4M3 = 14,
  BP_DTYPE_F8_E5M2 = 15,
  BP_DTYPE_F8_E8M0 = 16,
  BP_DTYPE_C64 = 17
};

/* Metadata value types: GGUF's numbering, as boltpack::ValueType. */
enum {
  BP_VALUE_UNSPECIFIED = 0,
  BP_VALUE_UINT8 = 1,
  BP_VALUE_INT8 = 2,
  BP_VALUE_UINT16 = 3,
  BP_VALUE_INT16 = 4,
  BP_VALUE_UINT32 = 5,
  BP_VALUE_INT32 = 6,
  BP_VALUE_UINT64 = 7,
  BP_VALUE_INT64 = 8,
  BP_VALUE_FLOAT32 = 9,
  BP_VALUE_FLOAT64 = 10,
  BP_VALUE_BOOL = 11,
  BP_VALUE_STRING = 12,
  BP_VALUE_ARRAY = 13
};

/* Stream compression (numbers are part of the ABI). */
enum { BP_COMPRESSION_NONE = 0, BP_COMPRESSION_ZSTD = 1 };

/* The format's limit on tensor rank. */
#define BP_MAX_DIMS 8

/* An open model: a .bolt, GGUF or safetensors file. Opaque. */
typedef struct bp_reader bp_reader;

/* The two description structs share their names with the functions that fill
 * them (like POSIX `struct stat` and stat()), so they have no typedef: write
 * `struct bp_tensor_info info; bp_tensor_info(r, i, &info);`. Their layout
 * is part of the ABI: later versions add functions, never fields. */
struct bp_tensor_info {
  const char* name;        /* NUL-terminated; valid until bp_close */
  uint32_t ndim;           /* 0..BP_MAX_DIMS */
  uint64_t shape[BP_MAX_DIMS]; /* outermost first; entries >= ndim are 0 */
  int dtype;               /* BP_DTYPE_* */
  const char* codec;       /* codec id, e.g. "f32"; valid until bp_close */
  uint64_t stored_bytes;   /* sum of the streams' stored (on-disk) lengths */
  uint32_t stream_count;
};

struct bp_stream_info {
  const char* role;        /* the codec's name for the stream; valid until bp_close */
  int compression;         /* BP_COMPRESSION_* */
  uint64_t stored_length;  /* bytes in the file */
  uint64_t raw_length;     /* bytes after decompression */
};

/* ---- errors and versions --------------------------------------------- */

/* Message of the most recent failed call on the calling thread, "" if none.
 * This is how to learn why bp_open failed. Never NULL. */
/* Threads: any (the message is per thread). Ownership: library-owned, valid
 * until this thread's next call into the library. */
BP_API const char* bp_last_error_message(void);

/* Message of the most recent failed call made with `r` (from any thread),
 * "" if none; "invalid reader (NULL)" for r == NULL. The returned string is
 * a copy owned by the calling thread, valid until its next call into the
 * library. Never NULL. */
/* Threads: any, also while other threads fail on r. Ownership: a copy owned
 * by the calling thread, valid until its next call into the library. */
BP_API const char* bp_last_error(const bp_reader* r);

/* Short name of a status code ("OK", "INVALID_ARGUMENT", ...); static. */
/* Threads: any. Ownership: a static string. */
BP_API const char* bp_status_name(bp_status status);

/* Safetensors spelling of a BP_DTYPE_* ("F32", "BF16", "F8_E4M3", ...);
 * static. "?" for a number that is not a dtype. */
/* Threads: any. Ownership: a static string. */
BP_API const char* bp_dtype_name(int dtype);

/* Version of the library actually linked, "MAJOR.MINOR.PATCH"; static.
 * (BOLTPACK_VERSION_STRING is the version of the headers compiled against.) */
/* Threads: any. Ownership: a static string. */
BP_API const char* bp_version_string(void);

/* Version of the library actually linked as one comparable number,
 * MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100): compare it with
 * BOLTPACK_VERSION, the headers' number, to refuse a library older than the
 * headers at run time. */
/* Threads: any (no state). */
BP_API uint32_t bp_version_number(void);

/* The first-release code (BP_OK, 1..8) that `status` refines, by the
 * numbering rule above: itself for 0..8, BP_ERR_CORRUPT for 100..199 (such
 * as BP_ERR_CHECKSUM), BP_ERR_INVALID_ARGUMENT for 200..299,
 * BP_ERR_UNSUPPORTED for 300..399, BP_ERR_INTERNAL for any other number. */
/* Threads: any (no state). */
BP_API bp_status bp_status_kind(bp_status status);

/* ---- open / close ----------------------------------------------------- */

/* Opens and validates `path`. By its extension (any case):
 *   .gguf          a GGUF file; the first shard of a split set
 *                  (NAME-00001-of-0000N.gguf) opens the whole set
 *   .safetensors   a safetensors file
 *   .json          a sharded safetensors index (model.safetensors.index.json)
 *   anything else  a .bolt file (header, footer, manifest, every stream's
 *                  bounds checked here)
 * Every format answers the same tensor, metadata and decode functions. A
 * GGUF tensor decodes with the codec of its block type (q8_0, mxfp4, f16,
 * ...; BP_ERR_UNSUPPORTED for a type this library stores but does not
 * decode), its one stream being its GGUF bytes; a safetensors tensor is one
 * stream of its element bytes ("f32"/"f16"/"bf16", or "raw" for other
 * dtypes). GGUF metadata keeps GGUF's keys and types; safetensors'
 * __metadata__ entries are strings. GGUF and safetensors record no
 * checksums and no views: bp_verify, bp_format_version and bp_view_bytes
 * give BP_ERR_UNSUPPORTED, bp_view_count 1 ("full"), bp_budget_count 0.
 * On success *out is a new reader to release with bp_close; on failure *out
 * is set to NULL and bp_last_error_message() says why (naming the file). A
 * missing file gives BP_ERR_NOT_FOUND. */
/* Threads: any (each call makes its own reader). Ownership: the caller owns
 * *out and releases it with bp_close; path is copied, not kept. */
BP_API bp_status bp_open(const char* path, bp_reader** out);

/* Like bp_open, but bp_decode on this reader decodes as view `view` sees
 * each tensor (spec/container.md "Views"): "full" (every original bit; also
 * for NULL or "") or a view the file declares, such as "draft". Streams the
 * view does not read are never touched. A view the file does not declare
 * gives BP_ERR_NOT_FOUND (any view but "full" of a GGUF or safetensors
 * file). */
/* Threads: any. Ownership: as bp_open; view is copied, not kept. */
BP_API bp_status bp_open_view(const char* path, const char* view, bp_reader** out);

/* Flags of bp_open_flags. */
/* Decode without checking checksums (.bolt files; the others have none).
 * By default every decode (bp_decode, bp_decode_range, bp_budget_decode)
 * checks the stored bytes it reads against their XXH3-64
 * the first time the reader reads them, and fails with BP_ERR_CHECKSUM,
 * naming file, tensor, stream and chunk, on a mismatch. Set this only for a
 * file verified before (bp_verify, `bolt-pack verify`) that cannot have
 * changed since. */
#define BP_OPEN_NO_VERIFY 0x1u

/* bp_open_view with flags (BP_OPEN_*, or 0: the defaults of bp_open). An
 * unknown flag bit gives BP_ERR_INVALID_ARGUMENT, so that a flag of a later
 * version is never silently ignored. */
/* Threads: any. Ownership: as bp_open. */
BP_API bp_status bp_open_flags(const char* path, const char* view, uint32_t flags, bp_reader** out);

/* Number of views the file can be read in (at least 1: "full"); 0 for NULL. */
/* Threads: any, on a shared reader. */
BP_API size_t bp_view_count(const bp_reader* r);
/* Name of view i: 0 is "full", then the declared views in manifest order.
 * Valid until bp_close; NULL if r is NULL or i is out of range. */
/* Threads: any. Ownership: the name belongs to r, valid until bp_close. */
BP_API const char* bp_view_name(const bp_reader* r, size_t i);
/* Bytes a reader of view `view` touches: the sum of the stored lengths of
 * the streams it reads. NULL means the reader's own view (bp_open_view). */
/* Threads: any. Ownership: view is read during the call only. */
BP_API bp_status bp_view_bytes(const bp_reader* r, const char* view, uint64_t* bytes);

/* Closes a reader and unmaps its file; every pointer obtained from it becomes
 * invalid. NULL is a no-op. Must not race with other calls on `r`. */
/* Threads: exclusive: no other call with r (or with a budget opened from it)
 * may run at the same time or come after. Ownership: takes r back; NULL is a
 * no-op. */
BP_API void bp_close(bp_reader* r);

/* The container format version of the open file. */
/* Threads: any. */
BP_API bp_status bp_format_version(const bp_reader* r, uint32_t* major, uint32_t* minor);

/* Checks everything bp_open does not: every stream's and chunk's XXH3-64
 * checksum (and a chunk's line-prefix checksums, format 1.2), zero
 * padding, sibling shards. The error names the first damaged place:
 * BP_ERR_CHECKSUM for bytes that differ from their checksum, BP_ERR_CORRUPT
 * for anything else. Reads the whole file. */
/* Threads: any, also beside decodes of the same reader (checks already made
 * are shared, not repeated). */
BP_API bp_status bp_verify(const bp_reader* r);

/* ---- tensors ---------------------------------------------------------- */

/* Number of tensors; 0 for NULL. */
/* Threads: any. */
BP_API size_t bp_tensor_count(const bp_reader* r);

/* Index of the tensor named `name` (exact bytes) in *index;
 * BP_ERR_NOT_FOUND if there is none. */
/* Threads: any. Ownership: name is read during the call only. */
BP_API bp_status bp_find_tensor(const bp_reader* r, const char* name, size_t* index);

/* Describes tensor `index`. The strings stay valid until bp_close. */
/* Threads: any. Ownership: the strings in *out belong to r, valid until
 * bp_close. */
BP_API bp_status bp_tensor_info(const bp_reader* r, size_t index, struct bp_tensor_info* out);

/* Describes stream `stream` of tensor `tensor`. */
/* Threads: any. Ownership: role belongs to r, valid until bp_close. */
BP_API bp_status bp_stream_info(const bp_reader* r, size_t tensor, size_t stream,
                                struct bp_stream_info* out);

/* Zero-copy: *data points at the stream's stored bytes inside the file's
 * mapping (*size bytes; *data may be NULL when *size is 0). For a compressed
 * stream these are the compressed bytes, so this is meaningful as tensor data
 * only when the compression is BP_COMPRESSION_NONE. Read-only; valid until
 * bp_close. NOT checked against the checksums: the caller verifies
 * (bp_verify) or decodes (bp_decode checks). */
/* Threads: any. Ownership: *data points into r's read-only mapping, valid
 * until bp_close: never write or free it. */
BP_API bp_status bp_stream_data(const bp_reader* r, size_t tensor, size_t stream,
                                const void** data, uint64_t* size);

/* bp_stream_data, checked: the stream's stored bytes after checking them
 * against their checksum (.bolt files; not when opened with
 * BP_OPEN_NO_VERIFY), for a caller that hands stored blocks to its own
 * kernels (a GPU upload). Errors: BP_ERR_UNSUPPORTED for a compressed stream
 * (decode the tensor), BP_ERR_CHECKSUM (*data is then NULL). Each call
 * checks the bytes again. */
/* Threads: any. Ownership: *data points into r's read-only mapping, valid
 * until bp_close: never write or free it. */
BP_API bp_status bp_stream_data_checked(const bp_reader* r, size_t tensor, size_t stream,
                                        const void** data, uint64_t* size);

/* Where a decoder may start inside a tensor's entropy-coded stream, for one
 * that splits a lane among many threads (boltpack/cuda.h builds its GPU
 * index from these): the `exponents` stream (stream 1) of a bf16-huffman or
 * bf16-unary tensor. One point at the first symbol of every lane and after
 * every `every` symbols of a lane, in order, then a last one of {8 x the
 * stream's bytes, the element count}; symbol i is the exponent of element i
 * (spec/codecs-bf16-exp.md §5: the lanes tile the elements in order), and
 * its code word starts at bit `bit` of the stream, most significant bit
 * first. Checks the stream's checksum (unless opened with
 * BP_OPEN_NO_VERIFY) and decodes every lane on `threads` threads (<= 0: all
 * hardware threads) to find them, so it fails as bp_decode does
 * (BP_ERR_CORRUPT) on bytes the decoder refuses. Errors: BP_ERR_UNSUPPORTED
 * for another codec or a compressed stream, BP_ERR_INVALID_ARGUMENT for
 * every = 0. */
/* Threads: any. Ownership: *points is the caller's (malloc'd, *count
 * entries): free it with bp_free_sync_points. */
struct bp_sync_point {
  uint64_t bit;
  uint64_t symbol;
};
BP_API bp_status bp_sync_points(const bp_reader* r, size_t tensor, size_t stream, uint32_t every, int threads,
                                struct bp_sync_point** points, size_t* count);
BP_API void bp_free_sync_points(struct bp_sync_point* points);

/* Zero-copy and checked: when tensor `tensor` is stored as its elements as
 * they are (one uncompressed stream of an element codec such as f32, f16,
 * bf16 or raw; every float or integer tensor of a safetensors file and the
 * F32/F16/BF16 tensors of a GGUF file), points *data at those elements in
 * the file's mapping (row-major, outermost first, the tensor's dtype; *size
 * bytes, *data NULL when 0) after checking them against their checksum
 * (.bolt files; not when opened with BP_OPEN_NO_VERIFY). The caller checks
 * the alignment it needs (streams of a .bolt file start at its alignment,
 * 4096 by default). Errors: BP_ERR_UNSUPPORTED for a tensor stored any other
 * way (decode it), BP_ERR_CHECKSUM for bytes that differ from their
 * checksum (*data is then NULL). Each call checks the bytes again. */
/* Threads: any. Ownership: *data points into r's read-only mapping, valid
 * until bp_close: never write or free it. */
BP_API bp_status bp_tensor_elements(const bp_reader* r, size_t tensor, const void** data, uint64_t* size);

/* Where stream `stream` of tensor `tensor` lies: *path, the file that holds
 * it (the .bolt file, or its shard, GGUF split file or safetensors shard),
 * and *offset, where its stored bytes start in that file. For a caller that
 * maps the file itself, e.g. copy-on-write for a framework that has no
 * read-only tensors. Those bytes are not checked here (bp_tensor_elements
 * checks them). */
/* Threads: any. Ownership: *path belongs to r, valid until bp_close. */
BP_API bp_status bp_stream_location(const bp_reader* r, size_t tensor, size_t stream, const char** path,
                                    uint64_t* offset);

/* The codec parameters of tensor `tensor` as a JSON object (keys in stored
 * order; numbers as JSON numbers, non-finite floats as the strings "nan",
 * "inf" and "-inf"; arrays as JSON arrays), e.g. {"tensor_scale":0.0021}
 * for nvfp4, {} for a codec without parameters: what a kernel that takes
 * bp_stream_data's blocks directly needs beside them. Written NUL-terminated
 * into buffer (capacity bytes); *length gets the JSON's length without the
 * NUL, also when the buffer is too small (BP_ERR_OUT_OF_RANGE), so a
 * caller may ask with capacity 0 first. */
/* Threads: any. Ownership: buffer stays the caller's. */
BP_API bp_status bp_tensor_codec_params(const bp_reader* r, size_t tensor, char* buffer, size_t capacity,
                                        size_t* length);

/* Bytes a full decode of tensor `tensor` to `out` writes. Fails, with the
 * same error as bp_decode would, when the tensor cannot be decoded to `out`
 * (BP_ERR_UNSUPPORTED: codec or feature unknown to this library;
 * BP_ERR_INVALID_ARGUMENT: the codec cannot produce this output type). */
/* Threads: any. */
BP_API bp_status bp_decoded_size(const bp_reader* r, size_t tensor, bp_output out,
                                 uint64_t* bytes);

/* Decodes tensor `tensor` into `dst` (dst_size bytes, at least
 * bp_decoded_size; row-major, outermost first). `threads` <= 0 uses all
 * hardware threads. `dst` may be NULL only when dst_size is 0. On failure
 * the contents of dst are unspecified. */
/* Threads: any, on a shared reader, each call into its own dst (a call runs
 * up to `threads` threads of its own and joins them before it returns).
 * Ownership: dst stays the caller's; nothing keeps a pointer to it after the
 * call. */
BP_API bp_status bp_decode(const bp_reader* r, size_t tensor, bp_output out, void* dst,
                           uint64_t dst_size, int threads);

/* Decodes a block of tensor `tensor` (the `get_slice` of safetensors): rows
 * [row_begin, row_end) of the first dimension and columns [col_begin,
 * col_end) of the last, every middle dimension whole. A tensor of rank 0 or
 * 1 has one column per row (rank 1: each element is a row; rank 0: one row).
 * dst receives the block row-major, shape
 *   [row_end - row_begin, shape[1], ..., shape[ndim-2], col_end - col_begin],
 * and dst_size must be exactly its size in `out` elements (0 for an empty
 * block; dst may then be NULL). `threads` <= 0 uses all hardware threads.
 *
 * Errors: BP_ERR_OUT_OF_RANGE for a tensor index past the end or a range
 * with begin > end or end past the dimension; BP_ERR_INVALID_ARGUMENT for a
 * NULL dst with dst_size > 0, an unknown `out`, or dst_size other than the
 * block's size (the message gives it); BP_ERR_UNSUPPORTED when the output
 * has no whole bytes per row (or, for a column range other than all columns,
 * per element: BP_OUT_NATIVE of a block codec such as q8_0), and for the
 * reasons bp_decode gives; BP_ERR_CHECKSUM as bp_decode.
 *
 * Cost: only the chunks holding rows [row_begin, row_end) are read and
 * checked. All columns: decoded straight into dst. Fewer columns: the rows
 * are decoded whole into scratch memory (at most 64 MiB at a time, or one
 * row if a row is larger) and the columns copied out, so the time is that of
 * decoding the rows plus a copy of the block. */
/* Threads: any, as bp_decode. Ownership: as bp_decode; the scratch of a
 * column cut is freed before the call returns. */
BP_API bp_status bp_decode_range(const bp_reader* r, size_t tensor, uint64_t row_begin, uint64_t row_end,
                                 uint64_t col_begin, uint64_t col_end, bp_output out, void* dst,
                                 uint64_t dst_size, int threads);

/* ---- metadata ------------------------------------------------------------
 * Metadata is an ordered list of typed key/value entries, addressed by index
 * 0..bp_metadata_count-1. The typed getters check the type and return
 * BP_ERR_INVALID_ARGUMENT on a mismatch (the message names the key and both
 * types); they never convert between integer and float:
 *   bp_metadata_get_u64: BP_VALUE_UINT8/16/32/64
 *   bp_metadata_get_i64: BP_VALUE_INT8/16/32/64
 *   bp_metadata_get_f64: BP_VALUE_FLOAT32/64
 *   bp_metadata_get_bool: BP_VALUE_BOOL
 *   bp_metadata_get_string: BP_VALUE_STRING; *data is NUL-terminated but
 *     strings are bytes and may contain NULs, so use *len. Valid until
 *     bp_close.
 * bp_metadata_array_get_* read element `j` of an array with the same rules. */

/* Threads: any. */
BP_API size_t bp_metadata_count(const bp_reader* r);
/* Index of the entry with key `key` (the first, if repeated). */
/* Threads: any. Ownership: key is read during the call only. */
BP_API bp_status bp_metadata_find(const bp_reader* r, const char* key, size_t* index);
/* The key of entry i (NUL-terminated, valid until bp_close); NULL if r is
 * NULL or i is out of range. */
/* Threads: any. Ownership: the key belongs to r, valid until bp_close. */
BP_API const char* bp_metadata_key(const bp_reader* r, size_t i);
/* BP_VALUE_* of entry i; BP_VALUE_UNSPECIFIED (0) if r is NULL or i is out
 * of range. */
/* Threads: any. */
BP_API int bp_metadata_type(const bp_reader* r, size_t i);

/* Threads (every metadata getter below): any, on a shared reader.
 * Ownership: strings belong to r, valid until bp_close; out pointers are
 * written during the call only. */
BP_API bp_status bp_metadata_get_u64(const bp_reader* r, size_t i, uint64_t* out);
BP_API bp_status bp_metadata_get_i64(const bp_reader* r, size_t i, int64_t* out);
BP_API bp_status bp_metadata_get_f64(const bp_reader* r, size_t i, double* out);
BP_API bp_status bp_metadata_get_bool(const bp_reader* r, size_t i, int* out);
BP_API bp_status bp_metadata_get_string(const bp_reader* r, size_t i, const char** data,
                                        size_t* len);

/* Arrays: BP_ERR_INVALID_ARGUMENT when entry i is not BP_VALUE_ARRAY. */
BP_API bp_status bp_metadata_array_len(const bp_reader* r, size_t i, size_t* len);
BP_API bp_status bp_metadata_array_type(const bp_reader* r, size_t i, int* element_type);
BP_API bp_status bp_metadata_array_get_u64(const bp_reader* r, size_t i, size_t j,
                                           uint64_t* out);
BP_API bp_status bp_metadata_array_get_i64(const bp_reader* r, size_t i, size_t j,
                                           int64_t* out);
BP_API bp_status bp_metadata_array_get_f64(const bp_reader* r, size_t i, size_t j,
                                           double* out);
BP_API bp_status bp_metadata_array_get_bool(const bp_reader* r, size_t i, size_t j, int* out);
BP_API bp_status bp_metadata_array_get_string(const bp_reader* r, size_t i, size_t j,
                                              const char** data, size_t* len);

/* ---- elastic budgets (spec/elastic.md §5.3, §5.4) -----------------------
 * An elastic file (format 1.1) names budgets: nested sub-models kept as a
 * prefix of every sliceable dimension (format 1.2: a prefix of every group of
 * a grouped axis, of every segment of a fused dimension). A bp_budget is one budget of an open
 * reader, seen in one view: its kept tensors, their kept shapes, and for
 * each either zero-copy region descriptors into the file's mapping
 * (uncompressed fixed-cell codecs: f32/f16/bf16, q8_0, mxfp4, nvfp4, ...) or
 * a decode of the kept part into a caller buffer (every codec, including the
 * entropy-coded bf16-huffman/bf16-unary/bf16-spec).
 *
 * A bp_budget borrows its reader: close it (bp_budget_close) before
 * bp_close on the reader. It is immutable: any number of threads may use it
 * at once, except bp_budget_close. Errors are recorded on the reader. */

typedef struct bp_budget bp_budget;

/* One kept tensor. Layout is part of the ABI. */
struct bp_budget_tensor {
  size_t tensor;               /* index of the parent tensor (bp_tensor_info) */
  const char* name;            /* with layers renumbered; valid until bp_budget_close */
  uint32_t ndim;
  uint64_t shape[BP_MAX_DIMS]; /* kept; entries >= ndim are 0 */
};

/* The kept bytes of one stream, in place: for every index tuple i over
 * counts[0..ndim) (outermost first, row-major), the run_bytes bytes at
 * base + sum(i[k] * strides[k]). ndim 0: one run at base (contiguous). The
 * runs in that order are exactly the stream a `bolt-pack slice` writes;
 * when a stream's kept runs are irregular (format 1.2 mixed segments) it has
 * several consecutive regions with the same `stream`, whose runs in region
 * order are that stream. Layout is part of the ABI. */
struct bp_region {
  size_t stream;               /* index of the stream in the tensor (bp_stream_info) */
  const uint8_t* base;         /* in the mapping: the stream's stored bytes from the region's first byte */
  uint64_t base_size;
  uint32_t ndim;               /* < BP_MAX_DIMS */
  uint64_t counts[BP_MAX_DIMS];
  uint64_t strides[BP_MAX_DIMS]; /* bytes */
  uint64_t run_bytes;
  uint64_t total_bytes;        /* run_bytes times every count */
};

/* Number of budgets the file declares (0 without an elastic manifest or for
 * NULL). */
/* Threads: any. */
BP_API size_t bp_budget_count(const bp_reader* r);
/* Name of budget i, in manifest order; valid until bp_close; NULL if r is
 * NULL or i is out of range. */
/* Threads: any. Ownership: the name belongs to r, valid until bp_close. */
BP_API const char* bp_budget_name(const bp_reader* r, size_t i);

/* Opens budget `budget` of `r` in view `view` (NULL or "": the reader's view,
 * see bp_open_view): a budget view holds only the streams that view reads,
 * and bp_budget_decode gives what bp_decode in that view gives, cut to the
 * kept shape. BP_ERR_NOT_FOUND for a file without budgets, a budget or a view
 * it does not declare. On failure *out is set to NULL. */
/* Threads: any, on a shared reader. Ownership: the caller owns *out and
 * releases it with bp_budget_close, before bp_close on r; budget and view
 * are copied. */
BP_API bp_status bp_budget_open(const bp_reader* r, const char* budget, const char* view, bp_budget** out);
/* NULL is a no-op. */
/* Threads: exclusive: no other call with b may run at the same time or come
 * after. Ownership: takes b back; NULL is a no-op. */
BP_API void bp_budget_close(bp_budget* b);

/* Number of tensors the budget keeps (in file order); 0 for NULL. */
/* Threads: any. */
BP_API size_t bp_budget_tensor_count(const bp_budget* b);
/* Kept tensor i (0..bp_budget_tensor_count-1). */
/* Threads: any. Ownership: name belongs to b, valid until bp_budget_close. */
BP_API bp_status bp_budget_tensor(const bp_budget* b, size_t i, struct bp_budget_tensor* out);
/* Stored bytes a reader of this budget in its view touches (see
 * BudgetBytes in boltpack/budget_view.h). */
/* Threads: any. */
BP_API bp_status bp_budget_bytes(const bp_budget* b, uint64_t* bytes);

/* Zero-copy: the number of regions of kept tensor i (one per stream the view
 * reads, or several consecutive ones for a stream with irregular runs). BP_ERR_UNSUPPORTED (the message names the tensor) when its bytes
 * cannot be viewed in place: a compressed stream or a codec without fixed
 * cells; use bp_budget_decode. */
/* Threads: any. */
BP_API bp_status bp_budget_region_count(const bp_budget* b, size_t i, size_t* count);
/* Region k of kept tensor i. Pointers valid until bp_close on the reader.
 * Zero-copy, so NOT checked against the checksums (bp_verify first, or use
 * bp_budget_decode, which checks). */
/* Threads: any. Ownership: base points into the reader's read-only mapping,
 * valid until bp_close on the reader. */
BP_API bp_status bp_budget_region(const bp_budget* b, size_t i, size_t k, struct bp_region* out);

/* Bytes bp_budget_decode of kept tensor i to `out` writes. */
/* Threads: any. */
BP_API bp_status bp_budget_decoded_size(const bp_budget* b, size_t i, bp_output out, uint64_t* bytes);
/* Decodes the kept part of tensor i, as the budget's view sees it, into dst
 * (dst_size bytes, at least bp_budget_decoded_size; row-major, kept shape).
 * Only the chunks holding the kept outer rows are read. */
/* Threads: any, each call into its own dst. Ownership: dst stays the
 * caller's. */
BP_API bp_status bp_budget_decode(const bp_budget* b, size_t i, bp_output out, void* dst, uint64_t dst_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BOLTPACK_BOLTPACK_H_ */
