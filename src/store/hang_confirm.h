#pragma once
// confirm_hang's first dump, kept until its second is taken in a later cycle (kv
// hangconfirm:<job>): written and judged by the dump action, read by the daemon's wake.
#include <optional>
#include <string>

namespace llmwatch {

class Store;

struct PendingConfirm {
  std::string task;  // the task it was taken of
  std::string dump;  // the dump's text
  double ts = 0;     // the cycle that took it
};

// nullopt when none is kept or the row is not one.
std::optional<PendingConfirm> read_hang_confirm(Store& store, const std::string& job);
void put_hang_confirm(Store& store, const std::string& job, const PendingConfirm& p, double now);
void clear_hang_confirm(Store& store, const std::string& job, double now);

}  // namespace llmwatch
