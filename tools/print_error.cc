// The CLI's one way to report a failure (tools/commands.h).
#include <cstdio>
#include <string>

#include "tools/commands.h"

namespace boltpack::tools {

void PrintError(const std::string& message) {
  // Written whole: a message is bytes (names in it are escaped), not a C
  // string that a NUL would cut.
  std::fputs("bolt-pack: ", stderr);
  std::fwrite(message.data(), 1, message.size(), stderr);
  std::fputc('\n', stderr);
}

}  // namespace boltpack::tools
