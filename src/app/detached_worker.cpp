#include "app/detached_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

namespace llmwatch {
namespace {

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP};

std::atomic<int> report_fd{-1};  // the worker's end of the pipe; -1 once used or outside one
volatile sig_atomic_t worker_pid = 0;

void forward(int sig) {
  if (worker_pid > 0) kill(worker_pid, sig);
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The parent's side: wait for the code, passing signals on; an end without one is a crash.
int wait_for_worker(pid_t pid, int fd) {
  unsigned char code = 0;
  ssize_t n;
  do n = read(fd, &code, 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  int status = 0;
  if (n != 1) {  // closed without a code: every thread of the worker is gone
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return exit_status(status);
  }
  // The worker normally ends within moments of its report; one that does not is blocked in
  // the kernel, and is left behind to end when the mount answers.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, &status, WNOHANG) == pid) return code;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::cerr << "llmwatch: worker " << pid
            << " has finished but is still blocked in the kernel (a hung mount?); it ends "
               "when the mount answers\n";
  return code;
}

}  // namespace

int run_in_worker(const std::function<int()>& work) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return work();  // no pipe: work in this process, as before
  // Signals wait (blocked) until the parent forwards them, so none is lost around the fork.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    close(fds[0]);
    close(fds[1]);
    return work();
  }
  if (pid == 0) {
    close(fds[0]);
    // A parent killed outright (SIGKILL, the OOM killer) takes the worker with it, as when
    // they were one process.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    report_fd = fds[1];
    int code = work();
    report_exit_code(code);
    return code;
  }
  close(fds[1]);
  worker_pid = pid;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);  // no SA_RESTART: read sees EINTR
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return wait_for_worker(pid, fds[0]);
}

void report_exit_code(int code) {
  int fd = report_fd.exchange(-1);
  if (fd < 0) return;
  // Whatever follows may block for good: nothing of the caller's may stay open in it, or a
  // caller reading our output (cron) would wait for the end of it.
  spdlog::default_logger()->flush();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  auto byte = static_cast<unsigned char>(code);
  while (write(fd, &byte, 1) < 0 && errno == EINTR) {
  }
  close(fd);
}

}  // namespace llmwatch
