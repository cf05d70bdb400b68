#include "probes/storage_probe.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "util/deadline_call.h"
#include "util/subprocess.h"

namespace llmwatch {

StorageObservation probe_storage(const StorageSettings& settings,
                                 std::chrono::milliseconds statvfs_timeout, StatvfsFn statvfs_fn) {
  StorageObservation o;
  o.path = settings.path;
  if (!statvfs_fn) statvfs_fn = ::statvfs;
  struct Result {
    int rc = 0, err = 0;
    struct statvfs st {};
  };
  std::string path = settings.path;
  auto call = call_with_deadline<Result>("statvfs " + path, statvfs_timeout, [path, statvfs_fn] {
    Result r;
    r.rc = statvfs_fn(path.c_str(), &r.st);
    r.err = errno;
    return r;
  });
  if (!call.ok()) {
    o.error = call.error;
    return o;
  }
  Result r = *call.value;
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
