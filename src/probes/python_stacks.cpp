#include "probes/python_stacks.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "util/strings.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace llmwatch {
namespace {

constexpr size_t kMaxDump = 64 * 1024;  // per process: deep stacks are cut, not the summary
constexpr const char* kHeader = "=== llmwatch-stack ";

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

bool is_python(int pid) {
  return read_all("/proc/" + std::to_string(pid) + "/comm").rfind("python", 0) == 0;
}

}  // namespace

std::optional<std::vector<int>> parse_listpids(const std::string& out) {
  // PID      JOBID    STEPID   LOCALID GLOBALID
  // 1974     2        batch    0       0
  auto lines = split(out, '\n');
  if (lines.empty() || trim(lines[0]).rfind("PID", 0) != 0) return std::nullopt;
  std::vector<int> pids;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream fields(lines[i]);
    std::string first;
    if (!(fields >> first)) continue;
    char* end = nullptr;
    long pid = std::strtol(first.c_str(), &end, 10);
    if (*end || pid <= 0 || pid > std::numeric_limits<int>::max()) return std::nullopt;
    pids.push_back(static_cast<int>(pid));
  }
  return pids;
}

std::vector<int> job_python_processes(const std::string& job_id, const std::string& node) {
  std::vector<int> out;
  // slurmd knows the job's processes on its node (its proctrack container, children included);
  // an environment match alone would also take another cluster's job of the same id on this
  // host (a test cluster, a federation sibling) and miss a rank that cleaned its environment.
  ProcessSpec spec;
  spec.argv = {"scontrol", "listpids", job_id};
  if (!node.empty()) spec.argv.push_back(node);  // names the slurmd where several share a host
  spec.timeout = std::chrono::seconds(10);
  auto listed = run_process(spec);
  if (auto pids = listed.ok() ? parse_listpids(listed.out) : std::nullopt) {
    for (int pid : *pids)
      if (pid != ::getpid() && is_python(pid)) out.push_back(pid);
  } else {
    // No slurmd to ask (run by hand on a node): the job's id in the environment.
    const std::string want = "SLURM_JOB_ID=" + job_id;
    DIR* proc = ::opendir("/proc");
    if (!proc) return out;
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end || pid <= 0 || pid == ::getpid() || !is_python(static_cast<int>(pid))) continue;
      for (const auto& var : split(read_all("/proc/" + std::string(e->d_name) + "/environ"), '\0'))
        if (var == want) {
          out.push_back(static_cast<int>(pid));
          break;
        }
    }
    ::closedir(proc);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ProcessStack dump_python_stack(int pid, Seconds timeout) {
  ProcessStack s;
  s.pid = pid;
  s.comm = std::string(trim(read_all("/proc/" + std::to_string(pid) + "/comm")));
  ProcessSpec spec;
  if (on_path("py-spy"))
    spec.argv = {"py-spy", "dump", "--native", "--pid", std::to_string(pid)};
  else
    spec.argv = {"gdb",  "-p",   std::to_string(pid),         "-batch",
                 "-nx",  "-iex", "set auto-load safe-path /", "-ex",
                 "py-bt"};
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  spec.max_output = kMaxDump;
  auto r = run_process(spec);
  // gdb prints its own chatter first; the stack starts at CPython's "Traceback" line.
  std::string text = r.out;
  if (auto at = text.find("Traceback (most recent call first):"); at != std::string::npos)
    text = text.substr(at);
  if (!r.ok() && innermost_frame(text).empty())
    text = r.describe(spec.argv[0] + " -p " + std::to_string(pid)) + "\n" + text;
  s.text = truncate_utf8(valid_utf8(text), kMaxDump);
  s.innermost = innermost_frame(s.text);
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

bool stacks_moved(const std::vector<ProcessStack>& before, const std::vector<ProcessStack>& after) {
  std::map<std::pair<std::string, int>, std::vector<std::string>> then;
  for (const auto& s : before) then[{s.node, s.pid}] = python_frames(s.text);
  for (const auto& s : after) {
    auto it = then.find({s.node, s.pid});
    // A process of the job seen only now, or one whose frames changed: the run moves. One
    // that is gone proves nothing (it may have died hung).
    if (it == then.end()) return true;
    auto frames = python_frames(s.text);
    if (!frames.empty() && !it->second.empty() && frames != it->second) return true;
  }
  return false;
}

std::string format_stacks(const std::vector<ProcessStack>& stacks) {
  std::string out;
  for (const auto& s : stacks)
    out += std::string(kHeader) + "node=" + s.node + " pid=" + std::to_string(s.pid) +
           " comm=" + s.comm + " ===\n" + s.text + (ends_with(s.text, "\n") ? "" : "\n");
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
  if (stacks.empty()) return "no Python process found";
  std::map<std::string, std::vector<const ProcessStack*>> groups;
  for (const auto& s : stacks)
    groups[s.innermost.empty() ? "no Python stack" : s.innermost].push_back(&s);
  std::vector<std::pair<std::string, std::vector<const ProcessStack*>>> order(groups.begin(),
                                                                              groups.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string out =
      std::to_string(stacks.size()) + (stacks.size() == 1 ? " process: " : " processes: ");
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [frame, members] = order[i];
    out += (i ? "; " : "") + std::to_string(members.size()) + " in " + frame;
    if (members.size() == 1)
      out += " [" + members[0]->node + " pid " + std::to_string(members[0]->pid) + "]";
  }
  return out;
}

}  // namespace llmwatch
