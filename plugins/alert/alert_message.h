#pragma once
// What an alert says, whatever the channel: the finding, its state (firing/resolved),
// the evidence, and what llmwatch did about it. to_json() is the documented schema that
// `exec` programs read on stdin (see examples/alert-exec.sh).
#include <string>
#include <vector>

#include "config/config.h"

namespace llmwatch {

struct AlertMessage {
  std::string key;        // the finding key, e.g. "job:tr11/hung"
  std::string state;      // firing | resolved
  std::string severity;   // info | warning | critical | unknown
  std::string subject;    // job name, node, "slurm", "llmwatch"
  std::string summary;
  std::vector<std::string> evidence;
  std::vector<std::string> actions;  // what llmwatch did (or would do, in dry-run)
  double ts = 0;
  std::string host;       // where llmwatch ran

  std::string title() const;  // "[CRITICAL] job:tr11/hung — no progress for 12m"
  std::string text() const;   // plain text body for e-mail and logs
  std::string to_json() const;
};

struct Delivery {
  std::string channel;
  bool ok = false;
  std::string error;
};

// Sends to every configured channel whose min_severity the message meets.
std::vector<Delivery> deliver(const Config& config, const AlertMessage& message);

// One channel: exec | webhook | slack.
Delivery deliver_exec(const AlertChannel& channel, const AlertMessage& message);
Delivery deliver_http(const AlertChannel& channel, const AlertMessage& message);

}  // namespace llmwatch
