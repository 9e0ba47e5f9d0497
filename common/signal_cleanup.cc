#include "common/signal_cleanup.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace boltpack::io {
namespace {

// A slot's life: free -> filling (one thread writes it) -> armed -> free;
// the handler takes armed -> removing, so it never reads a slot that is
// being rewritten.
enum SlotState : int { kFree = 0, kFilling, kArmed, kRemoving };

struct Slot {
  std::atomic<int> state{kFree};
  pid_t pid = 0;  // a child forked with the table does not remove its parent's files
  int dir_fd = -1;
  char name[NAME_MAX + 1] = {};
};

// Enough for every file a command writes at once (a split GGUF's shards are
// written one at a time; each holds a slot only while it is named).
constexpr int kSlots = 64;
Slot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs lock-free atomics");

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

// Only async-signal-safe calls: unlinkat, getpid, sigaction, raise.
extern "C" void RemoveArmedFilesAndDie(int sig) {
  const int saved_errno = errno;
  const pid_t self = ::getpid();
  for (Slot& s : g_slots) {
    int armed = kArmed;
    if (s.pid == self && s.state.compare_exchange_strong(armed, kRemoving)) ::unlinkat(s.dir_fd, s.name, 0);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // Blocked while this handler runs, so it is delivered on return, with the
  // default action: the process dies of it.
  ::raise(sig);
  errno = saved_errno;
}

void InstallHandlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction act {};
    act.sa_handler = RemoveArmedFilesAndDie;
    sigfillset(&act.sa_mask);  // one handler at a time
    act.sa_flags = SA_RESTART;
    ::sigaction(sig, &act, nullptr);
  }
}

}  // namespace

int ArmRemovalOnSignal(int dir_fd, const std::string& name) {
  if (name.empty() || name.size() > NAME_MAX) return -1;
  // At every arming (four sigaction calls, only for named files): a signal
  // the program stopped ignoring or handling since gets the handler too.
  InstallHandlers();
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    int free = kFree;
    if (!s.state.compare_exchange_strong(free, kFilling)) continue;
    s.pid = ::getpid();
    s.dir_fd = dir_fd;
    std::memcpy(s.name, name.c_str(), name.size() + 1);
    s.state.store(kArmed);
    return i;
  }
  return -1;
}

void DisarmRemovalOnSignal(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  int armed = kArmed;
  // Fails only while the handler removes it: the process is dying anyway.
  g_slots[slot].state.compare_exchange_strong(armed, kFree);
}

}  // namespace boltpack::io
