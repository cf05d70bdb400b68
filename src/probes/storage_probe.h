#pragma once
// What a [[storage]] entry looks like right now: statvfs (bytes and inodes, always) and
// optionally a quota command's report. statvfs on a hung network mount blocks in the
// kernel, so it runs on its own thread with a deadline: past it the answer is "unknown".
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

struct statvfs;

#include "config/config.h"
#include "probes/quota.h"

namespace llmwatch {

struct StorageObservation {
  std::string path;
  std::string error;                              // statvfs failed or timed out: unknown
  std::uint64_t total_bytes = 0, free_bytes = 0;  // free: what an unprivileged writer can use
  std::uint64_t total_inodes = 0, free_inodes = 0;
  std::optional<QuotaReport> quota;
  std::string quota_error;  // the quota command failed, hung or printed garbage: unknown
  bool ok() const { return error.empty(); }
};

// The statvfs call; replaceable so that tests can make it hang.
using StatvfsFn = int (*)(const char*, struct statvfs*);

// At most one statvfs per path is outstanding: while an earlier call still hangs in the
// kernel, the path is "unknown" at once and no new thread is started (a dead NFS mount would
// otherwise strand one more thread every cycle, 2,880 a day at a 30 s interval).
StorageObservation probe_storage(const StorageSettings& settings,
                                 std::chrono::milliseconds statvfs_timeout,
                                 StatvfsFn statvfs_fn = nullptr);

}  // namespace llmwatch
