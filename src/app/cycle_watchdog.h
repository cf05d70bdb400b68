#pragma once
// The hard deadline of one cycle. Every subprocess and check has its own timeout, but a
// cycle can still stall where none applies (a stuck NFS read, a SQLite lock, a bug). Past
// the deadline the process must not sit on the lease: the watchdog runs `on_expire` (which
// logs, gives the lease back and exits) from its own thread. Disarmed when destroyed.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace llmwatch {

class CycleWatchdog {
 public:
  CycleWatchdog(std::chrono::milliseconds limit, std::function<void()> on_expire);
  ~CycleWatchdog();
  CycleWatchdog(const CycleWatchdog&) = delete;
  CycleWatchdog& operator=(const CycleWatchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace llmwatch
