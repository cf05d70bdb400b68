#include "job/kept_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "slurm/slurm_job.h"
#include "util/deadline_call.h"
#include "util/files.h"
#include "util/identity.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// The last `bytes` of `path`, read as its owner `uid` wrote it; why not otherwise.
Result<std::string> tail_owned_by(const std::string& path, uid_t uid, std::size_t bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) return Error{path + ": a symlink, not followed"};
  if (fd < 0) return Error{path + ": " + std::strerror(errno)};
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = path + ": " + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = path + ": not a regular file";
  else if (st.st_uid != uid)
    why = path + ": not owned by the job's owner";
  std::string text;
  if (why.empty()) {
    off_t size = st.st_size;
    off_t from = size > static_cast<off_t>(bytes) ? size - static_cast<off_t>(bytes) : 0;
    text.resize(static_cast<std::size_t>(size - from));
    std::size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::pread(fd, text.data() + got, text.size() - got, from + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // shorter than its stat said: what was there
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (!why.empty()) return Error{why};
  return text;
}

// One file's tail kept as `copy`; what was done, or why not, for the action's line.
std::string keep_one(const std::string& what, const std::string& path, const std::string& copy,
                     uid_t uid, const ActionContext& ctx) {
  auto read = call_with_deadline<Result<std::string>>(
      "keep " + path,
      std::chrono::duration_cast<std::chrono::milliseconds>(ctx.config.probe_timeout),
      [path, uid] { return tail_owned_by(path, uid, kKeptLogBytes); });
  if (!read.ok()) return what + " not kept: " + read.error;
  if (!*read.value) return what + " not kept: " + read.value->error();
  if (auto written = write_private_file(copy, **read.value); !written)
    return what + " not kept: " + written.error();
  return what + "'s last " + format_size((*read.value)->size()) + " kept in " + copy;
}

}  // namespace

std::string kept_logs_dir(const std::string& state_dir) {
  return state_dir + "/requeued-logs";
}

std::string keep_task_log(const SlurmJob& t, const ActionContext& ctx) {
  auto owner = lookup_user(t.user);
  if (!owner) return "its log not kept: its owner '" + t.user + "' is unknown here";
  const std::string dir = kept_logs_dir(ctx.config.state_dir);
  if (Status made = make_private_dir(dir); !made) return "its log not kept: " + made.error();
  const std::string stem = dir + "/" + run_key_file_stem(t.run_key());
  std::string said = keep_one("its log", job_stdout_path(t), stem + ".log", owner->uid, ctx);
  // --error to a file of its own is emptied the same way.
  if (std::string err = job_stderr_path(t); !err.empty())
    said += "; " + keep_one("its error log", err, stem + ".err.log", owner->uid, ctx);
  keep_newest_files(dir, kKeptLogs);
  return said;
}

}  // namespace llmwatch
