#pragma once
// What an alert says, whatever the channel: the finding, its state (firing/resolved),
// the evidence, and what llmwatch did about it. to_json() is the documented schema that
// `exec` programs read on stdin (see examples/alert-exec.sh).
#include <string>
#include <vector>

#include "config/config.h"

namespace llmwatch {

struct AlertMessage {
  std::string key;       // the finding key, e.g. "job:tr11/hung"
  std::string state;     // firing | resolved
  std::string severity;  // info | warning | critical | unknown
  std::string subject;   // job name, node, "slurm", "llmwatch"
  std::string summary;
  std::vector<std::string> evidence;
  std::vector<std::string> actions;  // what llmwatch did (or would do, in dry-run)
  double ts = 0;
  std::string host;  // where llmwatch ran
  // Told once, with nothing to resolve later: a finding an action disproved (a near miss).
  // Alertmanager, which keeps a firing alert until its end, is given a short one.
  bool notice = false;

  std::vector<std::string> grouped;  // titles of the alerts a grouped message carries

  std::string title() const;  // "[CRITICAL] job:tr11/hung — no progress for 12m"
  std::string text() const;   // plain text body for e-mail and logs
  std::string to_json() const;
  static AlertMessage from_json(const std::string& text);
};

// Several alerts for one channel in one cycle become one message (40 drained nodes are one
// message, not 40); a single one stays as it is.
AlertMessage group_messages(const std::vector<AlertMessage>& messages);

struct Delivery {
  std::string channel;
  bool ok = false;
  std::string error;
};

// Whether `channel` takes `message`: its min_severity and match globs (resolved notices go
// wherever the firing one could go).
bool channel_wants(const AlertChannel& channel, const AlertMessage& message);

// One delivery attempt of one cycle's messages to one channel, as its type delivers them
// (alert/channel.h): most group them into one message; Alertmanager takes them as they are.
Delivery deliver_batch(const AlertChannel& channel, const std::vector<AlertMessage>& messages);
// Alertmanager's POST body (alertmanager_channel.cpp).
std::string alertmanager_payload(const std::vector<AlertMessage>& messages, Seconds expire_after);

}  // namespace llmwatch
