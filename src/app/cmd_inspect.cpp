// `inspect KIND FILE`: runs one parser on a captured output and prints what it understood.
// It is how a user checks that llmwatch reads their cluster right.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands.h"
#include "probes/gpu/dcgmi.h"
#include "probes/gpu/gpu_record.h"
#include "probes/gpu/xid_line.h"
#include "probes/training_log.h"
#include "rules/job_progress.h"
#include "rules/training_rules.h"
#include "rules/xid_table.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_text.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/text.h"
#include "views/job_view.h"

namespace llmwatch {

const char* const kInspectKinds =
    "squeue-json, squeue-text, sinfo-json, sinfo-text, scontrol-show, hostlist, training-log, "
    "kmsg, nvidia-smi-csv, nvidia-smi-q, nvidia-smi-xml, nvlink, dcgmi-diag, dcgmi-health";

namespace {

nlohmann::json jobs_json(const std::vector<SlurmJob>& jobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& j : jobs)
    out.push_back({{"id", j.display_id()},
                   {"job_id", j.job_id},
                   {"name", j.name},
                   {"user", j.user},
                   {"state", j.state},
                   {"reason", j.reason},
                   {"nodes", j.nodes},
                   {"partition", j.partition},
                   {"stdout", job_stdout_path(j)},
                   {"array_max_tasks", j.array_max_tasks}});
  return out;
}

nlohmann::json nodes_json(const std::vector<SlurmNode>& nodes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : nodes)
    out.push_back({{"name", n.name},
                   {"state", n.describe()},
                   {"drained", n.drained()},
                   {"down", n.down()},
                   {"reason", n.reason}});
  return out;
}

nlohmann::json inspect_training_log(const std::string& text, const JobSettings& facts) {
  TrainingLogParser parser;
  nlohmann::json steps = nlohmann::json::array();
  JobProgress progress;
  double clock = 0;  // the log's own time: the sum of printed step times
  int line_no = 0;
  for (const auto& line : split(text, '\n')) {
    ++line_no;
    LogLine l = parser.parse(line);
    if (l.step_time) clock += *l.step_time;
    apply_lines(progress, {line}, parser, clock);
    nlohmann::json j = {{"line", line_no}};
    if (l.step) j["step"] = *l.step;
    if (l.max_steps) j["max_steps"] = *l.max_steps;
    if (l.step_time) j["step_time_s"] = *l.step_time;
    if (l.loss)
      j["loss"] = std::isfinite(*l.loss) ? nlohmann::json(*l.loss)
                                         : nlohmann::json(std::to_string(*l.loss));
    if (l.consumed_samples) j["consumed_samples"] = *l.consumed_samples;
    if (l.global_batch_size) j["global_batch_size"] = *l.global_batch_size;
    if (l.peak_memory_bytes) j["peak_memory_bytes"] = *l.peak_memory_bytes;
    if (l.save_seconds) j["save_s"] = *l.save_seconds;
    if (l.load_seconds) j["load_s"] = *l.load_seconds;
    if (l.checkpoint_start) j["checkpoint"] = "start";
    if (l.checkpoint_end) j["checkpoint"] = "end";
    if (!l.crash.empty()) j["crash"] = l.crash;
    if (j.size() > 1) steps.push_back(j);
  }
  nlohmann::json summary = job_figures(facts, progress, clock);
  summary.erase("last_checkpoint_age_s");  // meaningless for a file
  auto findings = evaluate_training(facts, "inspect", progress);
  nlohmann::json health = nlohmann::json::array();
  for (const auto& f : findings) health.push_back({{"kind", f.kind}, {"summary", f.summary}});
  return {{"steps", steps}, {"summary", summary}, {"findings", health}};
}

nlohmann::json gpus_json(const GpuParse& p) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [k, _] : g.fields) {
      // What llmwatch makes of each value: a number, a flag, text, or null for "no value".
      if (auto n = g.number(k); n && k != "pci.bus_id" && k != "uuid" && k != "name")
        fields[k] = *n;
      else if (auto f = g.flag(k))
        fields[k] = *f;
      else if (auto t = g.text(k))
        fields[k] = *t;
      else
        fields[k] = nullptr;
    }
    out.push_back({{"index", g.index}, {"bus_id", g.bus_id()}, {"fields", fields}});
  }
  return out;
}

// Every Xid line in a kernel log (any form), with the verdict the built-in table gives it.
nlohmann::json xids_json(const std::string& text) {
  auto table = load_xid_table("");
  nlohmann::json out = nlohmann::json::array();
  int line_no = 0;
  for (const auto& line : split(text, '\n')) {
    ++line_no;
    auto e = parse_xid_line(line);
    if (!e) continue;
    nlohmann::json j = {{"line", line_no}, {"xid", e->xid}, {"bus_id", e->bus_id},
                        {"when", e->when}, {"pid", e->pid}, {"process", e->process},
                        {"text", e->text}};
    if (e->kmsg_seq) j["kmsg_seq"] = *e->kmsg_seq;
    if (e->new_recovery_code) j["new_recovery_action"] = e->new_recovery_action;
    if (table.table) {
      const auto& rule = table.table->rule(e->xid);
      j["action"] = rule.action;
      j["meaning"] = rule.meaning;
    }
    out.push_back(j);
  }
  return out;
}

nlohmann::json dcgmi_json(const DcgmiDiag& d) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : d.results)
    results.push_back({{"category", r.category},
                       {"test", r.test},
                       {"gpu", r.gpu},
                       {"status", r.status},
                       {"message", r.message},
                       {"error_severity", r.severity}});
  return {{"version", d.version},
          {"ran", d.ran()},
          {"not_run", d.not_run},
          {"results", results},
          {"figures", d.figures}};
}

}  // namespace

int cmd_inspect(const std::string& kind, const std::string& file, const JobSettings& facts) {
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    auto text = read_file_or_why(file);
    if (!text) {
      std::cerr << "llmwatch inspect: " << text.error() << "\n";
      return kExitUsage;
    }
    ss << *text;
  }
  std::string error;
  nlohmann::json out;
  const std::string text = ss.str();
  auto take = [&](const auto& parsed, auto to_json) {
    if (!parsed.ok())
      error = parsed.error;
    else
      out = to_json(parsed);
  };
  if (kind == "squeue-json")
    take(parse_squeue_json(text), [](const SqueueParse& p) { return jobs_json(p.jobs); });
  else if (kind == "squeue-text")
    take(parse_squeue_text(text), [](const SqueueParse& p) { return jobs_json(p.jobs); });
  else if (kind == "sinfo-json")
    take(parse_sinfo_json(text), [](const SinfoParse& p) { return nodes_json(p.nodes); });
  else if (kind == "sinfo-text")
    take(parse_sinfo_text(text), [](const SinfoParse& p) { return nodes_json(p.nodes); });
  else if (kind == "scontrol-show")
    out = parse_scontrol_show(text);
  else if (kind == "hostlist") {
    auto hosts = expand_hostlist(trim(text));
    if (hosts)
      out = {{"hosts", *hosts}, {"compressed", compress_hostlist(*hosts)}};
    else
      error = hosts.error();
  } else if (kind == "training-log")
    out = inspect_training_log(text, facts);
  else if (kind == "kmsg")
    out = xids_json(text);
  else if (kind == "nvidia-smi-csv")
    take(parse_nvidia_smi_csv(text), gpus_json);
  else if (kind == "nvidia-smi-q")
    take(parse_nvidia_smi_q(text), gpus_json);
  else if (kind == "nvidia-smi-xml")
    take(parse_nvidia_smi_xml(text), gpus_json);
  else if (kind == "nvlink") {
    out = nlohmann::json::array();
    for (const auto& l : parse_nvlink_status(text))
      out.push_back({{"gpu", l.index},
                     {"links", l.links},
                     {"inactive", l.inactive},
                     {"all_inactive", l.all_inactive}});
  } else if (kind == "dcgmi-diag")
    out = dcgmi_json(parse_dcgmi_diag(text));
  else if (kind == "dcgmi-health") {
    auto h = parse_dcgmi_health(text);
    out = {{"overall", h ? nlohmann::json(*h) : nlohmann::json(nullptr)}};
  } else {
    std::cerr << "llmwatch inspect: unknown kind '" << kind << "' (" << kInspectKinds << ")\n";
    return kExitUsage;
  }
  if (!error.empty()) {
    std::cerr << "llmwatch inspect " << kind << ": " << file << ": " << error << "\n";
    return kExitUsage;
  }
  std::cout << json_dump(out, 2) << "\n";
  return kExitOk;
}

}  // namespace llmwatch
