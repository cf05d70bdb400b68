#include "app/cycle_watchdog.h"

namespace llmwatch {

CycleWatchdog::CycleWatchdog(std::chrono::milliseconds limit, std::function<void()> on_expire) {
  thread_ = std::thread([this, limit, on_expire = std::move(on_expire)] {
    std::unique_lock lock(mutex_);
    // steady_clock: a wall-clock step must neither fire it early nor hold it off.
    if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) on_expire();
  });
}

CycleWatchdog::~CycleWatchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  thread_.join();
}

}  // namespace llmwatch
