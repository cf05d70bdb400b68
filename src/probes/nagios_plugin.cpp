#include "probes/nagios_plugin.h"

#include <sys/sysinfo.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "probes/perfdata.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {

PluginAnswer plugin_answer(const ProcessResult& r, const std::string& program) {
  PluginAnswer a;
  a.seconds = r.seconds;
  bool ran = r.started && !r.timed_out && r.signal == 0;
  a.code = ran && r.exit_code >= 0 && r.exit_code <= 2 ? r.exit_code : 3;
  auto lines = split(r.out, '\n');
  std::string first = lines.empty() ? "" : std::string(trim(lines[0]));
  if (auto bar = first.find('|'); bar != std::string::npos) {
    if (ran) a.figures = parse_perfdata(std::string_view(first).substr(bar + 1));
    first = std::string(trim(std::string_view(first).substr(0, bar)));
  }
  a.summary = sanitize_line(
      !ran ? r.describe(program) : (first.empty() ? "exit " + std::to_string(r.exit_code) : first),
      200);
  for (size_t l = 1; l < lines.size() && a.detail.size() < 10; ++l)
    if (!trim(lines[l]).empty()) a.detail.push_back(sanitize_line(trim(lines[l]), 300));
  if (!r.err.empty()) a.detail.push_back("stderr: " + sanitize_line(trim(r.err), 300));
  return a;
}

PluginAnswer run_plugin(const CommandCheckSettings& check,
                        const std::map<std::string, std::string>& env) {
  ProcessSpec spec;
  spec.argv = check.command;
  spec.env = env;
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(check.timeout);
  spec.max_output = 64 << 10;
  return plugin_answer(run_process(spec), check.command.empty() ? "" : check.command[0]);
}

namespace {

std::string answer_json(const PluginAnswer& a) {
  return nlohmann::json{{"code", a.code},       {"summary", a.summary}, {"detail", a.detail},
                        {"seconds", a.seconds}, {"figures", a.figures}, {"ts", a.ts}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<PluginAnswer> cached_answer(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j["code"].is_number_integer() || !j["ts"].is_number()) return std::nullopt;
  PluginAnswer a;
  a.code = j["code"].get<int>();
  if (a.code < 0 || a.code > 3) return std::nullopt;
  a.summary = j.value("summary", "");
  if (j["detail"].is_array())
    for (const auto& d : j["detail"])
      if (d.is_string()) a.detail.push_back(d.get<std::string>());
  a.seconds = j.value("seconds", 0.0);
  a.figures = figures_from_json(j["figures"]);
  a.ts = j["ts"].get<double>();
  return a;
}

}  // namespace

double host_boot_time() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  return static_cast<double>(std::time(nullptr) - info.uptime);
}

std::vector<NodePluginRun> run_node_plugins(const std::vector<CommandCheckSettings>& checks,
                                            const std::string& node,
                                            const std::string& cache_prefix, double now,
                                            double booted) {
  std::vector<NodePluginRun> runs;
  for (const auto& k : checks)
    if (k.where == "nodes") runs.push_back({k.name, k.hint == "none" ? "" : k.hint, {}, false});
  std::vector<std::thread> threads;
  size_t i = 0;
  for (const auto& k : checks) {
    if (k.where != "nodes") continue;
    NodePluginRun& run = runs[i++];
    std::string path = cache_prefix + k.name + ".json";
    // A cached answer from the future (a clock stepped back), or from before the boot, is not
    // trusted: run again.
    if (auto a = cached_answer(path); a && a->ts <= now && a->ts >= booted &&
                                      now - a->ts < static_cast<double>(k.every.count())) {
      run.answer = std::move(*a);
      run.cached = true;
      continue;
    }
    threads.emplace_back([&run, &k, &node, path, now] {
      run.answer = run_plugin(k, {{"LLMWATCH_NODE", node}});
      run.answer.ts = now;
      // Best effort: without a cache the check simply runs at every node-check.
      (void)write_file_atomic(path, answer_json(run.answer));
    });
  }
  for (auto& t : threads) t.join();
  return runs;
}

}  // namespace llmwatch
