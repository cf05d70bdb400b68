#include "rules/cancel_held.h"

#include "util/units.h"

namespace llmwatch {

namespace {
constexpr const char* kPrefix = "cancel:";
constexpr const char* kAgain = "/again-";
}  // namespace

std::string cancel_key(const std::string& run_key, const std::string& cause) {
  return kPrefix + run_key + (cause.empty() ? "" : "/" + cause);
}

std::string cancelled_run_key(const std::string& idem_key) {
  if (idem_key.rfind(kPrefix, 0) != 0) return "";
  std::string rest = idem_key.substr(std::string(kPrefix).size());
  return rest.substr(0, rest.find(kAgain));
}

std::string not_held_run_key(const Finding& f) {
  return f.kind == "cancel-not-held" ? f.episode.substr(0, f.episode.rfind('#')) : "";
}

std::optional<Finding> cancel_not_held(const std::string& label, const SlurmJob& task,
                                       const CancelsDone& done, double now) {
  // Only RUNNING (or CONFIGURING) is "not cancelled": COMPLETING is the cancel at work, and a
  // pending, suspended or requeued task is another run (a requeue starts anew, another key).
  if (done.count <= 0 || !task.running() || task.ending()) return std::nullopt;
  const double since = now - done.last_at;
  if (since < kCancelHoldsWithin) return std::nullopt;  // a clock that went back: too
  const bool again = done.count < kMaxCancels;
  std::string what =
      done.count == 1 ? "llmwatch's scancel" : std::to_string(done.count) + " scancels by llmwatch";
  Finding f =
      make_finding("job:" + label, label, "cancel-not-held", Severity::Critical,
                   task.display_id() + " is " + task.state + " " +
                       format_duration(Seconds(static_cast<long long>(since))) + " after " + what +
                       ": the cancel did not hold (slurmctld restarted before keeping it?); " +
                       (again ? "cancelling it again" : "not trying again: it needs a person"));
  f.evidence.push_back("last scancel returned at " + format_utc(done.last_at) +
                       "; Slurm marks a cancelled job COMPLETING at once");
  f.episode = task.run_key() + "#" + std::to_string(done.count);
  if (again) f.cause = "again-" + std::to_string(done.count);
  return f;
}

}  // namespace llmwatch
