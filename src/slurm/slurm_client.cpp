#include "slurm/slurm_client.h"

#include <spdlog/spdlog.h>

#include "slurm/slurm_text.h"
#include "util/strings.h"

namespace llmwatch {

SlurmClient::SlurmClient(SlurmSettings settings) : settings_(std::move(settings)) {
  text_mode_ = settings_.format == "text";
}

ProcessResult SlurmClient::run(const std::string& tool, std::vector<std::string> args,
                               const std::map<std::string, std::string>& env,
                               std::size_t max_output, bool inherit_environment,
                               std::function<void(std::string_view)> on_out) {
  ProcessSpec spec;
  spec.on_out = std::move(on_out);
  spec.max_output = max_output;
  spec.inherit_environment = inherit_environment;
  spec.argv.push_back(settings_.bin_dir.empty() ? tool : settings_.bin_dir + "/" + tool);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.timeout);
  spec.env = env;
  ++calls_;
  return run_process(spec);
}

namespace {

// An old squeue/sinfo that has no --json says so on stderr.
bool json_unsupported(const ProcessResult& r) {
  return r.started && !r.timed_out && r.exit_code != 0 &&
         (r.err.find("unrecognized option") != std::string::npos ||
          r.err.find("invalid option") != std::string::npos);
}

}  // namespace

// JSON first, read as it is printed (never cut, never held whole: `reader` takes the
// pieces); on a Slurm without --json (and format = "auto") the explicit text format from
// then on, as after a JSON answer too big to be worth its CPU (that answer is still used).
// Either way a failure is an error naming the command, never an empty answer.
template <class Parse, class Reader>
Parse SlurmClient::read(const std::string& tool, Reader& reader, std::vector<std::string> text_args,
                        const std::function<Parse(std::string_view)>& parse_text) {
  if (!text_mode_) {
    auto r = run(tool, {"--json"}, {}, 1u << 20, false,
                 [&reader](std::string_view piece) { reader.feed(piece); });
    if (json_unsupported(r) && settings_.format == "auto") {
      text_mode_ = true;
    } else {
      Parse out = reader.finish();
      if (!r.ok()) {
        Parse failed;  // what a failed command printed is never used
        failed.error = r.describe(tool + " --json");
        return failed;
      }
      if (!out.ok()) out.error = tool + " --json: " + out.error;
      if (out.ok() && reader.bytes() > kJsonTooBig && settings_.format == "auto") {
        // A JSON document this big costs a second of CPU every cycle (100,000 jobs are
        // ~240 MiB in 22.05's shape); the text format carries what llmwatch needs in 4%.
        spdlog::warn("{} --json printed more than {} MiB: using the text format from now on", tool,
                     kJsonTooBig >> 20);
        text_mode_ = true;
      }
      return out;
    }
  }
  auto r = run(tool, std::move(text_args), {}, kTextCap);
  Parse out;
  if (!r.ok()) return out.error = r.describe(tool), out;
  if (r.out_truncated)
    return out.error = tool + ": output over " + std::to_string(kTextCap >> 20) +
                       " MiB was cut; not trusted",
           out;
  out = parse_text(r.out);
  if (!out.ok()) out.error = tool + ": " + out.error;
  return out;
}

SqueueParse SlurmClient::queue() {
  const JobFilter* f = filter();  // nullptr: keep every job
  SqueueJsonReader reader(f);
  return read<SqueueParse>("squeue", reader,
                           // -t all: ended jobs too, while Slurm still lists them (MinJobAge), as
                           // --json does; their final state is the first evidence of a post-mortem.
                           {"-h", "-a", "-t", "all", "-o", kSqueueTextFormat},
                           [f](std::string_view t) { return parse_squeue_text(t, f); });
}

SqueueParse SlurmClient::tasks_named(const std::string& name, const std::string& user) {
  std::vector<std::string> args = {"-h", "-a", "-t", "all", "--name=" + name};
  if (!user.empty()) args.push_back("--user=" + user);
  args.insert(args.end(), {"-o", kSqueueTextFormat});
  auto r = run("squeue", args, {}, kTextCap);
  SqueueParse out;
  const std::string what = "squeue --name for the tasks of " + name;
  if (!r.ok()) return out.error = r.describe(what), out;
  if (r.out_truncated) return out.error = what + ": output was cut; not trusted", out;
  out = parse_squeue_text(r.out);
  if (!out.ok()) out.error = what + ": " + out.error;
  return out;
}

namespace {
// sinfo's JSON (14 MiB at 16,384 nodes, every node kept) is parsed once whole.
struct WholeSinfoJson {
  std::string text;
  void feed(std::string_view piece) { text += piece; }
  std::size_t bytes() const { return text.size(); }
  SinfoParse finish() { return parse_sinfo_json(text); }
};
}  // namespace

SinfoParse SlurmClient::nodes() {
  WholeSinfoJson reader;
  return read<SinfoParse>("sinfo", reader, {"-N", "-o", kSinfoTextFormat},
                          [](std::string_view t) { return parse_sinfo_text(t); });
}

std::map<std::string, std::string> SlurmClient::show_job(const std::string& job_id) {
  auto r = run("scontrol", {"show", "job", job_id});
  if (!r.ok()) return {};
  auto records = parse_scontrol_show(r.out);
  return records.empty() ? std::map<std::string, std::string>{} : records.front();
}

Result<std::string> SlurmClient::batch_script(const std::string& job_id) {
  auto r = run("scontrol", {"write", "batch_script", job_id, "-"}, {}, kTextCap);
  const std::string what = "scontrol write batch_script " + job_id;
  if (!r.ok()) return Error{r.describe(what)};
  if (r.out_truncated) return Error{what + ": over " + std::to_string(kTextCap >> 20) + " MiB"};
  // scontrol says "job script retrieval failed" on its stderr and still exits 0.
  if (r.out.rfind("#!", 0) != 0)
    return Error{what + ": no script (" + sanitize_line(r.err.empty() ? r.out : r.err, 120) + ")"};
  return r.out;
}

Result<JobDetails> SlurmClient::job_details(const std::vector<std::string>& task_ids) {
  if (task_ids.empty()) return JobDetails{};
  std::string ids;
  for (const auto& id : task_ids) ids += (ids.empty() ? "" : ",") + id;
  auto r = run("squeue", {"-h", "-t", "all", "-j", ids, "-O", kJobDetailsFormat}, {}, kTextCap);
  // Every task gone since the queue was read: squeue fails on ids it no longer knows.
  if (r.started && !r.timed_out && r.err.find("Invalid job id") != std::string::npos)
    return JobDetails{};
  if (!r.ok())
    return Error{r.describe("squeue -O for " + std::to_string(task_ids.size()) + " new tasks")};
  if (r.out_truncated) return Error{"squeue -O for new tasks: output was cut; not trusted"};
  return parse_job_details(r.out);
}

std::map<std::string, std::string> SlurmClient::accounting(const std::string& job_id,
                                                           std::int64_t started) {
  auto r = run("sacct",
               {"--jobs=" + job_id, "--allusers", "--allocations", "--duplicates", "--noheader",
                "--parsable2", "--format=" + std::string(kSacctFields)},
               {{"SLURM_TIME_FORMAT", "%s"}}, 1u << 20);
  if (!r.ok() || r.out_truncated) return {};
  return sacct_record_of(parse_sacct(r.out), job_id, started);
}

std::map<std::string, std::string> SlurmClient::show_node(const std::string& node) {
  auto r = run("scontrol", {"show", "node", node});
  if (!r.ok()) return {};
  auto records = parse_scontrol_show(r.out);
  return records.empty() ? std::map<std::string, std::string>{} : records.front();
}

Status SlurmClient::update_node(const std::string& node, const std::string& state,
                                const std::string& reason) {
  // One argv element per assignment: a reason with spaces or quotes needs no shell quoting.
  std::vector<std::string> args = {"update", "nodename=" + node, "state=" + state};
  if (!reason.empty()) args.push_back("reason=" + reason);
  auto r = run("scontrol", args);
  if (r.ok()) return {};
  return Error{r.describe("scontrol update nodename=" + node + " state=" + state)};
}

Status SlurmClient::reboot_node(const std::string& node, const std::string& reason) {
  auto r = run("scontrol", {"reboot", "ASAP", "nextstate=RESUME", "reason=" + reason, node});
  if (r.ok()) return {};
  return Error{r.describe("scontrol reboot ASAP " + node)};
}

ProcessResult SlurmClient::run_step(const std::vector<std::string>& args, Seconds timeout) {
  ProcessSpec spec;
  spec.argv.push_back(settings_.bin_dir.empty() ? "srun" : settings_.bin_dir + "/srun");
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  ++calls_;
  return run_process(spec);
}

Status SlurmClient::cancel(const std::string& job_id, const std::string& signal) {
  std::vector<std::string> args;
  if (!signal.empty()) args.push_back("--signal=" + signal);
  args.push_back(job_id);
  auto r = run("scancel", args);
  if (r.ok()) return {};
  return Error{r.describe("scancel " + job_id)};
}

SubmitResult SlurmClient::submit(const std::vector<std::string>& sbatch_args,
                                 const std::map<std::string, std::string>& env, bool own_job) {
  std::vector<std::string> args = {"--parsable"};
  args.insert(args.end(), sbatch_args.begin(), sbatch_args.end());
  auto r = run("sbatch", args, env, 16u << 20, own_job);
  SubmitResult out;
  if (!r.ok()) return out.error = r.describe("sbatch"), out;
  // --parsable prints "ID" or "ID;cluster".
  std::string text(trim(r.out));
  auto digits = std::min(text.find_first_not_of("0123456789"), text.size());
  if (digits > 0 && to_int64(std::string_view(text).substr(0, digits)))
    out.job_id = to_int64(std::string_view(text).substr(0, digits));
  else
    out.error = "sbatch: unexpected output '" + sanitize_line(text, 100) + "'";
  return out;
}

Status SlurmClient::control(const std::string& verb, const std::string& job_id) {
  auto r = run("scontrol", {verb, job_id});
  if (r.ok()) return {};
  return Error{r.describe("scontrol " + verb + " " + job_id)};
}

Status SlurmClient::set_excluded_nodes(const std::string& job_id, const std::string& nodes) {
  const std::string field = "ExcNodeList=" + nodes;
  auto r = run("scontrol", {"update", "JobId=" + job_id, field});
  if (r.ok()) return {};
  return Error{r.describe("scontrol update JobId=" + job_id + " " + field)};
}

}  // namespace llmwatch
