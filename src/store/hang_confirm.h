#pragma once
// confirm_hang's first dump, kept until its second is taken in a later cycle (kv
// hangconfirm:<job>): written and judged by the dump action, read by the daemon's wake; also
// written by the look for a fatal line's rank (cycle/checks/rank_exit_look.h), whose stacks,
// taken where that rank has ended, are the first dump of the hang found soon after.
#include <optional>
#include <string>

namespace llmwatch {

class Store;

struct PendingConfirm {
  std::string task;  // the task it was taken of
  std::string dump;  // the dump's text
  double ts = 0;     // the cycle that took it
  // Taken by the look, before the hang was found: its peers may not have reached the collective
  // yet (a rank still computing its step when another's error was printed), so stacks that moved
  // since say nothing of a hang, and the dump that sees them is the first instead.
  bool by_look = false;
};

// nullopt when none is kept or the row is not one.
std::optional<PendingConfirm> read_hang_confirm(Store& store, const std::string& job);
void put_hang_confirm(Store& store, const std::string& job, const PendingConfirm& p, double now);
void clear_hang_confirm(Store& store, const std::string& job, double now);

}  // namespace llmwatch
