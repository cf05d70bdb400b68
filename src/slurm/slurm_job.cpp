#include "slurm/slurm_job.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "slurm/hostlist.h"
#include "util/identity.h"
#include "util/paths.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {

std::string SlurmJob::control_id() const {
  if (!is_array() || array_task_id || array_task_string.empty()) return display_id();
  return std::to_string(array_job_id) + "_[" +
         array_task_string.substr(0, array_task_string.find('%')) + "]";
}

std::string SlurmJob::display_id() const {
  if (!is_array()) return std::to_string(job_id);
  if (array_task_id) return std::to_string(array_job_id) + "_" + std::to_string(*array_task_id);
  return std::to_string(array_job_id) + "_[" + array_task_string + "]";
}

// parse_squeue_json: slurm_json_fast.cpp (simdjson on demand).

bool SlurmJob::launch_failed() const {
  // Slurm's words (job_mgr.c), in the reason (text squeue) or beside it (JSON).
  constexpr std::string_view kWords = "launch failed requeued held";
  return pending() && (reason == kWords || reason_detail == kWords);
}

std::string SlurmJob::reason_shown() const {
  // As squeue's text prints it (%r): Slurm's words where it has them, which are richer
  // ("ReqNodeNotAvail, UnavailableNodes:node-1"), so both formats read the same.
  return reason_detail.empty() ? reason : reason_detail;
}

std::string slurm_job_to_json(const SlurmJob& j) {
  nlohmann::json out = {{"job_id", j.job_id},
                        {"array_job_id", j.array_job_id},
                        {"array_task_string", j.array_task_string},
                        {"array_max_tasks", j.array_max_tasks},
                        {"name", j.name},
                        {"user_name", j.user},
                        {"group_name", j.group},
                        {"account", j.account},
                        {"partition", j.partition},
                        {"job_state", j.state},
                        {"state_reason", j.reason},
                        {"state_description", j.reason_detail},
                        {"required_nodes", j.required_nodes},
                        {"restart_cnt", j.restarts},
                        {"nodes", j.nodes},
                        {"batch_host", j.batch_host},
                        {"standard_output", j.std_out},
                        {"standard_error", j.std_err},
                        {"command", j.command},
                        {"current_working_directory", j.workdir},
                        {"submit_time", j.submit_time},
                        {"start_time", j.start_time},
                        {"node_count", j.node_count},
                        {"tres_alloc_str", j.gpus > 0 ? "gres/gpu=" + std::to_string(j.gpus) : ""},
                        {"time_limit", j.time_limit_minutes}};
  if (j.array_task_id) out["array_task_id"] = *j.array_task_id;
  if (j.excluded_nodes) out["excluded_nodes"] = *j.excluded_nodes;
  return json_dump(nlohmann::json{{"jobs", {out}}});
}

std::optional<SlurmJob> slurm_job_from_json(const std::string& text) {
  auto parsed = parse_squeue_json(text);
  if (!parsed.ok() || parsed.jobs.size() != 1) return std::nullopt;
  return parsed.jobs[0];
}

int gpus_in_tres(std::string_view tres) {
  // A count as Slurm prints it (a typed count may be listed beside the plain one); the plain one
  // is the total, else the typed ones add up.
  std::optional<std::int64_t> plain;
  std::int64_t typed = 0;
  for (const auto& item : split(tres, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string_view key(item.data(), eq);
    auto n = to_int64(std::string_view(item).substr(eq + 1));
    if (!n || *n < 0) continue;
    const std::int64_t count = std::min<std::int64_t>(*n, 1 << 20);
    if (key == "gres/gpu")
      plain = count;
    else if (key.starts_with("gres/gpu:"))
      typed += count;
  }
  return static_cast<int>(std::min<std::int64_t>(plain.value_or(typed), 1 << 20));
}

std::string owner_group(const SlurmJob& job) {
  if (!job.group.empty() && (job.group != "root" || job.user == "root")) return job.group;
  if (auto ids = lookup_user(job.user)) return std::to_string(ids->gid);
  return "";
}

Result<std::vector<std::string>> owner_identity_args(const SlurmJob& job) {
  if (!running_as_root() || job.user == "root") return std::vector<std::string>{};
  if (job.user.empty())
    return Error{"the owner of " + job.display_id() +
                 " is unknown: llmwatch runs as root and "
                 "never acts as root on someone's behalf"};
  std::string group = owner_group(job);
  if (group.empty())
    return Error{"the group of " + job.display_id() + "'s owner " + job.user +
                 " is unknown: llmwatch never acts as root's group on someone's behalf"};
  return std::vector<std::string>{"--uid=" + job.user, "--gid=" + group};
}

std::string expand_slurm_pattern(const std::string& pattern, const SlurmJob& job) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    size_t j = i + 1;
    // Slurm pads to at most 10 digits; a user's "%3000000000j" must neither overflow nor
    // allocate gigabytes of zeros.
    constexpr int kMaxWidth = 10;
    int width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j])))
      width = std::min(kMaxWidth, width * 10 + (pattern[j++] - '0'));
    if (j == pattern.size()) {
      out += pattern.substr(i);
      break;
    }
    auto pad = [width](std::string s) {
      return s.size() < static_cast<size_t>(width) ? std::string(width - s.size(), '0') + s : s;
    };
    // Slurm prints 4294967294 (NO_VAL) for %a of a job that is not an array task.
    std::string task = job.array_task_id ? std::to_string(*job.array_task_id) : "4294967294";
    std::string array_id = std::to_string(job.is_array() ? job.array_job_id : job.job_id);
    switch (pattern[j]) {
      case '%':
        out += '%';
        break;
      case 'x':
        out += job.name;
        break;
      case 'j':
        out += pad(std::to_string(job.job_id));
        break;
      case 'A':
        out += pad(array_id);
        break;
      case 'a':
        out += pad(task);
        break;
      case 'u':
        out += job.user;
        break;
      case 'N':
        out += job.batch_host;
        break;
      case 'J':
        out += pad(std::to_string(job.job_id));
        break;
      default:
        out += pattern.substr(i, j - i + 1);
        break;  // unknown: keep as written
    }
    i = j;
  }
  return out;
}

namespace {
// A --output or --error pattern as the file it names: relative ones are in the job's workdir.
std::string output_file(std::string pattern, const SlurmJob& job) {
  if (pattern[0] != '/' && !job.workdir.empty()) pattern = job.workdir + "/" + pattern;
  return expand_slurm_pattern(pattern, job);
}
}  // namespace

std::string job_stdout_path(const SlurmJob& job) {
  if (job.std_out.empty())
    return output_file(job.array_task_id ? "slurm-%A_%a.out" : "slurm-%j.out", job);
  return output_file(job.std_out, job);
}

std::string run_key_file_stem(std::string run_key) {
  for (char& c : run_key)
    if (c == '@') c = '-';
  return run_key;
}

std::string job_stderr_path(const SlurmJob& job) {
  if (job.std_err.empty()) return "";
  std::string path = output_file(job.std_err, job);
  return path == job_stdout_path(job) ? "" : path;
}

const SlurmJob* running_task(const std::vector<SlurmJob>& entries) {
  const SlurmJob* ending = nullptr;
  for (const auto& e : entries) {
    if (!e.running()) continue;
    if (!e.ending()) return &e;
    if (!ending) ending = &e;
  }
  return ending;
}

std::vector<std::string> stacks_step_args(const SlurmJob& job) {
  // srun and SLURM_JOB_ID know an array task by its own job id. --label: each node's lines are
  // put back together (slurm/srun_label.h), whatever another node printed meanwhile.
  const std::string id = std::to_string(job.job_id);
  const std::string n = std::to_string(std::max<std::size_t>(1, hosts_in(job.nodes).size()));
  return {"--jobid=" + id,
          "--overlap",
          "--nodes=" + n,
          "--ntasks=" + n,
          "--ntasks-per-node=1",
          "--kill-on-bad-exit=0",
          "--quiet",
          "--label",
          self_exe(),
          "stacks",
          "--job",
          id};
}

}  // namespace llmwatch
