// Names, keys and other strings read from a file, made safe to print: a
// name is data, and printed raw it can move the cursor, recolour or retitle
// the terminal (ESC sequences), end a C string early (NUL) or garble the
// line (invalid UTF-8).
#ifndef BOLTPACK_COMMON_ESCAPE_H_
#define BOLTPACK_COMMON_ESCAPE_H_

#include <string>
#include <string_view>

namespace boltpack {

// `s` with every control character (C0 including NUL, DEL, and the C1
// controls U+0080..U+009F, which some terminals also obey) and every byte
// that is not part of well-formed UTF-8 written as `\xNN` (lower-case hex,
// one per byte); everything else, valid UTF-8 included, as is.
std::string EscapeForDisplay(std::string_view s);

// EscapeForDisplay(s) in double quotes, as messages name a tensor or key.
// When `max_bytes` is not 0, only the first `max_bytes` bytes of `s` (cut at
// a character boundary) are shown, followed by "..." (a name may be
// megabytes long).
std::string QuoteForDisplay(std::string_view s, size_t max_bytes = 0);

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_ESCAPE_H_
