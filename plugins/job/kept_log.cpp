#include "job/kept_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

}  // namespace

std::string kept_logs_dir(const std::string& state_dir) {
  return state_dir + "/logs";
}

std::string keep_task_log(const SlurmJob& t, const ActionContext& ctx) {
  auto owner = lookup_user(t.user);
  if (!owner) return "its log not kept: its owner '" + t.user + "' is unknown here";
  const std::string path = job_stdout_path(t);
  const uid_t uid = owner->uid;
  auto read = call_with_deadline<Result<std::string>>(
      "keep " + path,
      std::chrono::duration_cast<std::chrono::milliseconds>(ctx.config.probe_timeout),
      [path, uid] { return tail_owned_by(path, uid, kKeptLogBytes); });
  if (!read.ok()) return "its log not kept: " + read.error;
  if (!*read.value) return "its log not kept: " + read.value->error();
  const std::string dir = kept_logs_dir(ctx.config.state_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "its log not kept: cannot make " + dir + ": " + ec.message();
  ::chmod(dir.c_str(), 0700);
  std::string name = t.run_key();
  for (char& c : name)
    if (c == '@') c = '-';
  const std::string copy = dir + "/" + name + ".log";
  if (auto written = write_file_atomic(copy, **read.value); !written)
    return "its log not kept: " + written.error();
  ::chmod(copy.c_str(), 0600);
  keep_newest_files(dir, kKeptLogs);
  return "its log's last " + format_size((*read.value)->size()) + " kept in " + copy;
}

}  // namespace llmwatch
