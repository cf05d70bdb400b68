#include "probes/storage_probe.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "util/subprocess.h"

namespace llmwatch {

namespace {

// Paths whose statvfs has not returned yet, with when it was started.
std::mutex outstanding_mutex;
std::map<std::string, std::chrono::steady_clock::time_point> outstanding;

}  // namespace

StorageObservation probe_storage(const StorageSettings& settings,
                                 std::chrono::milliseconds statvfs_timeout, StatvfsFn statvfs_fn) {
  StorageObservation o;
  o.path = settings.path;
  if (!statvfs_fn) statvfs_fn = ::statvfs;
  {
    std::lock_guard lock(outstanding_mutex);
    if (auto it = outstanding.find(settings.path); it != outstanding.end()) {
      auto stuck = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - it->second);
      o.error = settings.path + ": an earlier statvfs has not answered for " +
                std::to_string(stuck.count()) + "s";
      return o;
    }
    outstanding[settings.path] = std::chrono::steady_clock::now();
  }
  struct Result {
    int rc = 0, err = 0;
    struct statvfs st {};
  };
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  std::string path = settings.path;
  // Detached: if statvfs hangs on a dead mount, the thread stays stuck in the kernel, but
  // the cycle goes on.
  std::thread([promise, path, statvfs_fn] {
    Result r;
    r.rc = statvfs_fn(path.c_str(), &r.st);
    r.err = errno;
    {
      std::lock_guard lock(outstanding_mutex);
      outstanding.erase(path);
    }
    promise->set_value(r);
  }).detach();
  if (future.wait_for(statvfs_timeout) != std::future_status::ready) {
    o.error = path + ": statvfs did not answer within " +
              std::to_string(statvfs_timeout.count() / 1000) + "s";
    return o;
  }
  Result r = future.get();
  if (r.rc != 0) {
    o.error = path + ": " + std::strerror(r.err);
    return o;
  }
  std::uint64_t frsize = r.st.f_frsize ? r.st.f_frsize : r.st.f_bsize;
  o.total_bytes = r.st.f_blocks * frsize;
  o.free_bytes = r.st.f_bavail * frsize;
  o.total_inodes = r.st.f_files;
  o.free_inodes = r.st.f_favail;

  if (settings.quota != "none" && !settings.quota_command.empty()) {
    ProcessSpec spec;
    spec.argv = settings.quota_command;
    spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings.quota_timeout);
    spec.max_output = 1 << 20;
    auto p = run_process(spec);
    // Quota tools exit non-zero when over quota (quota -w exits 1): judge the output.
    if (!p.started || p.timed_out || p.signal) {
      o.quota_error = p.describe(settings.quota_command[0]);
    } else {
      auto q = parse_quota(settings.quota, p.out, settings.quota_regex);
      if (q.ok())
        o.quota = q;
      else
        o.quota_error =
            q.error + (p.exit_code ? " (" + p.describe(settings.quota_command[0]) + ")" : "");
    }
  }
  return o;
}

}  // namespace llmwatch
