#pragma once
// One active supervisor at a time. The lease is a file in state_dir created atomically
// (O_EXCL), holding "host pid expiry generation"; an expired lease is taken over under a
// short-lived takeover lock (also O_EXCL), so that of several racers exactly one wins.
// Works on shared filesystems, where two llmwatch runs may overlap on different hosts.
//
// Fencing: every acquisition gets a new generation (kept in "lease.generation", which
// outlives the lease file). The holder checks, before each action, that the lease still
// names it with the generation it acquired and has not expired (check()); a supervisor
// that was deposed mid-cycle (a stalled cycle, a TTL too short) therefore stops acting
// instead of acting beside its successor.
#include <cstdint>
#include <optional>
#include <string>

namespace llmwatch {

struct LeaseInfo {
  std::string host;
  int pid = 0;
  double expires = 0;  // unix seconds
  std::int64_t generation = 0;
  std::string str() const;  // "host:pid until 2026-11-22T03:00:00Z"
};

class Lease {
 public:
  Lease(std::string state_dir, std::string host, int pid);
  ~Lease();  // releases if held

  // Takes the lease for ttl seconds; false when someone else holds an unexpired one. A
  // holder on this host whose process is gone holds nothing: its lease is taken at once.
  bool acquire(double now, double ttl);
  // Extends a lease we hold; false if we lost it (someone took it over after expiry). The
  // lease is compared and rewritten under the takeover lock, so a takeover cannot slip in
  // between the comparison and the write.
  bool renew(double now, double ttl);
  void release();
  bool held() const { return held_; }
  std::int64_t generation() const { return generation_; }
  // "" while the lease still names this holder and generation and has not expired at
  // `now`; otherwise why this holder must not act.
  std::string check(double now) const;

  static std::optional<LeaseInfo> read(const std::string& state_dir);
  std::string path() const { return path_; }
  // Why the last acquire or renew could not write the lease ("cannot write PATH: Read-only
  // file system"); "" when it wrote, or when it lost to another holder.
  const std::string& last_error() const { return last_error_; }

 private:
  bool create(double now, double ttl);
  bool take_lock(double now);
  bool unchanged_for_a_while(const std::string& path, double now) const;
  std::string content(double expires) const;
  bool holder_dead(const LeaseInfo& info) const;

  std::string path_;
  std::string host_;
  int pid_;
  bool held_ = false;
  std::int64_t generation_ = 0;
  std::string last_error_;
};

}  // namespace llmwatch
