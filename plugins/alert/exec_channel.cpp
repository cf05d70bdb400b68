// exec: runs an operator's program with the alert as JSON on stdin (schema in
// alert_message.h) and key fields as LLMWATCH_* environment variables, with a timeout.
// How sites plug in PagerDuty, ticketing or their own scripts without recompiling.
// Config: [[alert.exec]] command = ["/path/prog", "arg"], timeout, min_severity, name.
#include "alert/alert_message.h"
#include "util/subprocess.h"

namespace llmwatch {

Delivery deliver_exec(const AlertChannel& channel, const AlertMessage& message) {
  Delivery d{channel.id, false, ""};
  ProcessSpec spec;
  spec.argv = channel.command;
  spec.stdin_data = message.to_json();
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(channel.timeout);
  spec.max_output = 64 * 1024;
  spec.env = {{"LLMWATCH_KEY", message.key},
              {"LLMWATCH_STATE", message.state},
              {"LLMWATCH_SEVERITY", message.severity},
              {"LLMWATCH_SUBJECT", message.subject},
              {"LLMWATCH_SUMMARY", message.summary}};
  auto r = run_process(spec);
  d.ok = r.ok();
  if (!d.ok) d.error = r.describe(channel.command.empty() ? "exec" : channel.command[0]);
  return d;
}

}  // namespace llmwatch
