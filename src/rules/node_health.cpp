#include "rules/node_health.h"

#include <cstdio>
#include <map>

#include "util/units.h"

namespace llmwatch {
namespace {

std::string gpu_name(int gpu) {
  return gpu >= 0 ? "GPU " + std::to_string(gpu) : "GPU ?";
}

// An Xid table action as a verdict and a hint for what should happen.
std::pair<Verdict, std::string> judge_action(const std::string& action) {
  if (action == "reset" || action == "drain" || action == "rma") return {Verdict::Critical, action};
  if (action == "reset-when-idle") return {Verdict::Warn, "save"};
  if (action == "app") return {Verdict::Warn, "app"};
  return {Verdict::Ok, ""};
}

// Xid 154 names the recovery action the driver now wants (0x0 None ... 0x4 Drain and Reset).
std::string action_for_recovery(int code) {
  switch (code) {
    case 0:
      return "log";
    case 1:
      return "reset";  // GPU Reset Required
    case 2:
      return "drain";  // Node Reboot Required
    case 3:
      return "app";  // Drain P2P
    default:
      return "reset";  // Drain and Reset, and anything newer
  }
}

void xid_items(const std::vector<XidEvent>& events, const GpuParse* gpus, const XidTable& table,
               std::vector<HealthItem>& out) {
  std::map<std::string, int> index_of_bus;
  if (gpus)
    for (const auto& g : gpus->gpus) index_of_bus[g.bus_id()] = g.index;
  struct Group {
    int gpu = -1;
    int xid = 0;
    int count = 0;
    std::string action;
    std::vector<std::string> evidence;
    std::string text;
  };
  std::map<std::pair<std::string, int>, Group> groups;  // (bus, xid)
  for (const auto& e : events) {
    const XidRule& rule = table.rule(e.xid);
    std::string action = rule.action;
    if (e.xid == 154 && e.new_recovery_code) action = action_for_recovery(*e.new_recovery_code);
    if (action == "follow") action = "log";  // its companion Xid carries the verdict
    auto& g = groups[{e.bus_id, e.xid}];
    g.xid = e.xid;
    auto it = index_of_bus.find(e.bus_id);
    g.gpu = it == index_of_bus.end() ? -1 : it->second;
    ++g.count;
    // The most severe action seen wins (a 154 may change its mind).
    if (judge_action(action).first == Verdict::Critical || g.action.empty()) g.action = action;
    if (rule.repeat > 0 && g.count >= rule.repeat &&
        judge_action(g.action).first != Verdict::Critical)
      g.action = "drain";
    if (g.evidence.size() < 3)
      g.evidence.push_back(e.line);
    else
      g.evidence.back() = e.line;  // keep the first two and the latest
    g.text = e.xid == 154 && !e.new_recovery_action.empty()
                 ? "recovery action changed to " + e.new_recovery_action
                 : (rule.meaning.empty() ? e.text : rule.meaning);
  }
  for (const auto& [key, g] : groups) {
    if (g.action == "ignore") continue;
    auto [verdict, hint] = judge_action(g.action);
    HealthItem item;
    item.check = "xid";
    item.gpu = g.gpu;
    item.verdict = verdict;
    item.hint = hint;
    std::string where = g.gpu >= 0 ? gpu_name(g.gpu) : "PCI " + key.first;
    item.summary = "Xid " + std::to_string(g.xid) + " " + where + ": " + g.text +
                   (g.count > 1 ? " (" + std::to_string(g.count) + " times)" : "");
    item.evidence = g.evidence;
    out.push_back(std::move(item));
  }
}

void counter_items(const GpuParse& parse, const GpuSettings& s, std::vector<HealthItem>& out) {
  for (const auto& g : parse.gpus) {
    auto add = [&](const std::string& check, Verdict v, const std::string& hint,
                   const std::string& summary, const std::string& field) {
      HealthItem item{check, g.index, v, hint, gpu_name(g.index) + ": " + summary, {}};
      auto raw = g.fields.find(field);
      if (raw != g.fields.end()) item.evidence.push_back(field + " = " + raw->second);
      out.push_back(std::move(item));
    };
    auto ecc = g.number("ecc.errors.uncorrected.volatile.total");
    if (!ecc) ecc = g.number("ecc.errors.uncorrected.volatile.dram");
    if (ecc && s.ecc_uncorrected_critical > 0 && *ecc >= s.ecc_uncorrected_critical)
      add("ecc", Verdict::Critical, "reset",
          format_whole(*ecc) + " uncorrected ECC errors since reset",
          "ecc.errors.uncorrected.volatile.total");
    if (g.flag("remapped_rows.failure").value_or(false))
      add("remap", Verdict::Critical, "rma", "row remapping failed: the GPU needs replacement",
          "remapped_rows.failure");
    else if (g.flag("remapped_rows.pending").value_or(false))
      add("remap", Verdict::Warn, "save", "row remapping pending: reset the GPU when idle",
          "remapped_rows.pending");
    auto dbe = g.number("retired_pages.double_bit.count");
    if (dbe && s.retired_pages_critical > 0 && *dbe >= s.retired_pages_critical)
      add("retired-pages", Verdict::Critical, "rma",
          format_whole(*dbe) + " pages retired for double-bit ECC",
          "retired_pages.double_bit.count");
    else if (g.flag("retired_pages.pending").value_or(false))
      add("retired-pages", Verdict::Warn, "save",
          "page retirement pending: reset the GPU when idle", "retired_pages.pending");
    if (auto action = g.text("gpu_recovery_action"); action && *action != "None") {
      bool p2p = action->find("P2P") != std::string::npos;
      add("recovery-action", p2p ? Verdict::Warn : Verdict::Critical, p2p ? "app" : "reset",
          "the driver asks for recovery: " + *action, "gpu_recovery_action");
    }
    auto width = g.number("pcie.link.width.current"), max_width = g.number("pcie.link.width.max");
    if (s.pcie_width_check && width && max_width && *width < *max_width)
      add("pcie", Verdict::Warn, "",
          "PCIe link x" + format_whole(*width) + " of x" + format_whole(*max_width),
          "pcie.link.width.current");
    if (g.flag("clocks_event_reasons.hw_slowdown").value_or(false))
      add("slowdown", Verdict::Warn, "", "hardware slowdown active (power brake or thermal)",
          "clocks_event_reasons.hw_slowdown");
    if (g.flag("clocks_event_reasons.hw_thermal_slowdown").value_or(false))
      add("slowdown", Verdict::Warn, "", "hardware thermal slowdown active",
          "clocks_event_reasons.hw_thermal_slowdown");
    auto temp = g.number("temperature.gpu");
    if (temp && s.temperature_warn > 0 && *temp >= s.temperature_warn)
      add("temperature", Verdict::Warn, "", format_whole(*temp) + " °C", "temperature.gpu");
  }
}

void dcgmi_items(const DcgmiDiag& diag, std::vector<HealthItem>& out) {
  for (const auto& r : diag.results) {
    if (r.status != "Fail" && r.status != "Warn") continue;
    HealthItem item;
    item.check = "dcgmi-diag";
    item.gpu = r.gpu;
    item.verdict = r.status == "Fail" ? Verdict::Critical : Verdict::Warn;
    item.hint = r.status == "Fail" ? "drain" : "";
    item.summary = "dcgmi diag " + r.test + (r.gpu >= 0 ? " " + gpu_name(r.gpu) : "") + ": " +
                   r.status + (r.message.empty() ? "" : ": " + r.message);
    item.evidence.push_back(
        r.category + "/" + r.test + ": " + r.status +
        (r.severity >= 0 ? " (error_severity " + std::to_string(r.severity) + ")" : ""));
    out.push_back(std::move(item));
  }
}

}  // namespace

NodeReport evaluate_node(const std::string& node, double now, const NodeInputs& in,
                         const GpuSettings& settings, const XidTable& xids) {
  NodeReport r;
  r.node = node;
  r.ts = now;
  r.gpu_processes = in.gpu_processes;
  const GpuParse* gpus = in.gpus && in.gpus->ok() ? &*in.gpus : nullptr;
  if (in.xids) {
    r.sources.push_back("kernel-log");
    xid_items(*in.xids, gpus, xids, r.items);
  }
  if (gpus) {
    r.sources.push_back("nvidia-smi");
    for (const auto& g : gpus->gpus) r.gpus[g.index] = Verdict::Ok;
    counter_items(*gpus, settings, r.items);
    r.telemetry = gpu_telemetry(gpus->gpus);
    if (settings.expected_gpus > 0 && static_cast<int>(gpus->gpus.size()) < settings.expected_gpus)
      r.items.push_back({"gpu-count",
                         -1,
                         Verdict::Critical,
                         "drain",
                         std::to_string(gpus->gpus.size()) + " of " +
                             std::to_string(settings.expected_gpus) + " GPUs visible",
                         {"nvidia-smi lists " + std::to_string(gpus->gpus.size()) + " GPU(s)"}});
  } else if (in.gpus) {
    r.items.push_back({"nvidia-smi",
                       -1,
                       Verdict::Unknown,
                       "",
                       "nvidia-smi output not understood: " + in.gpus->error,
                       {}});
  }
  // The site's checks: a plugin's CRITICAL is the node's, with the hint its [[check]] gives.
  for (const auto& p : in.plugins) {
    r.sources.push_back("check:" + p.name);
    for (const auto& [label, v] : p.answer.figures) r.figures[p.name + "/" + label] = v;
    if (p.answer.code == 0) continue;
    Verdict v = p.answer.code == 1   ? Verdict::Warn
                : p.answer.code == 2 ? Verdict::Critical
                                     : Verdict::Unknown;
    r.items.push_back({"check:" + p.name, -1, v, v == Verdict::Critical ? p.hint : "",
                       p.name + ": " + p.answer.summary, p.answer.detail});
  }
  if (in.nvlink) {
    r.sources.push_back("nvlink");
    for (const auto& l : *in.nvlink)
      if (l.all_inactive || l.inactive > 0)
        r.items.push_back({"nvlink", l.index, Verdict::Critical, "drain",
                           gpu_name(l.index) + ": " +
                               (l.all_inactive ? std::string("all NVLinks inactive")
                                               : std::to_string(l.inactive) + " of " +
                                                     std::to_string(l.links) + " NVLinks inactive"),
                           l.evidence});
  }
  if (in.diag) {
    r.sources.push_back("dcgmi-diag");
    if (in.diag->ran()) {
      dcgmi_items(*in.diag, r.items);
      for (const auto& [name, v] : in.diag->figures) r.figures["dcgmi-diag/" + name] = v;
    } else
      r.items.push_back(
          {"dcgmi-diag", -1, Verdict::Unknown, "", "dcgmi diag: " + in.diag->not_run, {}});
  }
  if (in.health) {
    r.sources.push_back("dcgmi-health");
    // dcgmi health can say Healthy for a GPU that needs a reset: it never clears other items.
    if (*in.health != "Healthy")
      r.items.push_back({"dcgmi-health",
                         -1,
                         *in.health == "Failure" ? Verdict::Critical : Verdict::Warn,
                         *in.health == "Failure" ? "drain" : "",
                         "dcgmi health: " + *in.health,
                         {"Overall Health: " + *in.health}});
  }
  if (in.dmon) {
    // DCGM's figures fill what nvidia-smi did not give (or give all where it is not run): the
    // slow node's evidence and cause, never a verdict by themselves.
    r.sources.push_back("dcgmi-dmon");
    fill_telemetry(r.telemetry, *in.dmon);
  } else if (!in.dmon_error.empty()) {
    r.items.push_back({"dcgmi-dmon",
                       -1,
                       Verdict::Ok,
                       "",
                       "dcgmi-dmon: " + in.dmon_error + " (telemetry only: the verdict stands)",
                       {}});
  }
  for (const auto& [source, error] : in.errors)
    r.items.push_back({source, -1, Verdict::Unknown, "", source + ": " + error, {}});
  for (const auto& item : r.items) {
    r.verdict = worse(r.verdict, item.verdict);
    if (item.gpu >= 0) r.gpus[item.gpu] = worse(r.gpus[item.gpu], item.verdict);
  }
  return r;
}

}  // namespace llmwatch
