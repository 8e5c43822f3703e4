// Runs one measurement group in a child process, so a kernel that crashes,
// hangs or leaves a sticky CUDA error costs only its own group: the harness
// still writes every other group's rows. The parent never touches CUDA (a
// CUDA context does not survive fork); each child creates its own.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace v41sim::kernels {

struct GroupOutcome {
  std::string text;  // what the child wrote: metadata lines and CSV rows
  bool ok = false;
  std::string why;  // exit status or signal, when !ok
};

// body(fd) writes its output to fd and returns the child's exit status.
inline GroupOutcome run_isolated(const std::function<int(int)>& body, unsigned timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) return {"", false, "pipe() failed"};
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return {"", false, "fork() failed"};
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(timeout_s);  // a hung kernel ends the child (SIGALRM), not the harness
    int status = 1;
    try {
      status = body(fds[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "  %s\n", e.what());
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::close(fds[1]);
    std::_Exit(status);
  }
  ::close(fds[1]);
  GroupOutcome outcome;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) outcome.text.append(buffer, buffer + n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    outcome.ok = true;
  } else if (WIFSIGNALED(status)) {
    outcome.why = WTERMSIG(status) == SIGALRM ? "timed out after " + std::to_string(timeout_s) + " s"
                                              : "killed by signal " + std::to_string(WTERMSIG(status));
  } else {
    outcome.why = "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return outcome;
}

}  // namespace v41sim::kernels
