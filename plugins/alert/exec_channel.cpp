// exec: runs an operator's program with the alert as JSON on stdin (schema in
// alert_message.h) and key fields as LLMWATCH_* environment variables, with a timeout.
// How sites plug in PagerDuty, ticketing or their own scripts without recompiling.
// Config: [[alert.exec]] command = ["/path/prog", "arg"], timeout, min_severity, name.
#include "alert/channel.h"
#include "util/subprocess.h"

namespace llmwatch {

namespace {

Delivery deliver_exec(const AlertChannel& channel, const AlertMessage& message) {
  Delivery d{channel.id, false, ""};
  ProcessSpec spec;
  spec.argv = channel.list("command");
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
  if (!d.ok) d.error = r.describe(spec.argv.empty() ? "exec" : spec.argv[0]);
  return d;
}

}  // namespace

LLMWATCH_REGISTER_CHANNEL((ChannelInfo{
                              "exec",
                              "an operator's program, the alert as JSON on stdin",
                              {{"command", KeyKind::StringList, false, true, "argv, no shell"}},
                              {}}),
                          grouped(deliver_exec));

}  // namespace llmwatch
