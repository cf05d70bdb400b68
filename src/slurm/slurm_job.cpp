#include "slurm/slurm_job.h"

#include <nlohmann/json.hpp>

namespace llmwatch {

std::string SlurmJob::display_id() const {
  if (!is_array()) return std::to_string(job_id);
  if (array_task_id) return std::to_string(array_job_id) + "_" + std::to_string(*array_task_id);
  return std::to_string(array_job_id) + "_[" + array_task_string + "]";
}

namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  // Newer Slurm turns some fields into lists (job_state: ["RUNNING"]); take the first.
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return {};
}

// Integers arrive plain (22.05) or as {"set": true, "number": N} (23.02+).
std::optional<std::int64_t> num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number()) return static_cast<std::int64_t>(it->get<double>());
  if (it->is_object()) {
    auto set = it->find("set");
    auto number = it->find("number");
    if (set != it->end() && set->is_boolean() && !set->get<bool>()) return std::nullopt;
    if (number != it->end() && number->is_number()) return number->get<std::int64_t>();
  }
  return std::nullopt;
}

}  // namespace

SqueueParse parse_squeue_json(std::string_view text) {
  SqueueParse out;
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return out.error = "not valid JSON", out;
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
    return out.error = "no \"jobs\" list in squeue JSON", out;
  // With slurmctld down, 22.05 exits 0 and prints an empty job list plus an error entry:
  // that is "cannot tell", never "no jobs".
  if (auto errors = doc.find("errors"); errors != doc.end() && errors->is_array() && !errors->empty()) {
    const auto& e = (*errors)[0];
    std::string what = e.is_object() ? e.value("description", "") : "";
    if (e.is_object() && e.contains("source")) what += " (" + e.value("source", "") + ")";
    return out.error = "Slurm reported an error: " + (what.empty() ? std::string("unspecified") : what), out;
  }
  for (const auto& j : doc["jobs"]) {
    if (!j.is_object()) continue;
    SlurmJob job;
    auto id = num(j, "job_id");
    if (!id) continue;
    job.job_id = *id;
    job.array_job_id = num(j, "array_job_id").value_or(0);
    job.array_task_id = num(j, "array_task_id");
    job.array_task_string = str(j, "array_task_string");
    job.array_max_tasks = static_cast<int>(num(j, "array_max_tasks").value_or(0));
    job.name = str(j, "name");
    job.user = str(j, "user_name");
    job.account = str(j, "account");
    job.partition = str(j, "partition");
    job.state = str(j, "job_state");
    job.reason = str(j, "state_reason");
    job.nodes = str(j, "nodes");
    job.batch_host = str(j, "batch_host");
    job.std_out = str(j, "standard_output");
    job.std_err = str(j, "standard_error");
    job.command = str(j, "command");
    job.workdir = str(j, "current_working_directory");
    job.submit_time = num(j, "submit_time").value_or(0);
    job.start_time = num(j, "start_time").value_or(0);
    out.jobs.push_back(std::move(job));
  }
  return out;
}

std::string expand_slurm_pattern(const std::string& pattern, const SlurmJob& job) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    size_t j = i + 1;
    int width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j])))
      width = width * 10 + (pattern[j++] - '0');
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
      case '%': out += '%'; break;
      case 'x': out += job.name; break;
      case 'j': out += pad(std::to_string(job.job_id)); break;
      case 'A': out += pad(array_id); break;
      case 'a': out += pad(task); break;
      case 'u': out += job.user; break;
      case 'N': out += job.batch_host; break;
      case 'J': out += pad(std::to_string(job.job_id)); break;
      default: out += pattern.substr(i, j - i + 1); break;  // unknown: keep as written
    }
    i = j;
  }
  return out;
}

std::string job_stdout_path(const SlurmJob& job) {
  std::string pattern = job.std_out;
  if (pattern.empty()) pattern = job.array_task_id ? "slurm-%A_%a.out" : "slurm-%j.out";
  if (pattern[0] != '/' && !job.workdir.empty()) pattern = job.workdir + "/" + pattern;
  return expand_slurm_pattern(pattern, job);
}

}  // namespace llmwatch
