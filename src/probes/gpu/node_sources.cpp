#include "probes/gpu/node_sources.h"

#include <future>

#include "probes/gpu/dcgmi_dmon.h"
#include "probes/gpu/kernel_log.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace llmwatch {

const char* const kNvidiaSmiFields =
    "index,pci.bus_id,uuid,name,ecc.errors.uncorrected.volatile.total,"
    "ecc.errors.uncorrected.aggregate.total,retired_pages.double_bit.count,retired_pages.pending,"
    "remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,gpu_recovery_action,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
    "clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,temperature.gpu,"
    // The telemetry a slow node's finding cites (probes/gpu/gpu_telemetry.h).
    "clocks.current.sm,clocks.max.sm,power.draw,enforced.power.limit,utilization.gpu,"
    "clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_power_brake_slowdown,"
    "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost";
// Microseconds each clock-event reason has held the clocks down since the driver loaded: a
// GPU throttled now and then is seen for the share of the time it was, not by the luck of a
// sample (there is no counter for HW Slowdown as a whole; its thermal and power-brake parts).
const char* const kNvidiaSmiCounterFields =
    ",clocks_event_reasons_counters.sw_power_cap,clocks_event_reasons_counters.sw_thermal_slowdown,"
    "clocks_event_reasons_counters.hw_thermal_slowdown,"
    "clocks_event_reasons_counters.hw_power_brake_slowdown";
const char* const kNvidiaSmiBaseFields =
    "index,pci.bus_id,uuid,name,ecc.errors.uncorrected.volatile.total,"
    "retired_pages.double_bit.count,retired_pages.pending,pcie.link.width.current,"
    "pcie.link.width.max,temperature.gpu";

namespace {

// Each tool is told the node it looks at (LLMWATCH_NODE), as the site's [[check]] plugins are:
// a wrapper or a stand-in on a shared filesystem can tell the nodes apart.
ProcessResult run_tool(const std::string& program, std::vector<std::string> args, Seconds timeout,
                       const std::string& node) {
  ProcessSpec spec;
  spec.env["LLMWATCH_NODE"] = node;
  spec.argv.push_back(program);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  spec.max_output = 8 << 20;
  return run_process(spec);
}

}  // namespace

NodeInputs gather_node_inputs(const GpuSettings& s, const std::string& node) {
  NodeInputs in;
  auto ms = [](Seconds t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t); };
  std::future<KernelLogRead> kernel;
  if (s.kernel_log != "none")
    kernel = std::async(std::launch::async,
                        [&] { return read_kernel_log(s, node, ms(s.nvidia_smi_timeout)); });
  std::future<ProcessResult> query, nvlink, apps, diag, health, dmon;
  if (!s.nvidia_smi.empty()) {
    query = std::async(std::launch::async, [&] {
      // Newest fields first; a driver that does not know one says "... is not a valid field".
      ProcessResult r;
      for (std::string fields :
           {std::string(kNvidiaSmiFields) + kNvidiaSmiCounterFields, std::string(kNvidiaSmiFields),
            std::string(kNvidiaSmiBaseFields)}) {
        r = run_tool(s.nvidia_smi, {"--query-gpu=" + fields, "--format=csv,nounits"},
                     s.nvidia_smi_timeout, node);
        if (r.ok() || r.timed_out || (r.out + r.err).find("not a valid field") == std::string::npos)
          break;
      }
      return r;
    });
    apps = std::async(std::launch::async, [&] {
      return run_tool(s.nvidia_smi,
                      {"--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader"},
                      s.nvidia_smi_timeout, node);
    });
    if (s.nvlink)
      nvlink = std::async(std::launch::async, [&] {
        return run_tool(s.nvidia_smi, {"nvlink", "-s"}, s.nvidia_smi_timeout, node);
      });
  }
  if (!s.dcgmi_diag_level.empty())
    diag = std::async(std::launch::async, [&] {
      return run_tool(s.dcgmi, {"diag", "-r", s.dcgmi_diag_level, "-j"}, s.dcgmi_timeout, node);
    });
  if (s.dcgmi_health)
    health = std::async(std::launch::async, [&] {
      return run_tool(s.dcgmi, {"health", "-c"}, s.dcgmi_timeout, node);
    });

  if (s.dcgmi_dmon)
    dmon = std::async(std::launch::async, [&] {
      return run_tool(s.dcgmi, {"dmon", "-e", kDcgmiDmonFields, "-c", "1"}, s.dcgmi_timeout, node);
    });

  if (kernel.valid()) {
    auto k = kernel.get();
    if (k.error.empty())
      in.xids = std::move(k.xids);
    else
      in.errors.emplace_back("kernel-log", k.error);
  }
  if (query.valid()) {
    auto r = query.get();
    if (r.ok())
      in.gpus = parse_nvidia_smi_csv(r.out);
    else
      in.errors.emplace_back("nvidia-smi", r.describe("nvidia-smi --query-gpu"));
  }
  if (apps.valid()) {
    auto r = apps.get();
    if (r.ok()) {
      in.gpu_processes = 0;
      for (const auto& line : split(r.out, '\n'))
        if (!trim(line).empty() && trim(line).find("No running") == std::string_view::npos)
          ++in.gpu_processes;
      // Each GPU's own count: one another process shares is slower with telemetry that reads
      // like its own load.
      if (in.gpus && in.gpus->ok()) set_compute_processes(*in.gpus, r.out);
    }
  }
  if (nvlink.valid()) {
    auto r = nvlink.get();
    // Without NVLink (PCIe GPUs) nvlink -s prints nothing: nothing to judge.
    if (r.ok())
      in.nvlink = parse_nvlink_status(r.out);
    else
      in.errors.emplace_back("nvlink", r.describe("nvidia-smi nvlink -s"));
  }
  if (diag.valid()) {
    auto r = diag.get();
    // dcgmi exits non-zero (e.g. 205) when a test failed, with a valid document: use it.
    if (r.started && !r.timed_out && !trim(r.out).empty()) {
      in.diag = parse_dcgmi_diag(r.out);
    } else {
      in.errors.emplace_back("dcgmi-diag", r.describe("dcgmi diag -r " + s.dcgmi_diag_level));
    }
  }
  if (health.valid()) {
    auto r = health.get();
    auto overall = r.started && !r.timed_out ? parse_dcgmi_health(r.out) : std::nullopt;
    if (overall)
      in.health = overall;
    else
      in.errors.emplace_back("dcgmi-health", r.ok() ? "no \"Overall Health\" in the output"
                                                    : r.describe("dcgmi health -c"));
  }
  if (dmon.valid()) {
    auto r = dmon.get();
    auto parsed = r.ok() ? parse_dcgmi_dmon(r.out) : DmonParse{};
    if (r.ok() && parsed.ok())
      in.dmon = std::move(parsed.gpus);
    else
      in.dmon_error = r.ok() ? parsed.error : r.describe("dcgmi dmon");
  }
  return in;
}

}  // namespace llmwatch
