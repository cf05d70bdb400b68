#include "util/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_util.h"

namespace llmwatch {
namespace {

ProcessSpec spec(std::vector<std::string> argv, int timeout_ms = 10000) {
  ProcessSpec s;
  s.argv = std::move(argv);
  s.timeout = std::chrono::milliseconds(timeout_ms);
  return s;
}

TEST(Subprocess, CapturesOutputAndExitCode) {
  auto r = run_process(spec({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe("tool"), "tool: exit 3: err");
}

TEST(Subprocess, ArgvIsNeverInterpretedByAShell) {
  auto r = run_process(spec({"echo", "$HOME; rm -rf /", "`id`"}));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "$HOME; rm -rf / `id`\n");
}

TEST(Subprocess, MissingProgramIsReportedNotThrown) {
  auto r = run_process(spec({"llmwatch-no-such-program"}));
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.describe("x").find("not found on PATH"), std::string::npos);
}

TEST(Subprocess, PassesEnvironmentAndStdin) {
  auto s = spec({"sh", "-c", "printf '%s:' \"$LW_VALUE\"; cat"});
  s.env["LW_VALUE"] = "v1";
  s.stdin_data = "from-stdin";
  auto r = run_process(s);
  EXPECT_TRUE(r.ok()) << r.describe("sh");
  EXPECT_EQ(r.out, "v1:from-stdin");
}

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  testing::TempDir dir;
  // The child starts a grandchild that would outlive it, and records the grandchild's pid.
  auto s = spec({"sh", "-c", "sleep 300 & echo $! > " + (dir / "pid") + "; wait"}, 300);
  auto started = std::chrono::steady_clock::now();
  auto r = run_process(s);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(took, std::chrono::seconds(10));
  pid_t grandchild = std::stoi(testing::read_file(dir / "pid"));
  // Poll with a deadline: the kill is asynchronous to our reaping of the grandchild's parent.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (process_alive(grandchild) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(process_alive(grandchild)) << "grandchild " << grandchild << " survived the timeout";
  EXPECT_NE(r.describe("sh").find("timed out"), std::string::npos);
}

TEST(Subprocess, HugeOutputIsCappedButDrained) {
  auto s = spec({"head", "-c", "50000000", "/dev/zero"});
  s.max_output = 1000;
  auto r = run_process(s);
  EXPECT_TRUE(r.ok()) << r.describe("head");  // the child was never blocked on a full pipe
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.out_truncated);
}

TEST(Subprocess, ReportsTheKillingSignal) {
  auto r = run_process(spec({"sh", "-c", "kill -TERM $$"}));
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_FALSE(r.ok());
}

// The defect: every child inherited llmwatch's environment, so an alert hook, sbatch and the
// job it submitted saw the Slack URL and the SMTP password.
TEST(Subprocess, ChildrenGetAScrubbedEnvironment) {
  setenv("LLMWATCH_TEST_SECRET", "hunter2", 1);
  auto r = run_process(spec({"env"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos);
  EXPECT_NE(r.out.find("PATH="), std::string::npos);
  auto extra = spec({"env"});
  extra.env["ONLY_THIS"] = "1";
  EXPECT_NE(run_process(extra).out.find("ONLY_THIS=1"), std::string::npos);
  auto own = spec({"env"});
  own.inherit_environment = true;  // llmwatch's own successor job only
  EXPECT_NE(run_process(own).out.find("hunter2"), std::string::npos);
  unsetenv("LLMWATCH_TEST_SECRET");
}

// The defect: a hook that left a detached grandchild holding the pipe blocked the cycle past
// every timeout. Reading now stops at the deadline.
TEST(Subprocess, ADetachedGrandchildHoldingThePipeCannotOutliveTheDeadline) {
  auto s = spec({"sh", "-c", "setsid sleep 5 & echo started"});
  s.timeout = std::chrono::milliseconds(500);
  auto r = run_process(s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.out.find("started"), std::string::npos);
}

// A child gets its stdin, stdout and stderr and nothing else of llmwatch's. The defect, found
// by the chaos soak: every child inherited the daemon's /metrics listening socket (Boost.Asio
// opens it without close-on-exec), so a child of a killed daemon (a hang dump's gdb, a
// 60 s node-check step) still held the port, and the daemon started again in its place exited
// with "Address already in use" and supervised nothing for two minutes. Files llmwatch opened
// (its state, a secret's file) were open in every child too.
TEST(Subprocess, AChildInheritsNoOtherDescriptorOfOurs) {
  int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);  // as Boost.Asio opens one: no CLOEXEC
  int file_fd = ::open("/dev/null", O_RDONLY);        // no O_CLOEXEC
  ASSERT_GE(socket_fd, 3);
  ASSERT_GE(file_fd, 3);
  for (int fd : {socket_fd, file_fd}) {
    auto r = run_process(spec({"test", "-e", "/proc/self/fd/" + std::to_string(fd)}));
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_EQ(r.exit_code, 1) << "fd " << fd << " is open in the child";
  }
  // Its own three are there, and what it reads and writes still flows.
  auto with_stdin = spec({"sh", "-c", "test -e /proc/self/fd/2 && cat && echo err >&2"});
  with_stdin.stdin_data = "in\n";
  auto r = run_process(with_stdin);
  EXPECT_TRUE(r.ok()) << r.describe("sh");
  EXPECT_EQ(r.out, "in\n");
  EXPECT_EQ(r.err, "err\n");
  // Boost.Process learns of a failed exec through a pipe of its own: that still works.
  auto missing = run_process(spec({"/nonexistent/llmwatch-test-program"}));
  EXPECT_FALSE(missing.started);
  EXPECT_FALSE(missing.error.empty());
  ::close(socket_fd);
  ::close(file_fd);
}

// Children started at once from several threads (a cycle's probes run in parallel): one that
// forked while another's pipes were still open in llmwatch held the other's stdout open, so
// that one's output never ended until the long child did, and a command that had finished in
// a millisecond timed out (squeue "timing out" beside a 60 s node-check step).
TEST(Subprocess, AShortCommandBesideLongOnesEndsWhenItEnds) {
  // 32 threads each start `sleep 4` one after another, staggered: a start every ~60 ms, each a
  // chance to take a short command's pipe. The short commands run until all 32 have started. A
  // pipe taken holds its command for the rest of a sleep (over 3.5 s), twice its 2 s limit, so
  // a slow start on a loaded machine is not mistaken for it.
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> long_ones;
  for (int t = 0; t < 32; ++t)
    long_ones.emplace_back([&, t] {
      std::this_thread::sleep_for(std::chrono::milliseconds(60 * t));
      while (!stop) {
        ++started;
        run_process(spec({"sleep", "4"}));
      }
    });
  int runs = 0, timed_out = 0;
  for (; started < 32 || runs < 100; ++runs)
    timed_out += run_process(spec({"true"}, 2000)).timed_out;
  stop = true;
  for (auto& t : long_ones) t.join();
  EXPECT_EQ(timed_out, 0) << "of " << runs << " runs of true beside " << started
                          << " starts of sleep 4";
}

TEST(Subprocess, OutputIsValidUtf8) {
  auto r = run_process(spec({"printf", "ok \\342\\226 cut"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.out, "ok \xEF\xBF\xBD\xEF\xBF\xBD cut");
}

}  // namespace
}  // namespace llmwatch
