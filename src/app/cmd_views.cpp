// `status` and `events`: read-only views of the state store.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/commands.h"
#include "cycle/supervisor.h"
#include "rules/job_rules.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/files.h"
#include "util/identity.h"
#include "util/strings.h"
#include "util/text.h"
#include "views/goodput_html.h"
#include "views/goodput_view.h"
#include "views/job_view.h"
#include "views/status_view.h"

namespace llmwatch {

static bool use_color() {
  return isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");
}

namespace {

std::atomic<bool> stop_watch{false};

int terminal_width() {
  struct winsize w {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20)
    return w.ws_col;
  return 0;  // not a terminal: never cut
}

// Cuts each line to the terminal's width (counting UTF-8 code points, skipping colour codes).
std::string fit_width(const std::string& text, int width) {
  if (width <= 0) return text;
  std::string out;
  for (const auto& line : split(text, '\n')) {
    int visible = 0;
    bool escape = false;
    std::string cut;
    for (char c : line) {
      if (c == '\033') escape = true;
      if (!escape && (static_cast<unsigned char>(c) & 0xC0) != 0x80) ++visible;
      if (visible > width) break;
      cut += c;
      if (escape && c == 'm') escape = false;
    }
    out += cut + (visible > width && use_color() ? "\033[0m" : "") + "\n";
  }
  out.pop_back();
  return out;
}

}  // namespace

int cmd_status(const Config& config, bool json, bool watch, bool check) {
  try {
    Store store(config.state_dir);
    if (check) {
      auto result = check_status(build_status(config, store, unix_now()));
      std::cout << terminal_safe(result.line) << "\n";
      return result.code;
    }
    if (watch && !json) {
      std::signal(SIGINT, [](int) { stop_watch = true; });
      while (!stop_watch) {
        auto s = build_status(config, store, unix_now());
        // Redraw in place: home the cursor, draw, clear what the last frame left below.
        std::cout << (isatty(STDOUT_FILENO) ? "\033[H\033[2J" : "")
                  << fit_width(render_status(terminal_safe_json(s), use_color()), terminal_width())
                  << std::flush;
        for (int i = 0; i < 20 && !stop_watch; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return kExitOk;
    }
    auto s = build_status(config, store, unix_now());
    if (json)
      std::cout << json_dump(s, 2) << "\n";
    else
      std::cout << fit_width(render_status(terminal_safe_json(s), use_color()), terminal_width());
    return kExitOk;
  } catch (const std::exception& e) {
    // --check is read by monitoring: a store that cannot be read is UNKNOWN, never "failure".
    if (check) return std::cout << "LLMWATCH UNKNOWN - " << terminal_safe(e.what()) << "\n", 3;
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

int cmd_job_view(const Config& config, const std::string& label, bool json) {
  for (const auto& job : config.jobs) {
    if (job_label(job) != label) continue;
    try {
      Store store(config.state_dir);
      auto j = build_job(job, store, unix_now());
      if (json)
        std::cout << json_dump(j, 2) << "\n";
      else
        std::cout << render_job(terminal_safe_json(j), use_color());
      return kExitOk;
    } catch (const std::exception& e) {
      std::cerr << "llmwatch: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  std::cerr << "llmwatch job: " << not_a_job(config, label) << "\n";
  return kExitUsage;
}

namespace {
std::string format_time(double ts) {
  char buf[32];
  std::time_t t = static_cast<std::time_t>(ts);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}
}  // namespace

int cmd_nodes(const Config& config, bool json, const std::string& node) {
  try {
    Store store(config.state_dir);
    if (!node.empty()) {
      // One node's health history: verdict changes, incidents, drains and undrains.
      double now = unix_now();
      auto events = store.events(now - 90 * 86400.0, node, 10000);
      auto health = store.node_health(node);
      nlohmann::json out = {{"node", node},
                            {"health", health ? health->summary() : std::string()},
                            {"history", nlohmann::json::array()}};
      for (const auto& e : events)
        if (e.subject == node)
          out["history"].push_back(
              {{"ts", e.ts}, {"kind", e.kind}, {"severity", e.severity}, {"message", e.message}});
      // What its GPUs did at the node-checks kept while a watched task ran on it: the evidence
      // a slow-node finding cites, to read beside the finding.
      const TelemetrySeries& series = *store.telemetry_series(node);
      out["telemetry"] = nlohmann::json::array();
      for (const auto& sample : series)
        out["telemetry"].push_back({{"ts", sample.ts}, {"gpus", telemetry_to_json(sample.gpus)}});
      if (json) {
        std::cout << json_dump(out, 2) << "\n";
        return kExitOk;
      }
      out = terminal_safe_json(out);
      std::cout << terminal_safe(node) << ": "
                << (out["health"].get<std::string>().empty() ? std::string("no node-check seen")
                                                             : out["health"].get<std::string>())
                << "\n";
      for (const auto& h : out["history"])
        std::cout << "  " << format_time(h["ts"].get<double>()) << "  "
                  << h["kind"].get<std::string>() << "  " << h["message"].get<std::string>()
                  << "\n";
      if (!series.empty()) {
        std::cout << "GPUs at its last node-check under a watched task ("
                  << format_time(series.back().ts) << ", " << series.size()
                  << (series.size() == 1 ? " sample" : " samples") << " kept):\n";
        for (const auto& gpu : series.back().gpus)
          std::cout << "  " << terminal_safe(describe(gpu)) << "\n";
      }
      return kExitOk;
    }
    auto nodes = nlohmann::json::parse(store.get(kv::kNodes).value_or("{}"), nullptr, false);
    if (!nodes.is_object()) nodes = nlohmann::json::object();
    nlohmann::json health = nlohmann::json::object();
    for (const auto& [node, h] : store.node_health()) health[node] = h.summary();
    nodes["health"] = health;
    if (json) {
      std::cout << json_dump(nodes, 2) << "\n";
      return kExitOk;
    }
    nodes = terminal_safe_json(nodes);
    auto attention = nodes.value("attention", nlohmann::json::array());
    std::cout << "nodes needing attention: " << attention.size() << " of "
              << nodes.value("total", 0) << "\n";
    for (const auto& n : attention)
      std::cout << "  " << n.value("name", "") << "  " << n.value("state", "") << "  "
                << n.value("reason", "")
                << (n.value("by", "").empty() ? "" : "  (by " + n.value("by", "") + ")") << "\n";
    if (!health.empty()) {
      std::cout << "GPU health (last node-check):\n";
      for (const auto& [name, verdict] : health.items())
        std::cout << "  " << name << "  " << verdict.get<std::string>() << "\n";
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

int cmd_events(const Config& config, const std::string& since, const std::string& job, bool json) {
  auto window = parse_duration(since);
  if (!window) {
    std::cerr << "llmwatch events: --since: " << window.error() << "\n";
    return kExitUsage;
  }
  // An unknown name is an error here as in `job` (#27: it printed nothing and exited 0).
  if (!job.empty() && job.find_first_of("%_") == std::string::npos &&
      std::none_of(config.jobs.begin(), config.jobs.end(),
                   [&](const JobSettings& j) { return job_label(j) == job; })) {
    std::cerr << "llmwatch events: " << not_a_job(config, job) << "\n";
    return kExitUsage;
  }
  try {
    Store store(config.state_dir);
    double now = unix_now();
    double from = now - static_cast<double>(window->count());
    auto events = store.events(from, job, 100000);
    // Nothing to show says so, and since when (JSON lines stay empty: a consumer counts lines).
    if (events.empty() && !json)
      std::cout << "no events" << (job.empty() ? "" : " of " + terminal_safe(job)) << " since "
                << format_time(from) << "\n";
    for (const auto& e : events) {
      if (json) {
        std::cout << json_dump(nlohmann::json{{"ts", e.ts},
                                              {"kind", e.kind},
                                              {"subject", e.subject},
                                              {"severity", e.severity},
                                              {"message", e.message}})
                  << "\n";
        continue;
      }
      std::cout << format_time(e.ts) << "  " << terminal_safe(e.severity) << "  "
                << terminal_safe(e.kind) << "  " << terminal_safe(e.subject) << "  "
                << terminal_safe(e.message) << "\n";
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch

namespace llmwatch {

int cmd_goodput(const Config& config, const std::string& since, const std::string& by, bool json,
                const std::string& html) {
  auto window = parse_duration(since);
  if (!window) {
    std::cerr << "llmwatch goodput: --since: " << window.error() << "\n";
    return kExitUsage;
  }
  try {
    Store store(config.state_dir);
    double now = unix_now();
    auto rows = GoodputLedger(store).rows(now - static_cast<double>(window->count()));
    RunOwners owners;  // a [[job]] without `user` is watched as llmwatch's own user's
    for (const auto& job : config.jobs)
      owners[job_label(job)] = job.user.empty() ? current_user_name() : job.user;
    auto report = goodput_json(rows, by, owners);
    report["since"] = since;
    if (!html.empty())
      if (auto wrote = write_file_atomic(html, goodput_html(rows, since)); !wrote) {
        std::cerr << "llmwatch goodput: --html: " << wrote.error() << "\n";
        return kExitFailure;
      }
    if (json)
      std::cout << json_dump(report) << "\n";
    else
      std::cout << "goodput of the watched runs, last " << since << "\n" << goodput_table(report);
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
