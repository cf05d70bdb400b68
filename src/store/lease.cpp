#include "store/lease.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace llmwatch {

std::string LeaseInfo::str() const {
  char buf[32] = "?";
  std::time_t t = static_cast<std::time_t>(expires);
  std::tm tm{};
  if (gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return host + ":" + std::to_string(pid) + " until " + buf;
}

Lease::Lease(std::string state_dir, std::string host, int pid)
    : path_(std::move(state_dir) + "/lease"), host_(std::move(host)), pid_(pid) {}

Lease::~Lease() {
  release();
}

std::string Lease::content(double expires) const {
  std::ostringstream out;
  out.precision(17);
  out << host_ << ' ' << pid_ << ' ' << expires << '\n';
  return out.str();
}

static std::optional<LeaseInfo> parse_lease(const std::string& path) {
  std::ifstream in(path);
  LeaseInfo info;
  if (!(in >> info.host >> info.pid >> info.expires)) return std::nullopt;
  return info;
}

std::optional<LeaseInfo> Lease::read(const std::string& state_dir) {
  return parse_lease(state_dir + "/lease");
}

bool Lease::create(double now, double ttl) {
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  std::string text = content(now + ttl);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) {
    ::unlink(path_.c_str());
    return false;
  }
  held_ = true;
  return true;
}

bool Lease::acquire(double now, double ttl) {
  if (held_ && renew(now, ttl)) return true;  // else: lost or expired; compete like anyone
  if (create(now, ttl)) return true;
  // A writer needs microseconds: a lease or takeover lock this old that cannot be read, or
  // whose writer is gone, was left by a process killed while writing it (found by SIGKILL
  // fault injection: such a file used to lock every later instance out).
  constexpr double kStaleWrite = 5;
  auto current = parse_lease(path_);
  if (!current) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return create(now, ttl);            // just vanished
    if (static_cast<double>(st.st_mtime) > now - kStaleWrite) return false;  // being written
  } else if (current->expires > now) {
    return false;
  }
  // Expired. Taking it over needs a short-lived takeover lock, so that of several racers
  // only one removes the stale lease; a racer arriving meanwhile can only O_EXCL-create.
  std::string lock = path_ + ".takeover";
  int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    struct stat st {};
    auto holder = parse_lease(lock);
    bool dead = holder && holder->host == host_ && ::kill(holder->pid, 0) != 0 && errno == ESRCH;
    if (dead ||
        (::stat(lock.c_str(), &st) == 0 && static_cast<double>(st.st_mtime) < now - kStaleWrite))
      ::unlink(lock.c_str());
    return false;
  }
  std::string me = content(now);
  if (::write(fd, me.data(), me.size()) < 0) { /* the lock works without its content */
  }
  ::close(fd);
  bool won = false;
  auto again = parse_lease(path_);
  bool unchanged =
      (!current && !again) || (current && again && again->host == current->host &&
                               again->pid == current->pid && again->expires == current->expires);
  if (unchanged) {
    ::unlink(path_.c_str());
    won = create(now, ttl);  // fails if a racer created a fresh one in between: theirs stands
  }
  ::unlink(lock.c_str());
  return won;
}

bool Lease::renew(double now, double ttl) {
  auto current = parse_lease(path_);
  if (!current || current->host != host_ || current->pid != pid_ || current->expires < now) {
    held_ = false;
    return false;
  }
  std::string tmp = path_ + ".renew." + std::to_string(pid_);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content(now + ttl);
    if (!out.flush()) return false;
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void Lease::release() {
  if (!held_) return;
  auto current = parse_lease(path_);
  if (current && current->host == host_ && current->pid == pid_) ::unlink(path_.c_str());
  held_ = false;
}

}  // namespace llmwatch
