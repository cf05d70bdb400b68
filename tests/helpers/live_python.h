#pragma once
// A live /usr/bin/python3 running `code` (its environment emptied), killed at the end: a rank's
// process as gdb sees it, for the tests of what a look into one says.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace llmwatch::testing {

// Why a test of a live process through the real gdb cannot run here; "" where it can.
inline std::string no_live_gdb() {
  if (std::system("gdb --version >/dev/null 2>&1") != 0) return "gdb is not installed";
  if (!std::filesystem::exists("/usr/bin/python3")) return "no /usr/bin/python3";
  return "";
}

// A rank whose error was raised to the top and which lingers in its exit, its interpreter
// joining a thread that never ends (as a process group's destructor would hold it).
inline constexpr const char* kLingersInItsExit =
    "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n"
    "raise RuntimeError('NCCL error: remote process exited')\n";

struct LivePython {
  pid_t pid = -1;
  explicit LivePython(const std::string& code) {
    std::string program = "/usr/bin/python3", c = "-c", body = code;
    char* argv[] = {program.data(), c.data(), body.data(), nullptr};
    char* envp[] = {nullptr};
    EXPECT_EQ(posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp), 0);
  }
  LivePython(const LivePython&) = delete;
  LivePython& operator=(const LivePython&) = delete;
  ~LivePython() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace llmwatch::testing
