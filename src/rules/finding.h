#pragma once
// A finding: something a rule concluded from observations, with a stable key
// ("job:tr11/hung", "slurm/unreachable") so that its lifecycle can be tracked across cycles.
#include <string>
#include <vector>

namespace llmwatch {

enum class Severity { Info, Warning, Critical, Unknown };

const char* severity_name(Severity s);
Severity severity_from_name(const std::string& name);
int severity_rank(Severity s);  // for "at least warning" comparisons; Unknown ranks as Warning

struct Finding {
  std::string key;
  Severity severity = Severity::Warning;
  std::string kind;     // hung, absent, stuck, crashed, unreachable, successor-missing, ...
  std::string subject;  // the job name, node, or "slurm"
  std::string summary;  // one line a human understands
  std::vector<std::string> evidence;  // the lines that prove it
  std::string cause;  // for kinds with sub-cases ("ended": its class), chosen by the policy
  // What one occurrence is about, where a key can occur again before it clears: the task
  // ("7@1799999000") whose end or crash this is. A firing finding whose episode changes is
  // a new finding (recorded, told and acted on), not the old one still firing. Empty: the
  // key alone says it.
  std::string episode;
};

// A finding about something with a key prefix: make_finding("job:tr11", "tr11", "hung", ...)
// has key "job:tr11/hung".
Finding make_finding(const std::string& prefix, const std::string& subject, const std::string& kind,
                     Severity severity, std::string summary);

}  // namespace llmwatch
