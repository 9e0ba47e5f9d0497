#include "boltpack/codec_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/lower_name.h"
#include "common/str_cat.h"
#include "codecs/builtin_codecs.h"

namespace boltpack {
namespace {

struct Registry {
  std::mutex mu;
  // std::less<> lets FindCodec look up a string_view without a copy. Codecs
  // are never removed, so the pointers handed out stay valid for the
  // process's lifetime.
  std::map<std::string, std::unique_ptr<Codec>, std::less<>> codecs;
};

Registry& RegistryInstance() {
  // Leaked on purpose: codecs may be looked up from other static destructors.
  static Registry* registry = new Registry;
  return *registry;
}

absl::Status RegisterLocked(Registry& registry, std::unique_ptr<Codec> codec) {
  if (codec == nullptr) return absl::InvalidArgumentError("cannot register a null codec");
  const std::string id(codec->id());
  if (!IsValidCodecId(id)) {
    // [C-6.8.1]
    return absl::InvalidArgumentError(StrCat(
        "invalid codec id '", id, "': want 1..64 bytes of [a-z0-9_-] starting with a "
        "letter or digit"));
  }
  if (registry.codecs.count(id) != 0) {
    return absl::AlreadyExistsError(StrCat("codec id '", id, "' is already registered"));
  }
  registry.codecs.emplace(id, std::move(codec));
  return absl::OkStatus();
}

// True on the thread running RegisterBuiltinCodecs: its RegisterCodec calls
// must not wait for the once_flag they are running under (self-deadlock).
thread_local bool registering_builtins = false;

// Built-ins go in on first use rather than from static initialisers, which
// a static library link would drop and whose order is unspecified. The
// registry's own mutex is not held while they register, since
// RegisterBuiltinCodecs calls back into RegisterCodec.
void EnsureBuiltins() {
  if (registering_builtins) return;
  static std::once_flag once;
  std::call_once(once, [] {
    registering_builtins = true;
    absl::Status status = RegisterBuiltinCodecs();
    registering_builtins = false;
    if (!status.ok()) {
      // Only a programming error (a duplicate or malformed built-in id) gets
      // here; lookups of the codecs that did register still work.
      std::fprintf(stderr, "bolt-pack: registering built-in codecs: %s\n",
                   status.ToString().c_str());
    }
  });
}

}  // namespace

bool IsValidCodecId(std::string_view id) { return IsLowerName(id); }

const Codec* FindCodec(std::string_view id) {
  // A pass over a file asks for the same codec a million times in a row
  // (the lock and the map's string compares were 7% of verifying 1M
  // tensors): each thread keeps its last hit, valid for good since codecs
  // are never removed. A miss is not kept: the codec may be registered later.
  thread_local const Codec* last = nullptr;
  if (last != nullptr && last->id() == id) return last;
  EnsureBuiltins();
  Registry& registry = RegistryInstance();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.codecs.find(id);
  if (it == registry.codecs.end()) return nullptr;
  last = it->second.get();
  return last;
}

CodecTraits TraitsOf(std::string_view id) {
  const Codec* codec = FindCodec(id);
  return codec != nullptr ? codec->traits() : CodecTraits{};
}

absl::Status RegisterCodec(std::unique_ptr<Codec> codec) {
  // A plugin registering before any lookup must not take a built-in's id:
  // load the built-ins first so the duplicate is reported to the plugin.
  EnsureBuiltins();
  Registry& registry = RegistryInstance();
  std::lock_guard<std::mutex> lock(registry.mu);
  return RegisterLocked(registry, std::move(codec));
}

std::vector<std::string> RegisteredCodecIds() {
  EnsureBuiltins();
  Registry& registry = RegistryInstance();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<std::string> ids;
  ids.reserve(registry.codecs.size());
  for (const auto& [id, codec] : registry.codecs) ids.push_back(id);
  return ids;  // sorted: std::map order
}

}  // namespace boltpack
