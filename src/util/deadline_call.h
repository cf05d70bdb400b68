// A file-system call that may hang in the kernel, bounded by a deadline.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace llmwatch {

namespace deadline_detail {
// Keys whose call has not returned yet; false when key already has one outstanding (the
// seconds it has been stuck are then in *stuck_for).
bool claim(const std::string& key, long* stuck_for);
void release(const std::string& key);
// Runs task on a waiting worker thread, starting one when none waits. A cycle makes a few
// such calls per watched job (a glob, a read, an lstat): a thread started for each cost a
// tenth of a cycle's CPU at 1,000 jobs. A worker stuck in the kernel simply never waits
// again (later calls get another); workers idle for a while end.
void dispatch(std::function<void()> task);
}  // namespace deadline_detail

template <class T>
struct Deadlined {
  std::optional<T> value;  // absent: the call did not answer in time, or one is still stuck
  std::string error;       // one line, naming the key
  bool ok() const { return value.has_value(); }
};

// Runs fn on a worker thread and waits at most `limit` for it. On a dead NFS or Lustre mount,
// open, read, stat, glob and statvfs block in the kernel where no signal reaches them; the
// cycle must go on, so the caller gets an error and the worker is left behind. At
// most one call per key is ever outstanding: while one is stuck, later calls for that key
// fail at once and start no thread (a dead mount would otherwise strand one more thread
// every cycle). fn must own everything it touches (capture by value): it may outlive the
// caller.
template <class T>
Deadlined<T> call_with_deadline(const std::string& key, std::chrono::milliseconds limit,
                                std::function<T()> fn) {
  Deadlined<T> out;
  long stuck = 0;
  if (!deadline_detail::claim(key, &stuck)) {
    out.error = key + ": an earlier call has not answered for " + std::to_string(stuck) + "s";
    return out;
  }
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  deadline_detail::dispatch([promise, key, fn = std::move(fn)] {
    // The key is free before the answer is: whoever sees the answer may call again at once.
    std::optional<T> value;
    std::exception_ptr failure;
    try {
      value = fn();
    } catch (...) {
      failure = std::current_exception();
    }
    deadline_detail::release(key);
    if (failure)
      promise->set_exception(failure);
    else
      promise->set_value(std::move(*value));
  });
  if (future.wait_for(limit) != std::future_status::ready) {
    out.error = key + ": no answer within " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
                "s (a hung mount?)";
    return out;
  }
  try {
    out.value = future.get();
  } catch (const std::exception& e) {
    out.error = key + ": " + e.what();
  }
  return out;
}

}  // namespace llmwatch
