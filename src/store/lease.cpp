#include "store/lease.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "util/files.h"
#include "util/units.h"

namespace llmwatch {

namespace {

// A writer needs microseconds: a lease or takeover lock this old that cannot be read, or
// whose writer is gone, was left by a process killed while writing it (found by SIGKILL
// fault injection: such a file used to lock every later instance out).
constexpr double kStaleWrite = 5;

std::optional<LeaseInfo> parse_lease(const std::string& path) {
  std::ifstream in(path);
  LeaseInfo info;
  if (!(in >> info.host >> info.pid >> info.expires)) return std::nullopt;
  if (!(in >> info.generation)) info.generation = 0;  // written before generations existed
  return info;
}

std::int64_t read_generation(const std::string& path) {
  std::ifstream in(path);
  std::int64_t g = 0;
  return (in >> g) ? g : 0;
}

// Atomically, so a reader never sees a half-written number.
void write_generation(const std::string& path, std::int64_t g) {
  std::string tmp = path + "." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << g << '\n';
    if (!out.flush()) {
      ::unlink(tmp.c_str());
      return;  // the lease file still carries the generation; fencing compares that
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

// What a file is, to tell whether it changed between two looks: its inode and its bytes (a
// lease or lock is one short line). "" when it is gone, or is not a file that can be read (a
// directory in the way: a stream read of one threw out of acquire).
std::string identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  auto text = read_text_file(path);
  return text ? std::to_string(st.st_ino) + " " + *text : "";
}

bool same_holder(const LeaseInfo& a, const LeaseInfo& b) {
  return a.host == b.host && a.pid == b.pid && a.expires == b.expires &&
         a.generation == b.generation;
}

}  // namespace

std::string LeaseInfo::str() const {
  return host + ":" + std::to_string(pid) + " until " + format_utc(expires);
}

Lease::Lease(std::string state_dir, std::string host, int pid)
    : path_(std::move(state_dir) + "/lease"), host_(std::move(host)), pid_(pid) {}

Lease::~Lease() {
  release();
}

std::string Lease::content(double expires) const {
  std::ostringstream out;
  out.precision(17);
  out << host_ << ' ' << pid_ << ' ' << expires << ' ' << generation_ << '\n';
  return out.str();
}

std::optional<LeaseInfo> Lease::read(const std::string& state_dir) {
  return parse_lease(state_dir + "/lease");
}

// Same host, another pid, and that pid does not exist: the holder died (SIGKILL, OOM, a
// hard deadline) without releasing. Waiting out its TTL would only leave the runs unwatched.
bool Lease::holder_dead(const LeaseInfo& info) const {
  return info.host == host_ && info.pid != pid_ && info.pid > 0 && ::kill(info.pid, 0) != 0 &&
         errno == ESRCH;
}

bool Lease::create(double now, double ttl) {
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    if (errno != EEXIST) last_error_ = "cannot create " + path_ + ": " + std::strerror(errno);
    return false;
  }
  // Only the creator of the lease file gets here, so the generation cannot be raced.
  std::string generation_path = path_ + ".generation";
  generation_ = read_generation(generation_path) + 1;
  write_generation(generation_path, generation_);
  std::string text = content(now + ttl);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  if (!ok) last_error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  ::close(fd);
  if (!ok) {
    ::unlink(path_.c_str());
    return false;
  }
  held_ = true;
  return true;
}

// Whether `path` has stayed exactly as it is for kStaleWrite by this host's own clock. The
// file's mtime is never compared with `now`: on shared storage it is another host's (or the
// file server's) clock, and with more skew than kStaleWrite one host deleted another's live
// lock (#26 B). The first sighting is kept beside it, per host, so that a one-shot
// `run --once` remembers it across runs.
bool Lease::unchanged_for_a_while(const std::string& path, double now) const {
  std::string seen_path = path + ".seen." + host_;
  std::string identity = identity_of(path);
  if (identity.empty()) return false;
  std::ifstream in(seen_path);
  std::string seen_identity, line;
  double first = 0;
  bool known = static_cast<bool>(std::getline(in, seen_identity, '\0')) &&
               static_cast<bool>(in >> first) && seen_identity == identity;
  if (known && now >= first && now - first >= kStaleWrite) {
    ::unlink(seen_path.c_str());
    return true;
  }
  if (!known || now < first) {  // another file, or this host's clock went back: start again
    std::ofstream out(seen_path, std::ios::trunc);
    out.precision(17);
    out << identity << '\0' << now;
  }
  return false;
}

// The short-lived takeover lock. A lock left by a dead process (on this host, or unchanged
// for longer than any writer needs) is removed, and the caller may try again.
bool Lease::take_lock(double now) {
  std::string lock = path_ + ".takeover";
  int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno != EEXIST) {
    last_error_ = "cannot create " + lock + ": " + std::strerror(errno);
    return false;
  }
  if (fd < 0) {
    auto holder = parse_lease(lock);
    if ((holder && holder_dead(*holder)) || unchanged_for_a_while(lock, now))
      ::unlink(lock.c_str());
    return false;
  }
  std::string me = content(now);
  if (::write(fd, me.data(), me.size()) < 0) { /* the lock works without its content */
  }
  ::close(fd);
  return true;
}

bool Lease::acquire(double now, double ttl) {
  // A renewal that failed with the lease still ours (a full or read-only state disk, a lock in
  // the way) keeps it held, to renew as soon as it can be written: competing for it would find
  // it unexpired, naming us, and wait out our own TTL. Lost or expired: compete like anyone.
  if (held_) {
    if (renew(now, ttl)) return true;
    if (held_) return false;
  }
  last_error_.clear();
  if (create(now, ttl)) return true;
  auto current = parse_lease(path_);
  if (!current) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return create(now, ttl);  // just vanished
    if (!unchanged_for_a_while(path_, now)) return false;          // may be being written
  } else if (current->expires > now && !holder_dead(*current)) {
    return false;
  }
  // Expired, or its holder is dead. Taking it over needs the takeover lock, so that of
  // several racers only one removes the stale lease; a racer arriving meanwhile can only
  // O_EXCL-create. The first try may only have cleared a dead process's lock.
  if (!take_lock(now) && !take_lock(now)) return false;
  bool won = false;
  auto again = parse_lease(path_);
  bool unchanged = (!current && !again) || (current && again && same_holder(*again, *current));
  if (unchanged) {
    ::unlink(path_.c_str());
    won = create(now, ttl);  // fails if a racer created a fresh one in between: theirs stands
  }
  ::unlink((path_ + ".takeover").c_str());
  return won;
}

bool Lease::renew(double now, double ttl) {
  // Compare and write under the takeover lock: a racer taking over our (expired) lease
  // holds it, so a renewal cannot overwrite a lease that was just taken over.
  // Not taken: held as before (the file says whose it is); check() fences on the file.
  last_error_.clear();
  if (!take_lock(now) && !take_lock(now)) return false;  // the first may clear a stale lock
  auto current = parse_lease(path_);
  bool ours = current && current->host == host_ && current->pid == pid_ &&
              current->generation == generation_ && current->expires >= now;
  bool ok = false;
  if (ours) {
    std::string tmp = path_ + ".renew." + std::to_string(pid_);
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << content(now + ttl);
      ok = static_cast<bool>(out.flush());
    }
    if (!ok) {
      last_error_ = "cannot write " + tmp + ": " + std::strerror(errno);
    } else if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      last_error_ = "cannot rename " + tmp + ": " + std::strerror(errno);
      ok = false;
    }
    if (!ok) ::unlink(tmp.c_str());
  }
  ::unlink((path_ + ".takeover").c_str());
  if (!ours) held_ = false;
  return ok;
}

std::string Lease::check(double now) const {
  if (!held_) return "the lease is not held";
  auto current = parse_lease(path_);
  if (!current) return "the lease file is gone or unreadable";
  if (current->host != host_ || current->pid != pid_ || current->generation != generation_)
    return "the lease was taken over by " + current->str() + " (generation " +
           std::to_string(current->generation) + ", ours " + std::to_string(generation_) + ")";
  if (current->expires <= now) return "the lease expired at " + current->str();
  return "";
}

void Lease::release() {
  if (!held_) return;
  auto current = parse_lease(path_);
  if (current && current->host == host_ && current->pid == pid_ &&
      current->generation == generation_)
    ::unlink(path_.c_str());
  held_ = false;
}

}  // namespace llmwatch
