#include "util/deadline_call.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace llmwatch::deadline_detail {
namespace {

// The calls still outstanding, and the worker threads that run them.
struct State {
  pid_t pid = ::getpid();  // the process it is of
  std::mutex outstanding_mutex;
  std::map<std::string, std::chrono::steady_clock::time_point> outstanding;

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> tasks;
  std::size_t waiting = 0;  // workers blocked on `wake`, ready for a task
};

// Never destroyed: a worker stuck in the kernel may outlive main, and must find it intact.
// A forked child (run and daemon work in one) has none of its parent's threads, so none of
// its outstanding calls or waiting workers: it starts afresh (the parent's locks may even
// have been held at the fork), at its first call. Not in a pthread_atfork handler: that runs
// in every fork, Boost.Process's before each exec too, and allocating there can deadlock on
// an allocator lock another thread held at the fork (the sanitizer CI's daemon hung so,
// between fork and exec of a subprocess, with it).
std::atomic<State*> state{nullptr};

State& the_state() {
  State* s = state.load(std::memory_order_acquire);
  if (s && s->pid == ::getpid()) return *s;
  auto* fresh = new State;
  if (state.compare_exchange_strong(s, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread of this process made one first
  return *s;
}

constexpr auto kIdleEnd = std::chrono::seconds(60);

void work(State& w) {
  std::unique_lock lock(w.mutex);
  for (;;) {
    ++w.waiting;
    bool has_task = w.wake.wait_for(lock, kIdleEnd, [&] { return !w.tasks.empty(); });
    --w.waiting;
    if (!has_task) return;
    auto task = std::move(w.tasks.front());
    w.tasks.pop_front();
    lock.unlock();
    task();  // never throws: call_with_deadline catches
    lock.lock();
  }
}

}  // namespace

bool claim(const std::string& key, long* stuck_for) {
  State& s = the_state();
  std::lock_guard lock(s.outstanding_mutex);
  auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = s.outstanding.emplace(key, now);
  if (!fresh && stuck_for)
    *stuck_for = std::chrono::duration_cast<std::chrono::seconds>(now - it->second).count();
  return fresh;
}

std::string stuck_error(const std::string& key, long stuck_seconds) {
  return key + ": an earlier call has not answered for " + std::to_string(stuck_seconds) + "s";
}

std::string timeout_error(const std::string& key, std::chrono::milliseconds limit) {
  return key + ": no answer within " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
         "s (a hung mount?)";
}

void release(const std::string& key) {
  State& s = the_state();
  std::lock_guard lock(s.outstanding_mutex);
  s.outstanding.erase(key);
}

void dispatch(std::function<void()> task) {
  State& w = the_state();
  std::lock_guard lock(w.mutex);
  w.tasks.push_back(std::move(task));
  // Every queued task needs a waiting worker of its own, or a new one.
  if (w.waiting >= w.tasks.size())
    w.wake.notify_one();
  else
    std::thread(work, std::ref(w)).detach();
}

namespace {

// One batch: the next task to start, each task's state and start, and the runners counted.
struct Batch {
  enum class Slot { pending, running, done, left_behind };
  std::mutex mutex;
  std::condition_variable runners_done;
  std::vector<std::function<void()>> tasks;
  std::vector<Slot> slots;
  std::vector<std::chrono::steady_clock::time_point> started;
  std::size_t next = 0;
  std::size_t active = 0;  // runners still taking tasks (one left stuck is no longer counted)
  bool may_start() const { return next < tasks.size(); }
};

// Takes tasks in turn while any is left, then signs off; a runner whose task
// was left behind meanwhile was replaced and no longer counts, so it just returns.
void run_tasks(const std::shared_ptr<Batch>& b) {
  std::unique_lock lock(b->mutex);
  while (b->may_start()) {
    std::size_t i = b->next++;
    b->slots[i] = Batch::Slot::running;
    b->started[i] = std::chrono::steady_clock::now();
    auto task = std::move(b->tasks[i]);
    lock.unlock();
    task();
    lock.lock();
    if (b->slots[i] != Batch::Slot::running) return;
    b->slots[i] = Batch::Slot::done;
  }
  // Only the last runner wakes the caller: a wake-up per task is what batching avoids.
  if (--b->active == 0) b->runners_done.notify_one();
}

}  // namespace

std::vector<bool> run_batch(std::vector<std::function<void()>> tasks,
                            std::chrono::milliseconds limit, std::size_t runners) {
  auto b = std::make_shared<Batch>();
  const std::size_t n = tasks.size();
  b->tasks = std::move(tasks);
  b->slots.assign(n, Batch::Slot::pending);
  b->started.resize(n);
  std::unique_lock lock(b->mutex);
  auto start_runner = [&b] {
    ++b->active;
    dispatch([b] { run_tasks(b); });
  };
  for (std::size_t r = 0; r < std::min(std::max<std::size_t>(runners, 1), n); ++r) start_runner();
  while (b->active > 0) {
    // Sleep until the earliest running task's deadline (or a whole limit, while runners are
    // still starting), or until the last runner is done.
    auto wake = std::chrono::steady_clock::now() + limit;
    for (std::size_t i = 0; i < b->next; ++i)
      if (b->slots[i] == Batch::Slot::running) wake = std::min(wake, b->started[i] + limit);
    b->runners_done.wait_until(lock, wake, [&] { return b->active == 0; });
    auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < b->next; ++i) {
      if (b->slots[i] != Batch::Slot::running || now < b->started[i] + limit) continue;
      b->slots[i] = Batch::Slot::left_behind;  // its runner is stuck: another takes over
      --b->active;
      if (b->may_start()) start_runner();
    }
  }
  std::vector<bool> finished(b->next);
  for (std::size_t i = 0; i < b->next; ++i) finished[i] = b->slots[i] == Batch::Slot::done;
  return finished;
}

}  // namespace llmwatch::deadline_detail
