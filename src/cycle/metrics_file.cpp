#include "cycle/metrics_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cycle/supervisor.h"
#include "rules/job_progress.h"
#include "store/store.h"

namespace llmwatch {

namespace {
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string render_metrics(const CycleResult& result, Store& store) {
  std::ostringstream m;
  m.precision(15);
  m << "# HELP llmwatch_last_cycle_timestamp_seconds When the last supervision cycle finished.\n"
    << "# TYPE llmwatch_last_cycle_timestamp_seconds gauge\n"
    << "llmwatch_last_cycle_timestamp_seconds " << result.finished << "\n"
    << "# HELP llmwatch_cycle_duration_seconds How long the last cycle took.\n"
    << "# TYPE llmwatch_cycle_duration_seconds gauge\n"
    << "llmwatch_cycle_duration_seconds " << (result.finished - result.started) << "\n"
    << "# HELP llmwatch_probes_unknown Probes that could not observe in the last cycle.\n"
    << "# TYPE llmwatch_probes_unknown gauge\n"
    << "llmwatch_probes_unknown " << result.unknown_probes << "\n";
  std::map<std::string, int> firing;
  for (const auto& row : store.firing()) ++firing[row.severity];
  m << "# HELP llmwatch_alerts_firing Findings currently firing, by severity.\n"
    << "# TYPE llmwatch_alerts_firing gauge\n";
  for (const char* sev : {"info", "warning", "critical", "unknown"})
    m << "llmwatch_alerts_firing{severity=\"" << sev << "\"} " << firing[sev] << "\n";

  std::ostringstream steps, since;
  auto st = store.db().prepare("SELECT substr(key, 10), value FROM kv WHERE key LIKE 'progress:%' ORDER BY key");
  while (st.step()) {
    JobProgress p = JobProgress::from_json(st.text(1));
    std::string label = "{job=\"" + escape_label(st.text(0)) + "\"}";
    if (p.step) steps << "llmwatch_job_step" << label << " " << *p.step << "\n";
    if (p.last_progress > 0) since << "llmwatch_job_seconds_since_progress" << label << " " << (result.finished - p.last_progress) << "\n";
  }
  m << "# HELP llmwatch_job_step The last training step seen in a watched job's log.\n"
    << "# TYPE llmwatch_job_step gauge\n"
    << steps.str()
    << "# HELP llmwatch_job_seconds_since_progress Seconds since the step counter last advanced.\n"
    << "# TYPE llmwatch_job_seconds_since_progress gauge\n"
    << since.str();
  return m.str();
}

bool write_metrics_file(const std::string& path, const CycleResult& result, std::size_t, Store& store) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << render_metrics(result, store);
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace llmwatch
