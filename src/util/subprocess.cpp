#include "util/subprocess.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "util/strings.h"
#include "util/text.h"

namespace bp = boost::process;
namespace asio = boost::asio;

namespace llmwatch {
namespace {

// How long a child killed at its deadline may take to go before run_process stops waiting.
constexpr auto kUnkillableGrace = std::chrono::seconds(5);

// Reads a pipe to EOF, keeping at most `cap` bytes; reading on past the cap keeps the child
// from blocking on a full pipe.
struct PipeReader {
  bp::async_pipe& pipe;
  std::string& sink;
  bool& truncated;
  std::size_t cap;
  std::function<void()> on_eof;
  std::function<void(std::string_view)> consumer;  // set: pieces go here instead
  std::array<char, 65536> buffer{};

  void start() {
    pipe.async_read_some(asio::buffer(buffer),
                         [this](const boost::system::error_code& ec, std::size_t n) {
                           if (n > 0 && consumer) {
                             consumer(std::string_view(buffer.data(), n));
                           } else if (n > 0) {
                             std::size_t room = sink.size() < cap ? cap - sink.size() : 0;
                             if (n > room) truncated = true;
                             sink.append(buffer.data(), std::min(n, room));
                           }
                           if (ec)
                             on_eof();
                           else
                             start();
                         });
  }
};

// A child gets its stdin, stdout and stderr and nothing else of ours. Boost.Asio opens the
// daemon's /metrics socket, and Boost.Process its pipes, without close-on-exec, so every child
// held them: a child of a killed daemon (a hang dump's gdb, a node-check step) kept the port,
// and the daemon started again in its place could not listen; a child started while another's
// pipes were open kept that one's output open, so a command that had ended timed out as long
// as the other ran. Marked in the child between fork and exec, where only async-signal-safe
// calls may run: close_range (Linux 5.11), else one fcntl a descriptor.
struct OnlyStdio : bp::extend::handler {
  template <typename Executor>
  void on_exec_setup(Executor&) const {
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
    struct rlimit limit {};
    int last = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (1u << 16)
                   ? static_cast<int>(limit.rlim_cur)
                   : 1 << 16;
    for (int fd = 3; fd < last; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
};

// Every child gets a scrubbed environment: only what programs need to run and to find
// Slurm, never llmwatch's own secrets (a Slack URL, an SMTP password, a token).
bp::environment child_environment() {
  static const char* const kKept[] = {"PATH",   "HOME", "LANG",    "LANGUAGE", "TZ",
                                      "TMPDIR", "USER", "LOGNAME", "SHELL",    "TERM"};
  // FAKE_*: read by the test suite's stand-in nvidia-smi and dcgmi; no secret has that name.
  static const char* const kKeptPrefixes[] = {"LC_", "SLURM_CONF", "FAKE_"};
  bp::environment out;
  for (const auto& entry : boost::this_process::environment()) {
    std::string name = entry.get_name();
    bool keep = false;
    for (const char* k : kKept) keep |= name == k;
    for (const char* p : kKeptPrefixes) keep |= name.rfind(p, 0) == 0;
    if (keep) out[name] = entry.to_string();
  }
  return out;
}

}  // namespace

std::string ProcessResult::describe(const std::string& what) const {
  if (!started) return what + ": could not run: " + error;
  if (timed_out)
    return what + ": timed out after " + std::to_string(static_cast<int>(seconds)) + "s" +
           (error.empty() ? "" : " and " + error);
  if (signal) return what + ": killed by signal " + std::to_string(signal);
  std::string first_err;
  for (const auto& line : split(err, '\n'))
    if (!trim(line).empty()) {
      first_err = sanitize_line(trim(line), 200);
      break;
    }
  return what + ": exit " + std::to_string(exit_code) + (first_err.empty() ? "" : ": " + first_err);
}

namespace {

ProcessResult run_process_unguarded(const ProcessSpec& spec) {
  // A child that exits before reading its stdin must not kill llmwatch with SIGPIPE.
  static const bool sigpipe_ignored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  ProcessResult result;
  auto started_at = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count();
  };
  if (spec.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  boost::filesystem::path exe = spec.argv[0];
  if (spec.argv[0].find('/') == std::string::npos) {
    exe = bp::search_path(spec.argv[0]);
    if (exe.empty()) {
      result.error = "'" + spec.argv[0] + "' not found on PATH";
      return result;
    }
  }
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  // Extra variables go through env(1) (`env K=V /abs/prog args`, still argv only): Boost
  // 1.74's environment lookup reads past the end of shorter entries (AddressSanitizer
  // heap-buffer-overflow in basic_environment_impl::find).
  if (!spec.env.empty() && exe.string().find('=') == std::string::npos) {
    std::vector<std::string> wrapped;
    for (const auto& [k, v] : spec.env) wrapped.push_back(k + "=" + v);
    wrapped.push_back(exe.string());
    wrapped.insert(wrapped.end(), args.begin(), args.end());
    args = std::move(wrapped);
    exe = "/usr/bin/env";
  }
  bp::environment env =
      spec.inherit_environment ? boost::this_process::environment() : child_environment();

  asio::io_context io;
  bp::async_pipe out_pipe(io), err_pipe(io), in_pipe(io);
  bp::group group;
  std::error_code ec;
  bp::child child(exe, bp::args(args), bp::std_out > out_pipe, bp::std_err > err_pipe,
                  bp::std_in < in_pipe, env, group,
                  bp::start_dir(spec.cwd.empty() ? std::string(".") : spec.cwd), OnlyStdio{}, ec);
  if (ec) {
    result.error = ec.message();
    return result;
  }
  result.started = true;

  auto deadline = std::chrono::steady_clock::now() + spec.timeout;
  auto kill_group = [&] {
    result.timed_out = true;
    std::error_code kill_ec;
    group.terminate(kill_ec);  // SIGKILL to the whole group: grandchildren holding pipes too
    // A grandchild that left the group (setsid, a daemonizing alert hook) may still hold
    // the pipes open: stop reading at the deadline all the same.
    boost::system::error_code close_ec;
    out_pipe.close(close_ec);
    err_pipe.close(close_ec);
  };
  asio::steady_timer timer(io, deadline);
  int open_streams = 2;
  auto on_eof = [&] {
    if (--open_streams == 0) timer.cancel();
  };
  PipeReader out_reader{out_pipe,        result.out, result.out_truncated,
                        spec.max_output, on_eof,     spec.on_out};
  PipeReader err_reader{err_pipe,        result.err, result.err_truncated,
                        spec.max_output, on_eof,     nullptr};
  out_reader.start();
  err_reader.start();
  timer.async_wait([&](const boost::system::error_code& e) {
    if (!e) kill_group();
  });
  if (spec.stdin_data.empty()) {
    in_pipe.close();
  } else {
    asio::async_write(in_pipe, asio::buffer(spec.stdin_data),
                      [&](const boost::system::error_code&, std::size_t) { in_pipe.close(); });
  }
  io.run();

  // Both pipes are closed; the child may still be running (it closed its stdout, say).
  std::optional<std::chrono::steady_clock::time_point> killed_at;
  if (result.timed_out) killed_at = std::chrono::steady_clock::now();
  bool abandoned = false;
  while (child.running(ec)) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline && !result.timed_out) {
      kill_group();
      killed_at = now;
    }
    // A process blocked in the kernel (a read on a hard-hung NFS or FUSE mount) does not
    // die of SIGKILL until the mount answers. Give it a moment, then give up on it: it is
    // reaped by a thread of its own whenever it goes, and this call returns.
    if (killed_at && now - *killed_at > kUnkillableGrace) {
      pid_t pid = child.id();
      child.detach();
      std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();
      result.error = "did not exit after SIGKILL (blocked in the kernel: a hung mount?)";
      abandoned = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!abandoned) {
    child.wait(ec);
    int status = child.native_exit_code();
    if (WIFSIGNALED(status))
      result.signal = WTERMSIG(status);
    else if (WIFEXITED(status))
      result.exit_code = WEXITSTATUS(status);
  }
  // The text boundary: whatever the program printed, what llmwatch keeps is valid UTF-8.
  result.out = valid_utf8(result.out);
  result.err = valid_utf8(result.err);
  result.seconds = elapsed();
  return result;
}

}  // namespace

// Boost.Process throws where the system says no (no file descriptors left for the pipes,
// no memory to fork): that is a program that could not run, never an exception that ends
// the thread (and, in a pool thread, llmwatch).
ProcessResult run_process(const ProcessSpec& spec) {
  try {
    return run_process_unguarded(spec);
  } catch (const std::exception& e) {
    ProcessResult r;
    r.error = e.what();
    return r;
  }
}

}  // namespace llmwatch
