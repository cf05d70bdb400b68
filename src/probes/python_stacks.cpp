#include "probes/python_stacks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "probes/rank_processes.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace llmwatch {
namespace {

constexpr size_t kMaxDump = 64 * 1024;  // per process: deep stacks are cut, not the summary
constexpr const char* kHeader = kStackHeader;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "/usr/bin:/bin", ':'))
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  return false;
}

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// A Python interpreter by the program it runs (/proc/PID/exe: a venv's python3 link resolves to
// python3.11), the name it was started as (argv[0]), or its command name. Not by the command
// name alone: it is the main thread's name, which PyTorch sets: torchrun's elastic agent is
// "pt_elastic" (torch >= 2.5), a DataLoader worker "pt_data_worker", and under torch 2.4 every
// process that imported torch "pt_main_thread".
bool is_python(int pid) {
  auto python = [](const std::string& path) {
    return path.compare(path.rfind('/') + 1, 6, "python") == 0;
  };
  const std::string proc = "/proc/" + std::to_string(pid);
  if (python(read_link(proc + "/exe"))) return true;
  const std::string cmdline = read_all(proc + "/cmdline");
  return python(cmdline.substr(0, cmdline.find('\0'))) ||
         read_all(proc + "/comm").rfind("python", 0) == 0;
}

}  // namespace

std::optional<std::vector<JobProcess>> parse_listpids(const std::string& out) {
  // PID      JOBID    STEPID   LOCALID GLOBALID
  // 1974     2        batch    0       0
  auto lines = split(out, '\n');
  if (lines.empty() || trim(lines[0]).rfind("PID", 0) != 0) return std::nullopt;
  std::vector<JobProcess> listed;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream fields(lines[i]);
    std::string first, job, step;
    if (!(fields >> first)) continue;
    char* end = nullptr;
    long pid = std::strtol(first.c_str(), &end, 10);
    // The extern step's own row, with PrologFlags=contain: "-1  13073  extern  0  0", no process.
    if (pid == -1 && !*end) continue;
    if (*end || pid <= 0 || pid > std::numeric_limits<int>::max() || !(fields >> job >> step))
      return std::nullopt;
    listed.push_back({static_cast<int>(pid), step});
  }
  return listed;
}

std::vector<JobProcess> job_python_processes(const std::string& job_id, const std::string& node) {
  std::vector<JobProcess> out;
  // slurmd knows the job's processes on its node (its proctrack container, children included);
  // an environment match alone would also take another cluster's job of the same id on this
  // host (a test cluster, a federation sibling) and miss a rank that cleaned its environment.
  ProcessSpec spec;
  spec.argv = {"scontrol", "listpids", job_id};
  if (!node.empty()) spec.argv.push_back(node);  // names the slurmd where several share a host
  spec.timeout = std::chrono::seconds(10);
  auto listed = run_process(spec);
  if (auto processes = listed.ok() ? parse_listpids(listed.out) : std::nullopt) {
    for (auto& p : *processes)
      if (p.pid != ::getpid() && is_python(p.pid)) out.push_back(std::move(p));
  } else {
    // No slurmd to ask (run by hand on a node): the job's id in the environment.
    DIR* proc = ::opendir("/proc");
    if (!proc) return out;
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end || pid <= 0 || pid == ::getpid() || !is_python(static_cast<int>(pid))) continue;
      auto env = process_environment(static_cast<int>(pid));
      if (auto id = env.find("SLURM_JOB_ID"); id != env.end() && id->second == job_id)
        out.push_back({static_cast<int>(pid), ""});
    }
    ::closedir(proc);
  }
  auto by_pid = [](const JobProcess& a, const JobProcess& b) { return a.pid < b.pid; };
  std::sort(out.begin(), out.end(), by_pid);
  out.erase(std::unique(out.begin(), out.end(),
                        [](const JobProcess& a, const JobProcess& b) { return a.pid == b.pid; }),
            out.end());
  return out;
}

std::string trigger_flight_recorder(int pid) {
  auto env = process_environment(pid);
  auto stem = env.find("TORCH_NCCL_DEBUG_INFO_PIPE_FILE");
  if (stem == env.end() || stem->second.empty()) return "";
  // The global rank, as torchrun (RANK) or srun (SLURM_PROCID) gave it.
  std::string rank = env.count("RANK") ? env["RANK"] : env["SLURM_PROCID"];
  if (rank.empty() || rank.find_first_not_of("0123456789") != std::string::npos)
    return "flight recorder: pid " + std::to_string(pid) + " has no RANK to name its pipe";
  const std::string pipe = stem->second + rank + ".pipe";
  std::string dump_to = env.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
                            ? env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + rank
                            : "PyTorch's default";
  struct stat proc_st {};
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &proc_st) != 0 ||
      ::lstat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != proc_st.st_uid)
    return "flight recorder: " + sanitize_line(pipe, 200) +
           " is not a FIFO of the rank's own user: not touched";
  // O_NONBLOCK: with no reader (the watchdog gone) the open fails at once instead of hanging.
  int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "flight recorder: " + sanitize_line(pipe, 200) + ": " + std::strerror(errno);
  bool written = ::write(fd, "1\n", 2) == 2;
  ::close(fd);
  return written
             ? "flight recorder: rank " + rank + " asked to dump to " + sanitize_line(dump_to, 200)
             : "flight recorder: " + sanitize_line(pipe, 200) + ": write failed";
}

namespace {

// Whether no one but root can change the directory `dir` or any directory above it: a file
// there was put by root (a pyenv or conda tree of root's, not a user's). A sticky directory
// (/tmp) may be writable by all: no one can replace root's entry in it.
bool only_root_writes(const std::string& dir) {
  std::string path = dir;
  bool top = true;
  while (!path.empty()) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0) return false;
    bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (others_write && (top || !(st.st_mode & S_ISVTX))) return false;
    top = false;
    if (path == "/") return true;
    auto slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return false;
}

}  // namespace

GdbIdentity gdb_identity_for(int pid, bool privileged) {
  // Unprivileged, llmwatch attaches only to its own user's processes: what it loads, that
  // user could run anyway.
  if (!privileged) return {{}, "/"};
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) return {{}, kSystemGdbDirs};
  // A user's process is dumped as that user (setpriv, util-linux): its gdb scripts, a pyenv's
  // python3.11-gdb.py or a library's -gdb.py, run with the rights they already have.
  if (st.st_uid != 0)
    return {{"setpriv", "--reuid=" + std::to_string(st.st_uid),
             "--regid=" + std::to_string(st.st_gid), "--clear-groups", "--"},
            "/"};
  // Root's own process, dumped as root: only what the system and root installed.
  std::string safe = kSystemGdbDirs;
  std::string exe = read_link("/proc/" + std::to_string(pid) + "/exe");
  if (auto slash = exe.rfind('/');
      slash != std::string::npos && slash > 0 && only_root_writes(exe.substr(0, slash)))
    safe += ":" + exe.substr(0, slash);
  return {{}, safe};
}

std::vector<std::string> gdb_batch_argv(int pid, const std::vector<std::string>& commands) {
  GdbIdentity as = gdb_identity_for(pid, ::geteuid() == 0);
  std::vector<std::string> argv = as.prefix;
  // Never a script a user can write in a process with more rights than that user (#26.7:
  // root ran gdb with "safe-path /", so a -gdb.py beside a job's library ran as root on
  // every node of a hung job), nor a local .gdbinit.
  // The program named before -p: gdb reads its symbols (python3.11-dbg's, the most it reads for
  // a plain interpreter) before it attaches, not while the process is stopped: a rank's pause
  // went from 2.0-2.3 s to 1.1 s (bench/look_cost.py, one gdb a core). /proc's link opens the very
  // file the process runs, in its own mount namespace or deleted since.
  const std::string id = std::to_string(pid);
  argv.insert(argv.end(), {"gdb", "/proc/" + id + "/exe", "-p", id, "-batch", "-nx", "-iex",
                           "set auto-load safe-path " + as.safe_path, "-iex",
                           "set auto-load local-gdbinit off"});
  for (const auto& command : commands) argv.insert(argv.end(), {"-ex", command});
  return argv;
}

std::string process_comm(int pid) {
  return std::string(trim(read_all("/proc/" + std::to_string(pid) + "/comm")));
}

bool dumps_with_py_spy() {
  return on_path("py-spy");
}

ProcessStack stack_from_output(int pid, const ProcessResult& r, const std::string& tool) {
  ProcessStack s;
  s.pid = pid;
  s.comm = process_comm(pid);
  // gdb prints its own chatter first; the stack starts at CPython's "Traceback" line.
  std::string text = r.out;
  if (auto at = text.find(kPyBtStart); at != std::string::npos) text = text.substr(at);
  if (!r.ok() && innermost_frame(text).empty())
    text = r.describe(tool + " -p " + std::to_string(pid)) + "\n" + text;
  s.text = truncate_utf8(valid_utf8(text), kMaxDump);
  s.innermost = innermost_frame(s.text);
  return s;
}

ProcessStack dump_python_stack(int pid, Seconds timeout) {
  ProcessSpec spec;
  if (dumps_with_py_spy()) {
    spec.argv = gdb_identity_for(pid, ::geteuid() == 0).prefix;
    spec.argv.insert(spec.argv.end(), {"py-spy", "dump", "--native", "--pid", std::to_string(pid)});
  } else {
    spec.argv = gdb_batch_argv(pid, {"py-bt"});
  }
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  spec.max_output = kMaxDump;
  return stack_from_output(pid, run_process(spec), spec.argv[0]);
}

ProcessStack rank_forensics(int pid, Seconds timeout) {
  std::string recorder = trigger_flight_recorder(pid);
  ProcessStack s = dump_python_stack(pid, timeout);
  if (!recorder.empty()) s.text = recorder + "\n" + s.text;
  return s;
}

std::string innermost_frame(const std::string& dump) {
  auto frames = python_frames(dump);
  return frames.empty() ? "" : frames.front();
}

std::vector<std::string> python_frames(const std::string& dump) {
  std::vector<std::string> out;
  for (const auto& raw : split(dump, '\n')) {
    std::string_view line = trim(raw);
    // py-bt: File "/x/train.py", line 4, in allreduce_wait
    if (line.rfind("File \"", 0) == 0) {
      auto q = line.find('"', 6);
      auto ln = line.find(", line ");
      auto in = line.find(", in ");
      if (q == std::string_view::npos || ln == std::string_view::npos ||
          in == std::string_view::npos || in < ln)
        continue;
      std::string file(line.substr(6, q - 6));
      file = file.substr(file.rfind('/') + 1);
      std::string no(line.substr(ln + 7, in - ln - 7));
      out.push_back(std::string(line.substr(in + 5)) + " (" + file + ":" + no + ")");
      continue;
    }
    // py-spy: "    allreduce_wait (train.py:4)"; its thread headers have no parentheses.
    if (!line.empty() && line.back() == ')' && line.find(" (") != std::string_view::npos &&
        line.find(".py:") != std::string_view::npos && line.rfind("Thread", 0) != 0) {
      std::string frame(line);
      auto open = frame.find(" (");
      auto path = frame.substr(open + 2, frame.size() - open - 3);
      out.push_back(frame.substr(0, open) + " (" + path.substr(path.rfind('/') + 1) + ")");
    }
  }
  return out;
}

std::vector<std::string> training_frames(const std::string& dump) {
  // py-spy prints every thread under a header ("Thread 4242 (idle): \"MainThread\""); gdb's
  // py-bt only the thread it stopped in, the main one.
  if (dump.find("\"MainThread\"") == std::string::npos) return python_frames(dump);
  std::string main;
  bool in_main = false;
  for (const auto& line : split(dump, '\n')) {
    if (line.rfind("Thread ", 0) == 0) in_main = line.find("\"MainThread\"") != std::string::npos;
    if (in_main) main += line + "\n";
  }
  return python_frames(main);
}

namespace {

// Whether a dump says what its processes are to their ranks (one taken before stop 82 does not):
// it marks a process a rank.
bool marks_ranks(const std::vector<ProcessStack>& stacks) {
  return std::any_of(stacks.begin(), stacks.end(),
                     [](const ProcessStack& s) { return s.role == "rank"; });
}

// The training frames of each process of a dump whose frames speak for the ranks: not one it
// marks as no rank's, where it marks any a rank.
std::map<std::pair<std::string, int>, std::vector<std::string>> ranks_frames(
    const std::vector<ProcessStack>& stacks) {
  const bool marked = marks_ranks(stacks);
  std::map<std::pair<std::string, int>, std::vector<std::string>> out;
  for (const auto& s : stacks)
    if (!marked || s.role != "other") out[{s.node, s.pid}] = training_frames(s.text);
  return out;
}

}  // namespace

bool shows_training_frames(const std::vector<ProcessStack>& stacks) {
  const auto frames = ranks_frames(stacks);
  return std::any_of(frames.begin(), frames.end(), [](const auto& f) { return !f.second.empty(); });
}

bool stacks_moved(const std::vector<ProcessStack>& before, const std::vector<ProcessStack>& after) {
  const auto then = ranks_frames(before);
  for (const auto& [process, frames] : ranks_frames(after)) {
    auto it = then.find(process);
    // Only a rank's training thread seen in both dumps can prove movement (#26.9: a logging
    // thread that ticks, or a process one srun missed, disproved real hangs). A process seen
    // in one dump only, or with no frames, is unknown: no evidence either way.
    if (it == then.end()) continue;
    if (!frames.empty() && !it->second.empty() && frames != it->second) return true;
  }
  return false;
}

std::string format_stacks(const std::vector<ProcessStack>& stacks) {
  std::string out;
  for (const auto& s : stacks)
    out += std::string(kHeader) + "node=" + s.node + " pid=" + std::to_string(s.pid) +
           (s.role.empty() ? "" : " role=" + s.role) + " comm=" + s.comm + " ===\n" + s.text +
           (ends_with(s.text, "\n") ? "" : "\n");
  return out;
}

std::vector<ProcessStack> parse_stacks(const std::string& text) {
  std::vector<ProcessStack> out;
  for (const auto& line : split(text, '\n')) {
    if (line.rfind(kHeader, 0) == 0) {
      ProcessStack s;
      for (const auto& field : split(line.substr(std::string(kHeader).size()), ' ')) {
        auto eq = field.find('=');
        if (eq == std::string::npos) continue;
        std::string key = field.substr(0, eq), value = field.substr(eq + 1);
        if (key == "node") s.node = value;
        if (key == "pid") s.pid = std::atoi(value.c_str());
        if (key == "role") s.role = value;
        if (key == "comm") s.comm = value;
      }
      out.push_back(std::move(s));
    } else if (!out.empty()) {
      out.back().text += line + "\n";
    }
  }
  for (auto& s : out) s.innermost = innermost_frame(s.text);
  return out;
}

std::string summarize_stacks(const std::vector<ProcessStack>& stacks) {
  // A node where `llmwatch stacks` found no Python process of the job answers with pid 0: a
  // node to name, not a process to count.
  std::vector<std::string> none_on;
  std::map<std::string, std::vector<const ProcessStack*>> groups;
  std::size_t processes = 0, workers = 0, others = 0;
  // Where the dump marks its ranks, the groups are theirs (the odd one out is a rank; a node's
  // 64 DataLoader workers or its torchrun agent would crowd it out), and the rest are counted.
  const bool marked = marks_ranks(stacks);
  for (const auto& s : stacks) {
    if (s.pid <= 0) {
      none_on.push_back(s.node);
      continue;
    }
    if (marked && s.role != "rank") {
      ++(s.role == "worker" ? workers : others);
      continue;
    }
    ++processes;
    groups[s.innermost.empty() ? "no Python stack" : s.innermost].push_back(&s);
  }
  if (processes == 0)
    return none_on.empty() ? "no Python process found"
                           : "no Python process found on " + join(none_on, ", ");
  std::vector<std::pair<std::string, std::vector<const ProcessStack*>>> order(groups.begin(),
                                                                              groups.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string out = std::to_string(processes) + (processes == 1 ? " process: " : " processes: ");
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [frame, members] = order[i];
    out += (i ? "; " : "") + std::to_string(members.size()) + " in " + frame;
    if (members.size() == 1)
      out += " [" + members[0]->node + " pid " + std::to_string(members[0]->pid) + "]";
  }
  if (workers + others > 0) {
    out += "; besides the ranks, ";
    if (workers) out += std::to_string(workers) + (workers == 1 ? " worker" : " workers");
    if (workers && others) out += " and ";
    if (others)
      out += std::to_string(others) + (others == 1 ? " process" : " processes") + " of no rank";
  }
  if (!none_on.empty()) out += "; no Python process on " + join(none_on, ", ");
  return out;
}

}  // namespace llmwatch
