// boltpack_peak_probe FD PROGRAM ARGS...: runs PROGRAM, waits for it and
// writes "STATUS MAXRSS_KIB\n" (its wait status and ru_maxrss) to file
// descriptor FD. RunCliMeasured (tests/test_util.cc) runs the CLI under this
// small process because a child's ru_maxrss counts the resident size it had
// before exec: a fork of the test binary, vfork and posix_spawn alike carry
// the test process's size (hundreds of MB once other tests have grown it)
// into the CLI's figure. Forked from this process, the CLI starts from ~1 MB.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FD PROGRAM ARGS...\n", argv[0]);
    return 2;
  }
  const int report = std::atoi(argv[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    ::close(report);
    ::execv(argv[2], argv + 2);
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) return 127;
  ::dprintf(report, "%d %ld\n", status, usage.ru_maxrss);
  return 0;
}
