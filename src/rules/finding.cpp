#include "rules/finding.h"

namespace llmwatch {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Info:
      return "info";
    case Severity::Warning:
      return "warning";
    case Severity::Critical:
      return "critical";
    case Severity::Unknown:
      return "unknown";
  }
  return "unknown";
}

Severity severity_from_name(const std::string& name) {
  if (name == "info") return Severity::Info;
  if (name == "warning") return Severity::Warning;
  if (name == "critical") return Severity::Critical;
  return Severity::Unknown;
}

Finding make_finding(const std::string& prefix, const std::string& subject, const std::string& kind,
                     Severity severity, std::string summary) {
  Finding f;
  f.key = prefix + "/" + kind;
  f.kind = kind;
  f.severity = severity;
  f.subject = subject;
  f.summary = std::move(summary);
  return f;
}

int severity_rank(Severity s) {
  switch (s) {
    case Severity::Info:
      return 0;
    case Severity::Warning:
    case Severity::Unknown:
      return 1;
    case Severity::Critical:
      return 2;
  }
  return 1;
}

}  // namespace llmwatch
