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
#include <vector>

namespace llmwatch {

namespace deadline_detail {
// Keys whose call has not returned yet; false when key already has one outstanding (the
// seconds it has been stuck are then in *stuck_for).
bool claim(const std::string& key, long* stuck_for);
void release(const std::string& key);
// The two ways a call fails without an answer, in the same words for one call or a batch.
std::string stuck_error(const std::string& key, long stuck_seconds);
std::string timeout_error(const std::string& key, std::chrono::milliseconds limit);
// Runs task on a waiting worker thread, starting one when none waits. A cycle makes a few
// such calls per watched job (a glob, a read, an lstat): a thread started for each cost a
// tenth of a cycle's CPU at 1,000 jobs. A worker stuck in the kernel simply never waits
// again (later calls get another); workers idle for a while end.
void dispatch(std::function<void()> task);
// Runs every task, `runners` at a time, each bounded by `limit` from its own start. Returns
// for each task whether it finished in time (true) or was left behind (false). A runner whose
// task is left behind is replaced, so the rest of the batch goes on.
std::vector<bool> run_batch(std::vector<std::function<void()>> tasks,
                            std::chrono::milliseconds limit, std::size_t runners);
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
    out.error = deadline_detail::stuck_error(key, stuck);
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
    out.error = deadline_detail::timeout_error(key, limit);
    return out;
  }
  try {
    out.value = future.get();
  } catch (const std::exception& e) {
    out.error = key + ": " + e.what();
  }
  return out;
}

template <class T>
struct DeadlineTask {
  std::string key;
  std::function<T()> fn;
};

// call_with_deadline for many calls at once: one result per call, in order, each bounded by
// `limit` from its own start and keyed the same way. A few runners take the calls in turn, so
// a cycle's per-job file work costs no thread wake-up per job: handed off one call at a time,
// the wake-ups cost a third of a cycle's CPU at 1,000 jobs. A call that hangs holds up only
// its runner; another takes over the rest.
template <class T>
std::vector<Deadlined<T>> call_all_with_deadline(std::vector<DeadlineTask<T>> calls,
                                                 std::chrono::milliseconds limit,
                                                 std::size_t runners = 4) {
  // Owned by the tasks too: one left behind may write its answer after this returns.
  struct Answers {
    std::vector<std::optional<T>> values;
    std::vector<std::string> errors;
  };
  auto answers = std::make_shared<Answers>();
  answers->values.resize(calls.size());
  answers->errors.resize(calls.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < calls.size(); ++i)
    tasks.push_back([answers, i, key = calls[i].key, fn = std::move(calls[i].fn)] {
      long stuck = 0;
      if (!deadline_detail::claim(key, &stuck)) {
        answers->errors[i] = deadline_detail::stuck_error(key, stuck);
        return;
      }
      try {
        answers->values[i] = fn();
      } catch (const std::exception& e) {
        answers->errors[i] = key + ": " + e.what();
      } catch (...) {
        answers->errors[i] = key + ": unknown error";
      }
      deadline_detail::release(key);
    });
  auto finished = deadline_detail::run_batch(std::move(tasks), limit, runners);
  std::vector<Deadlined<T>> out(finished.size());
  for (size_t i = 0; i < finished.size(); ++i) {
    if (!finished[i]) {
      out[i].error = deadline_detail::timeout_error(calls[i].key, limit);
    } else if (answers->values[i]) {
      out[i].value = std::move(answers->values[i]);
    } else {
      out[i].error = std::move(answers->errors[i]);
    }
  }
  return out;
}

}  // namespace llmwatch
