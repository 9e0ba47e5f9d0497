// Chunk indexes of whole rows for cut records. Its own file because the
// reader's line prefixes (format/line_prefix.cc) need it without the cutting
// and re-encoding of format/elastic_cut.cc: libboltpack_read, which takes
// only the objects its exports reach, would otherwise link the writer.
#ifndef BOLTPACK_FORMAT_ROW_CHUNKS_H_
#define BOLTPACK_FORMAT_ROW_CHUNKS_H_

#include "boltpack/tensor_info.h"

namespace boltpack::format {

// Chunk indexes of whole outer rows (about 1 MiB of the widest stream)
// for a cut record whose streams are uncompressed and chunk-less; none
// for a tensor of fewer than two rows or one chunk's worth.
void AddRowChunks(TensorInfo* info);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ROW_CHUNKS_H_
