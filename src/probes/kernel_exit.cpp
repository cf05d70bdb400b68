#include "probes/kernel_exit.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "probes/proc_status.h"
#include "util/files.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// include/linux/sched.h; stable across kernels (PF_POSTCOREDUMP since 5.16, unset before).
constexpr unsigned long kPfExiting = 0x4;
constexpr unsigned long kPfPostCoreDump = 0x8;
constexpr unsigned long kSigKillBit = 1ul << (9 - 1);

bool hex_has(std::string_view mask, unsigned long bit) {
  unsigned long v = 0;
  auto [end, ec] = std::from_chars(mask.data(), mask.data() + mask.size(), v, 16);
  return ec == std::errc() && end == mask.data() + mask.size() && (v & bit) != 0;
}

std::string read_or_empty(const std::string& path) {
  return read_text_file(path).value_or("");
}

}  // namespace

bool ThreadExitState::doomed() const {
  return state == 'Z' || state == 'X' || (flags & (kPfExiting | kPfPostCoreDump)) != 0 ||
         kill_pending;
}

ThreadExitState parse_thread_exit_state(const std::string& stat, const std::string& status) {
  ThreadExitState t;
  // "14093 (python3) S 14052 ... ": the command name may hold spaces and ')', so the fields
  // are counted from its last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return t;
  const auto fields = split(std::string(trim(std::string_view(stat).substr(close + 1))), ' ');
  // state ppid pgrp session tty_nr tpgid flags
  if (fields.size() < 7 || fields[0].size() != 1) return t;
  unsigned long flags = 0;
  auto [end, ec] = std::from_chars(fields[6].data(), fields[6].data() + fields[6].size(), flags);
  if (ec != std::errc() || end != fields[6].data() + fields[6].size()) return t;
  t.state = fields[0][0];
  t.flags = flags;
  t.kill_pending = hex_has(proc_status_value(status, "SigPnd"), kSigKillBit) ||
                   hex_has(proc_status_value(status, "ShdPnd"), kSigKillBit);
  t.core_dumping = proc_status_value(status, "CoreDumping") == "1";
  return t;
}

std::string kernel_exit(const std::vector<ThreadExitState>& threads) {
  // A thread that could not be read (gone since the listing) counts neither way.
  auto read = [](const ThreadExitState& t) { return t.state != '?'; };
  if (std::none_of(threads.begin(), threads.end(), read)) return "";
  if (std::any_of(threads.begin(), threads.end(),
                  [&](const auto& t) { return read(t) && t.core_dumping; }))
    return "do_coredump";
  return std::all_of(threads.begin(), threads.end(),
                     [&](const auto& t) { return !read(t) || t.doomed(); })
             ? "do_exit"
             : "";
}

std::string process_kernel_exit(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const ThreadExitState main =
      parse_thread_exit_state(read_or_empty(proc + "/stat"), read_or_empty(proc + "/status"));
  if (main.state == '?' || !(main.doomed() || main.core_dumping)) return "";
  std::vector<ThreadExitState> threads{main};
  if (DIR* tasks = ::opendir((proc + "/task").c_str())) {
    while (dirent* e = ::readdir(tasks)) {
      const std::string tid = e->d_name;
      if (tid == "." || tid == ".." || tid == std::to_string(pid)) continue;
      const std::string task = proc + "/task/" + tid;
      threads.push_back(
          parse_thread_exit_state(read_or_empty(task + "/stat"), read_or_empty(task + "/status")));
    }
    ::closedir(tasks);
  }
  return kernel_exit(threads);
}

}  // namespace llmwatch
