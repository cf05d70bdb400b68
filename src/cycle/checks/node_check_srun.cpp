#include "cycle/checks/node_check_srun.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "cycle/failure_domain.h"
#include "util/paths.h"
#include "util/strings.h"

namespace llmwatch {

std::optional<NodeCheckAsk> ask_in_job(const SlurmJob& task, std::vector<std::string>& errors) {
  std::vector<std::string> placement = {"--overlap", "--jobid=" + std::to_string(task.job_id),
                                        "--ntasks-per-node=1"};
  if (task.node_count > 0) placement.push_back("--nodes=" + std::to_string(task.node_count));
  // Root may not start a step in another user's job ("Access/permission denied"): the step
  // runs as the job's owner, in the job's group (its credential names both).
  auto identity = owner_identity_args(task);
  if (!identity) {
    errors.push_back("node-check in job " + std::to_string(task.job_id) + ": " + identity.error());
    return std::nullopt;
  }
  placement.insert(placement.end(), identity->begin(), identity->end());
  return NodeCheckAsk{std::move(placement), "in job " + std::to_string(task.job_id)};
}

SrunNodeCheck node_check_by_srun(const Config& config, SlurmClient& slurm,
                                 std::vector<std::string> placement, const std::string& what,
                                 Seconds timeout) {
  auto& args = placement;
  // A step run as a job's owner (--uid) can write neither root's results directory nor the
  // node's state: it only prints the report this reads (#28). As root it keeps both.
  bool as_owner = std::any_of(args.begin(), args.end(),
                              [](const std::string& a) { return a.rfind("--uid=", 0) == 0; });
  args.push_back(self_exe());
  if (!config.path.empty() && config.path != "<embedded>")
    args.insert(args.end(), {"--config", config.path});  // a global option: before the verb
  args.insert(args.end(), {"node-check", "--json"});
  if (as_owner) args.push_back("--print-only");
  auto r = slurm.run_step(args, timeout);
  // node-check exits 1-3 for WARN/CRITICAL/UNKNOWN: the documents matter, not the status.
  SrunNodeCheck out;
  for (const auto& line : split(r.out, '\n'))
    if (auto report = NodeReport::from_json(std::string(trim(line))))
      out.reports.push_back(std::move(*report));
  if (out.reports.empty())
    out.error =
        "srun node-check " + what + ": " + r.describe("srun") + " " + sanitize_line(r.err, 200);
  return out;
}

std::vector<SrunNodeCheck> node_checks_by_srun(const Config& config, SlurmClient& slurm,
                                               const TimeBudget& budget,
                                               const std::vector<NodeCheckAsk>& asks) {
  // What one check needs at most: both GPU tools' timeouts, and srun's own start.
  const Seconds want = config.gpu.nvidia_smi_timeout + config.gpu.dcgmi_timeout + Seconds(30);
  std::vector<SrunNodeCheck> out(asks.size());
  boost::asio::thread_pool pool(kParallelNodeChecks);
  for (size_t i = 0; i < asks.size(); ++i)
    boost::asio::post(pool, [&, i] {
      auto timeout = budget.grant(want);
      if (!timeout) {
        out[i].deferred = true;
        out[i].error = "srun node-check " + asks[i].what +
                       ": not run, no time left in this cycle's remote budget; next cycle";
        return;
      }
      Status ran = run_guarded("srun node-check " + asks[i].what, [&] {
        out[i] = node_check_by_srun(config, slurm, asks[i].placement, asks[i].what, *timeout);
      });
      if (!ran) out[i].error = ran.error();
    });
  pool.join();
  return out;
}

}  // namespace llmwatch
