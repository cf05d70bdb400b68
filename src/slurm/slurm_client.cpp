#include "slurm/slurm_client.h"

#include <regex>

#include "util/strings.h"

namespace llmwatch {

ProcessResult SlurmClient::run(const std::string& tool, std::vector<std::string> args,
                               const std::map<std::string, std::string>& env) {
  ProcessSpec spec;
  spec.argv.push_back(settings_.bin_dir.empty() ? tool : settings_.bin_dir + "/" + tool);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.timeout);
  spec.env = env;
  ++calls_;
  return run_process(spec);
}

SqueueParse SlurmClient::queue() {
  auto r = run("squeue", {"--json"});
  if (!r.ok()) {
    SqueueParse out;
    out.error = r.describe("squeue --json");
    return out;
  }
  auto parsed = parse_squeue_json(r.out);
  if (!parsed.ok()) parsed.error = "squeue --json: " + parsed.error;
  return parsed;
}

SinfoParse SlurmClient::nodes() {
  auto r = run("sinfo", {"--json"});
  if (!r.ok()) {
    SinfoParse out;
    out.error = r.describe("sinfo --json");
    return out;
  }
  auto parsed = parse_sinfo_json(r.out);
  if (!parsed.ok()) parsed.error = "sinfo --json: " + parsed.error;
  return parsed;
}

std::string SlurmClient::cancel(const std::string& job_id, const std::string& signal) {
  std::vector<std::string> args;
  if (!signal.empty()) args.push_back("--signal=" + signal);
  args.push_back(job_id);
  auto r = run("scancel", args);
  return r.ok() ? "" : r.describe("scancel " + job_id);
}

SubmitResult SlurmClient::submit(const std::vector<std::string>& sbatch_args,
                                 const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = {"--parsable"};
  args.insert(args.end(), sbatch_args.begin(), sbatch_args.end());
  auto r = run("sbatch", args, env);
  SubmitResult out;
  if (!r.ok()) return out.error = r.describe("sbatch"), out;
  // --parsable prints "ID" or "ID;cluster".
  std::smatch m;
  std::string text(trim(r.out));
  if (std::regex_search(text, m, std::regex(R"(^(\d+))"))) out.job_id = std::stoll(m[1]);
  else out.error = "sbatch: unexpected output '" + sanitize_line(text, 100) + "'";
  return out;
}

std::string SlurmClient::control(const std::string& verb, const std::string& job_id) {
  auto r = run("scontrol", {verb, job_id});
  return r.ok() ? "" : r.describe("scontrol " + verb + " " + job_id);
}

}  // namespace llmwatch
