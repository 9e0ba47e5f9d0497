// Temporary files that must not outlive a process killed by a signal it can
// catch (SIGINT, SIGTERM, SIGHUP, SIGXFSZ): a fixed table of (folder, name)
// pairs that a signal handler unlinks before the process dies of the signal
// as it would have (default action, re-raised: the exit status is the same).
// Handlers are installed when a file is armed, only for signals whose
// disposition is then the default one: an ignored signal (the CLI ignores SIGXFSZ, nohup
// SIGHUP) stays ignored, and a program's own handler is left alone.
// Nothing can catch SIGKILL: AtomicFile keeps its files unnamed for that.
#ifndef BOLTPACK_COMMON_SIGNAL_CLEANUP_H_
#define BOLTPACK_COMMON_SIGNAL_CLEANUP_H_

#include <string>

namespace boltpack::io {

// Has the handler unlink `name` in the folder open as `dir_fd` (which must
// stay open until Disarm). Returns the slot to disarm, or -1 when every slot
// is taken or the name is too long (the file is then removed only by its
// owner, as before).
int ArmRemovalOnSignal(int dir_fd, const std::string& name);
// Forgets the slot (the file was renamed or removed); -1 is ignored.
void DisarmRemovalOnSignal(int slot);

}  // namespace boltpack::io

#endif  // BOLTPACK_COMMON_SIGNAL_CLEANUP_H_
