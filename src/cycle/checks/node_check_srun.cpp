#include "cycle/checks/node_check_srun.h"

#include "util/paths.h"
#include "util/strings.h"

namespace llmwatch {

SrunNodeCheck node_check_by_srun(const Config& config, SlurmClient& slurm,
                                 std::vector<std::string> placement, const std::string& what) {
  auto& args = placement;
  args.push_back(self_exe());
  if (!config.path.empty() && config.path != "<embedded>")
    args.insert(args.end(), {"--config", config.path});  // a global option: before the verb
  args.insert(args.end(), {"node-check", "--json"});
  auto r =
      slurm.run_step(args, config.gpu.nvidia_smi_timeout + config.gpu.dcgmi_timeout + Seconds(30));
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

}  // namespace llmwatch
