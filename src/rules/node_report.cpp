#include "rules/node_report.h"

#include <nlohmann/json.hpp>

#include "probes/perfdata.h"
#include "util/text.h"

namespace llmwatch {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "OK";
    case Verdict::Warn:
      return "WARN";
    case Verdict::Critical:
      return "CRITICAL";
    case Verdict::Unknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::optional<Verdict> verdict_from_name(const std::string& name) {
  for (Verdict v : {Verdict::Ok, Verdict::Warn, Verdict::Critical, Verdict::Unknown})
    if (name == verdict_name(v)) return v;
  return std::nullopt;
}

int nagios_code(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return 0;
    case Verdict::Warn:
      return 1;
    case Verdict::Critical:
      return 2;
    case Verdict::Unknown:
      return 3;
  }
  return 3;
}

static int rank(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return 0;
    case Verdict::Warn:
      return 1;
    case Verdict::Unknown:
      return 2;
    case Verdict::Critical:
      return 3;
  }
  return 2;
}

Verdict worse(Verdict a, Verdict b) {
  return rank(a) >= rank(b) ? a : b;
}

std::string NodeReport::headline() const {
  const HealthItem* top = nullptr;
  for (const auto& i : items)
    if (i.verdict != Verdict::Ok && (!top || rank(i.verdict) > rank(top->verdict))) top = &i;
  return top ? top->summary : "all checks passed";
}

std::set<std::string> NodeReport::problems() const {
  std::set<std::string> out;
  for (const auto& i : items)
    if (i.verdict == Verdict::Warn || i.verdict == Verdict::Critical)
      out.insert(i.check + "@" + std::to_string(i.gpu) + " " + verdict_name(i.verdict));
  return out;
}

bool NodeReport::wants_drain() const {
  for (const auto& i : items)
    if (i.verdict == Verdict::Critical &&
        (i.hint == "drain" || i.hint == "reset" || i.hint == "rma"))
      return true;
  return false;
}

std::string NodeReport::to_json() const {
  nlohmann::json j = {{"schema", "llmwatch.node-check/1"},
                      {"node", node},
                      {"ts", ts},
                      {"verdict", verdict_name(verdict)},
                      {"exit_code", nagios_code(verdict)},
                      {"headline", headline()},
                      {"gpu_processes", gpu_processes},
                      {"sources", sources},
                      {"gpus", nlohmann::json::object()},
                      {"items", nlohmann::json::array()}};
  for (const auto& [gpu, v] : gpus) j["gpus"][std::to_string(gpu)] = verdict_name(v);
  for (const auto& i : items)
    j["items"].push_back({{"check", i.check},
                          {"gpu", i.gpu},
                          {"verdict", verdict_name(i.verdict)},
                          {"hint", i.hint},
                          {"summary", i.summary},
                          {"evidence", i.evidence}});
  if (!telemetry.empty()) j["telemetry"] = telemetry_to_json(telemetry);
  if (!figures.empty()) j["figures"] = figures;
  return json_dump(j);
}

Result<NodeReport> NodeReport::from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  auto fail = [](std::string why) { return Error{std::move(why)}; };
  if (!j.is_object() || j.value("schema", "") != "llmwatch.node-check/1")
    return fail("not an llmwatch.node-check/1 document");
  try {
    NodeReport r;
    r.node = j.at("node").get<std::string>();
    r.ts = j.at("ts").get<double>();
    auto v = verdict_from_name(j.at("verdict").get<std::string>());
    if (!v) return fail("unknown verdict");
    r.verdict = *v;
    r.gpu_processes = j.value("gpu_processes", -1);
    r.sources = j.value("sources", std::vector<std::string>{});
    for (const auto& [k, val] : j.at("gpus").items())
      r.gpus[std::stoi(k)] = verdict_from_name(val.get<std::string>()).value_or(Verdict::Unknown);
    for (const auto& i : j.at("items")) {
      HealthItem h;
      h.check = i.at("check").get<std::string>();
      h.gpu = i.value("gpu", -1);
      h.verdict = verdict_from_name(i.at("verdict").get<std::string>()).value_or(Verdict::Unknown);
      h.hint = i.value("hint", "");
      h.summary = i.value("summary", "");
      h.evidence = i.value("evidence", std::vector<std::string>{});
      r.items.push_back(std::move(h));
    }
    // Optional: node-checks older than the telemetry write none.
    if (auto t = j.find("telemetry"); t != j.end()) r.telemetry = telemetry_from_json(*t);
    if (auto f = j.find("figures"); f != j.end()) r.figures = figures_from_json(*f);
    return r;
  } catch (const std::exception& e) {
    return fail(std::string("malformed node report: ") + e.what());
  }
}

}  // namespace llmwatch
