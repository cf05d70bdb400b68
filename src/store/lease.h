#pragma once
// One active supervisor at a time. The lease is a file in state_dir created atomically
// (O_EXCL), holding "host pid expiry"; an expired lease is taken over under a short-lived
// takeover lock (also O_EXCL), so that of several racers exactly one wins.
// Works on shared filesystems, where two llmwatch runs may overlap on different hosts.
#include <optional>
#include <string>

namespace llmwatch {

struct LeaseInfo {
  std::string host;
  int pid = 0;
  double expires = 0;       // unix seconds
  std::string str() const;  // "host:pid until 2026-11-22T03:00:00Z"
};

class Lease {
 public:
  Lease(std::string state_dir, std::string host, int pid);
  ~Lease();  // releases if held

  // Takes the lease for ttl seconds; false when someone else holds an unexpired one.
  bool acquire(double now, double ttl);
  // Extends a lease we hold; false if we lost it (someone took it over after expiry).
  bool renew(double now, double ttl);
  void release();
  bool held() const { return held_; }

  static std::optional<LeaseInfo> read(const std::string& state_dir);
  std::string path() const { return path_; }

 private:
  bool create(double now, double ttl);
  std::string content(double expires) const;

  std::string path_;
  std::string host_;
  int pid_;
  bool held_ = false;
};

}  // namespace llmwatch
