#include "probes/gpu/dcgmi.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "util/regex_window.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<long long>());
  return "";
}

// warnings: [{"warning": "...", "error_severity": 2}] (4.x), [{"warning": "..."}] or ["..."].
void read_warnings(const json& r, DcgmiResult& out) {
  auto it = r.find("warnings");
  if (it == r.end() || !it->is_array()) return;
  for (const auto& w : *it) {
    std::string text =
        w.is_string() ? w.get<std::string>() : (w.is_object() ? str(w, "warning") : "");
    if (!text.empty()) out.message += (out.message.empty() ? "" : "; ") + sanitize_line(text);
    if (w.is_object())
      if (auto s = w.find("error_severity"); s != w.end() && s->is_number_integer())
        out.severity = std::max(out.severity, s->get<int>());
  }
}

bool mentions_busy(const std::string& text) {
  std::string l = text;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l.find("busy") != std::string::npos || l.find("in use") != std::string::npos ||
         l.find("processes running") != std::string::npos;
}

// The positive, finite number that follows `phrase` in `info` (after blanks and a colon), and
// after it `unit` where one is named; nullopt otherwise.
std::optional<double> number_after(std::string_view info, std::string_view phrase,
                                   std::string_view unit = {}) {
  auto at = info.find(phrase);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = info.substr(at + phrase.size());
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t' || rest.front() == ':'))
    rest.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v <= 0) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!unit.empty() && rest.substr(0, unit.size()) != unit) return std::nullopt;
  return v;
}

// An info line's performance figure, as DCGM's plugins print it (nvvs/plugin_src: diagnostic,
// targetedstress, pcie); nullopt for any other line.
std::optional<std::pair<std::string, double>> perf_figure(std::string_view info) {
  struct Shape {
    std::string_view phrase, unit, measure;
  };
  static constexpr Shape kShapes[] = {
      {"calculated at approximately", "gigaflops", "gflops"},
      {"relative stress level", "", "stress_level"},
      {"GPU to Host bandwidth", "GB/s", "d2h_gbps"},
      {"Host to GPU bandwidth", "GB/s", "h2d_gbps"},
      {"bidirectional bandwidth", "GB/s", "bidir_gbps"},
  };
  for (const auto& s : kShapes)
    if (auto v = number_after(info, s.phrase, s.unit)) return std::pair{std::string(s.measure), *v};
  return std::nullopt;
}

// A test's name as a figure's part: "Targeted Stress" -> "targeted_stress".
std::string figure_part(const std::string& name) {
  std::string out;
  for (unsigned char c : name)
    if (std::isalnum(c))
      out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "test" : out;
}

// Every info line of a result ("info": "..." or ["...", ...]) that is a figure, into `figures`
// at the lowest value any GPU gave.
void read_figures(const json& r, const std::string& test, std::map<std::string, double>& figures) {
  auto it = r.find("info");
  if (it == r.end()) return;
  auto take = [&](const json& line) {
    if (!line.is_string()) return;
    if (auto f = perf_figure(line.get_ref<const std::string&>())) {
      auto [at, added] = figures.emplace(figure_part(test) + "/" + f->first, f->second);
      if (!added) at->second = std::min(at->second, f->second);
    }
  };
  if (it->is_array())
    for (const auto& line : *it) take(line);
  else
    take(*it);
}

}  // namespace

DcgmiDiag parse_dcgmi_diag(const std::string& text) {
  DcgmiDiag out;
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.not_run = "dcgmi diag printed no JSON document" +
                  (trim(text).empty() ? std::string() : ": " + sanitize_line(text, 200));
    return out;
  }
  const json* body = nullptr;
  if (auto it = doc.find("DCGM Diagnostic"); it != doc.end()) {
    body = &*it;
    if (auto m = doc.find("metadata"); m != doc.end() && m->is_object())
      out.version = str(*m, "version");
  } else if (auto it3 = doc.find("DCGM GPU Diagnostic"); it3 != doc.end()) {
    body = &*it3;
    out.version = "3.x";
  }
  if (!body || !body->is_object()) {
    out.not_run = "no \"DCGM Diagnostic\" or \"DCGM GPU Diagnostic\" object";
    return out;
  }
  for (const nlohmann::json* where : {static_cast<const nlohmann::json*>(&doc), body})
    for (const char* key : {"runtime_error", "error", "Error"})
      if (auto e = str(*where, key); !e.empty()) {
        out.not_run =
            (mentions_busy(e) ? "aborted, GPUs busy: " : "runtime error: ") + sanitize_line(e, 200);
        return out;
      }
  auto cats = body->find("test_categories");
  if (cats == body->end() || !cats->is_array()) {
    out.not_run = "no test_categories: the diagnostic did not run";
    return out;
  }
  int ran = 0;
  for (const auto& cat : *cats) {
    if (!cat.is_object() || !cat.contains("tests") || !cat["tests"].is_array()) continue;
    for (const auto& test : cat["tests"]) {
      if (!test.is_object()) continue;
      auto results = test.find("results");
      if (results == test.end() || !results->is_array()) continue;
      for (const auto& r : *results) {
        if (!r.is_object()) continue;
        DcgmiResult d;
        d.category = str(cat, "category");
        d.test = str(test, "name");
        d.status = str(r, "status");
        for (const char* key : {"entity_id", "gpu_id", "gpu_ids"})
          if (auto id = str(r, key); !id.empty() && id.find(',') == std::string::npos) {
            try {
              d.gpu = std::stoi(id);
            } catch (const std::exception&) {
            }
            break;
          }
        if (str(r, "entity_group") != "" && str(r, "entity_group") != "GPU") d.gpu = -1;
        read_warnings(r, d);
        read_figures(r, d.test, out.figures);  // a failed test measured the node too
        if (auto info = str(r, "info"); !info.empty() && d.message.empty())
          d.message = sanitize_line(info);
        if (mentions_busy(d.message) && d.status != "Pass") {
          out.not_run = "aborted, GPUs busy: " + d.message;
          return out;
        }
        if (d.status != "Skip" && d.status != "Not Run" && !d.status.empty()) ++ran;
        out.results.push_back(std::move(d));
      }
    }
  }
  if (ran == 0) out.not_run = "no test ran (all skipped)";
  return out;
}

std::optional<std::string> parse_dcgmi_health(const std::string& text) {
  static const std::regex overall(R"(Overall Health\W+(Healthy|Warning|Failure))",
                                  std::regex::icase);
  // Line by line, each through regex_window: a huge line must not overflow the matcher.
  std::string v;
  for (const auto& line : split(text, '\n')) {
    auto window = regex_window(line);
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(window.begin(), window.end(), m, overall)) {
      v = m[1];
      break;
    }
  }
  if (v.empty()) return std::nullopt;
  v[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(v[0])));
  return v;
}

}  // namespace llmwatch
