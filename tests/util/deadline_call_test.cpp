#include "util/deadline_call.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

namespace llmwatch {
namespace {

// A call that blocks like one on a dead mount, until the test opens the gate.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(DeadlineCall, AnswersInTime) {
  auto r = call_with_deadline<int>("quick", std::chrono::seconds(5), [] { return 7; });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(*r.value, 7);
}

TEST(DeadlineCall, AHungCallIsLeftBehindAndBlocksOnlyItsOwnKey) {
  auto gate = std::make_shared<Gate>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto hung = [gate, calls] {
    ++*calls;
    gate->wait();
    return 1;
  };
  auto first = call_with_deadline<int>("read /nfs/log", std::chrono::milliseconds(50), hung);
  EXPECT_FALSE(first.ok());
  EXPECT_NE(first.error.find("no answer within"), std::string::npos) << first.error;
  // While it is stuck, the same key fails at once and starts no second call.
  auto second = call_with_deadline<int>("read /nfs/log", std::chrono::seconds(5), hung);
  EXPECT_NE(second.error.find("an earlier call has not answered"), std::string::npos)
      << second.error;
  EXPECT_EQ(calls->load(), 1);
  // Another key is not held up.
  EXPECT_TRUE(
      call_with_deadline<int>("read /local/log", std::chrono::seconds(5), [] { return 2; }).ok());
  gate->release();
  // Once the stuck call returns, the key works again (poll with a deadline).
  Deadlined<int> again;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    again = call_with_deadline<int>("read /nfs/log", std::chrono::seconds(5), [] { return 3; });
  } while (!again.ok() && std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(*again.value, 3);
}

TEST(DeadlineCall, AThrowingCallIsAnErrorNotACrash) {
  auto r = call_with_deadline<int>("boom", std::chrono::seconds(5),
                                   []() -> int { throw std::runtime_error("EIO"); });
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "boom: EIO");
  EXPECT_TRUE(call_with_deadline<int>("boom", std::chrono::seconds(5), [] { return 1; }).ok());
}

// run and daemon fork their worker after the parent may have made calls: the child has none
// of the parent's threads, so it must neither wait on the parent's idle workers nor see the
// parent's stuck call as its own.
TEST(DeadlineCall, AForkedChildRunsCallsOfItsOwn) {
  auto gate = std::make_shared<Gate>();
  ASSERT_TRUE(call_with_deadline<int>("warm", std::chrono::seconds(5), [] { return 1; }).ok());
  EXPECT_FALSE(call_with_deadline<int>("stuck", std::chrono::milliseconds(20), [gate] {
                 gate->wait();
                 return 1;
               }).ok());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    bool fresh = call_with_deadline<int>("fresh", std::chrono::seconds(5), [] { return 2; }).ok();
    bool stuck = call_with_deadline<int>("stuck", std::chrono::seconds(5), [] { return 3; }).ok();
    _exit(fresh && stuck ? 0 : (fresh ? 2 : 1));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  gate->release();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a call found no worker; 2: the parent's stuck key";
}

// A batch answers every call in order, each with its own result or error.
TEST(DeadlineBatch, AnswersEveryCallInOrder) {
  std::vector<DeadlineTask<int>> calls;
  for (int i = 0; i < 50; ++i) calls.push_back({"batch " + std::to_string(i), [i] { return i; }});
  calls[7].fn = []() -> int { throw std::runtime_error("EIO"); };
  auto out = call_all_with_deadline<int>(std::move(calls), std::chrono::seconds(5), 3);
  ASSERT_EQ(out.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    if (i == 7) {
      EXPECT_EQ(out[i].error, "batch 7: EIO");
      continue;
    }
    ASSERT_TRUE(out[i].ok()) << out[i].error;
    EXPECT_EQ(*out[i].value, i);
  }
}

// One runner, and the second call hangs: it is left behind with the usual error, its key
// stays claimed, and a new runner answers the calls after it.
TEST(DeadlineBatch, AHungCallHoldsUpOnlyItself) {
  auto gate = std::make_shared<Gate>();
  std::vector<DeadlineTask<int>> calls;
  calls.push_back({"batch a", [] { return 1; }});
  calls.push_back({"batch /nfs", [gate] {
                     gate->wait();
                     return 2;
                   }});
  for (int i = 3; i <= 5; ++i) calls.push_back({"batch " + std::to_string(i), [i] { return i; }});
  auto out = call_all_with_deadline<int>(std::move(calls), std::chrono::milliseconds(100), 1);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].value, 1);
  EXPECT_NE(out[1].error.find("no answer within"), std::string::npos) << out[1].error;
  EXPECT_EQ(out[2].value, 3);
  EXPECT_EQ(out[4].value, 5);
  // Still stuck: the next batch fails that key at once, and answers the others.
  std::vector<DeadlineTask<int>> again;
  again.push_back({"batch /nfs", [] { return 9; }});
  again.push_back({"batch b", [] { return 8; }});
  auto next = call_all_with_deadline<int>(std::move(again), std::chrono::seconds(5));
  EXPECT_NE(next[0].error.find("an earlier call has not answered"), std::string::npos)
      << next[0].error;
  EXPECT_EQ(next[1].value, 8);
  gate->release();
}

TEST(DeadlineBatch, AnEmptyBatchIsEmpty) {
  EXPECT_TRUE(call_all_with_deadline<int>({}, std::chrono::seconds(1)).empty());
}

}  // namespace
}  // namespace llmwatch
