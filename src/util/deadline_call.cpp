#include "util/deadline_call.h"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace llmwatch::deadline_detail {
namespace {

// The calls still outstanding, and the worker threads that run them.
struct State {
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
// have been held at the fork).
State* state = nullptr;

State& the_state() {
  static const bool ready = [] {
    state = new State;
    pthread_atfork(nullptr, nullptr, [] { state = new State; });
    return true;
  }();
  (void)ready;
  return *state;
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

}  // namespace llmwatch::deadline_detail
