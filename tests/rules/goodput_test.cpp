// The goodput accountant (#29): a scripted run's buckets as its known times say, and for random
// histories (restarts, gaps, clock steps, requeues, runs seen only after they ended) buckets
// that are never negative and sum exactly to the time accounted.
#include "rules/goodput.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace llmwatch {
namespace {

std::map<std::string, double> sum_by_bucket(const std::vector<GoodputCharge>& charges) {
  std::map<std::string, double> out;
  for (const auto& c : charges) out[c.bucket] += c.gpu_s;
  return out;
}

struct Script {
  GoodputState st;
  std::vector<GoodputCharge> all;
  double t = 1'800'000'000;
  GoodputLook look(const std::string& task, double dt) {
    t += dt;
    GoodputLook l;
    l.now = t;
    l.task = task;
    l.gpus = 8;
    return l;
  }
  void see(const GoodputLook& l) {
    auto c = account_goodput(st, l);
    all.insert(all.end(), c.begin(), c.end());
  }
};

// Task 1 starts, takes 60 s to its first step, trains 10 min (steps 0-100, a 30 s save inside),
// hangs 3 min and is cancelled; task 2 waits 90 s in the queue, takes 60 s to its first step (step
// 50) and redoes 50 steps in 5 min, then trains 5 min more. Looks every 30 s. 8 GPUs.
TEST(Goodput, AScriptedRunsBucketsAreItsKnownTimes) {
  Script r;
  auto l0 = r.look("7@1", 0);
  l0.task_start = r.t;
  r.see(l0);
  auto step = [&](const std::string& task, std::int64_t n, bool saving = false) {
    auto l = r.look(task, 30);
    l.advanced = true;
    l.step = n;
    if (saving) l.save_from = r.t - 30, l.save_to = r.t;
    r.see(l);
  };
  auto l1 = r.look("7@1", 30);
  r.see(l1);                                                  // no step yet
  step("7@1", 0);                                             // first step at 60 s: startup 60 s
  for (int i = 1; i <= 20; ++i) step("7@1", i * 5, i == 10);  // 10 min, one look saving
  for (int i = 0; i < 6; ++i) {                               // 3 min hung
    auto l = r.look("7@1", 30);
    l.step = 100;
    l.hang_firing = i > 0;  // the finding fires after the first silent look
    r.see(l);
  }
  auto gone = r.look("", 0);  // cancelled: gone at the same moment, then pending
  gone.pending = true;
  gone.ended = std::pair<std::string, std::string>{"cancelled", ""};
  r.see(gone);
  for (int i = 0; i < 3; ++i) {
    auto l = r.look("", 30);
    l.pending = true;
    r.see(l);
  }
  auto l2 = r.look("8@2", 30);  // started 30 s ago
  l2.task_start = r.t - 30;
  r.see(l2);
  step("8@2", 50);                                         // first step 60 s after its start
  for (int i = 1; i <= 10; ++i) step("8@2", 50 + i * 5);   // 5 min redoing 55..100
  for (int i = 1; i <= 10; ++i) step("8@2", 100 + i * 5);  // 5 min new
  auto b = sum_by_bucket(r.all);
  const double g = 8;
  EXPECT_DOUBLE_EQ(b["startup"], (60 + 60) * g);
  EXPECT_DOUBLE_EQ(b["checkpoint"], 30 * g);
  EXPECT_DOUBLE_EQ(b["hang"], 180 * g);
  EXPECT_DOUBLE_EQ(b["rework"], 300 * g);
  EXPECT_DOUBLE_EQ(b["productive"], (600 - 30 + 300) * g);
  EXPECT_DOUBLE_EQ(b["queue"], 90 * g);
  double allocated = 0;
  for (const auto& [k, v] : b)
    if (k != "queue") allocated += v;
  EXPECT_DOUBLE_EQ(allocated + r.st.open_s, (60 + 600 + 180 + 60 + 600) * g);
  for (const auto& c : r.all)
    if (c.bucket == "rework") {
      EXPECT_EQ(c.cause, "hang") << "charged to the failure that made it";
    }
}

TEST(Goodput, ReworkIsChargedToTheEndsCauseAndNode) {
  GoodputState st;
  GoodputLook a;
  a.now = 100;
  a.task = "7@1";
  a.task_start = 100;
  account_goodput(st, a);
  a.now = 130, a.advanced = true, a.step = 10;
  account_goodput(st, a);
  a.now = 160, a.step = 20;
  account_goodput(st, a);
  GoodputLook end;
  end.now = 170;
  end.ended = std::pair<std::string, std::string>{"GPU error", "node-17"};
  auto c = account_goodput(st, end);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].bucket, "idle end");
  EXPECT_EQ(c[0].cause, "GPU error");
  EXPECT_EQ(c[0].node, "node-17");
  GoodputLook b;
  b.task = "8@2", b.task_start = 180, b.now = 200;
  account_goodput(st, b);
  b.now = 230, b.advanced = true, b.step = 12;
  account_goodput(st, b);
  b.now = 260, b.step = 22;  // 12 -> 22: 8 of 10 steps redone
  auto r = account_goodput(st, b);
  auto sums = sum_by_bucket(r);
  EXPECT_DOUBLE_EQ(sums["rework"], 30 * 0.8);
  EXPECT_DOUBLE_EQ(sums["productive"], 30 * 0.2);
  for (const auto& x : r)
    if (x.bucket == "rework") {
      EXPECT_EQ(x.node, "node-17");
      EXPECT_EQ(x.end_task, "7@1");  // the end it is charged to
    }
}

// A charge to a node is kept with the end it was made for while that end may yet be a loop's,
// the last 8 ends'; a step loop said over some of those ends takes theirs back from the node
// (returned for the ledger to move) and strips the node from what this look charged them, the
// cause left as it was. A run that trains on keeps none but its last end's.
TEST(Goodput, ALoopsEndsAreTakenBackFromTheirNodes) {
  GoodputState st;
  std::vector<GoodputCharge> none;
  std::vector<std::string> streak;  // every end failed at the same step
  for (int t = 0; t < 10; ++t) streak.push_back(std::to_string(t) + "@1");
  for (int t = 0; t < 10; ++t) {
    std::vector<GoodputCharge> c = {
        {"idle end", "GPU error", "node-" + std::to_string(t), 60, std::to_string(t) + "@1"},
        {"rework", "GPU error", "node-" + std::to_string(t), 30, std::to_string(t) + "@1"},
        {"productive", "", "", 100, ""}};
    EXPECT_TRUE(unblame_loop(st, c, 20000, {}, streak).empty());
    EXPECT_EQ(c[0].node, "node-" + std::to_string(t));  // no loop: the node keeps it
  }
  std::vector<GoodputCharge> again = {{"rework", "GPU error", "node-9", 10, "9@1"}};
  unblame_loop(st, again, 20001, {}, streak);
  ASSERT_EQ(st.node_charges.size(), 8u * 2 + 1);  // the oldest two ends are gone
  EXPECT_EQ(st.node_charges.front().task, "2@1");
  st.last_task = "9@1", st.last_node = "node-9";
  st.redo_task = "8@1", st.redo_node = "node-8";

  std::vector<GoodputCharge> now = {{"idle end", "GPU error", "node-9", 5, "9@1"},
                                    {"idle end", "GPU error", "node-7", 5, "7@1"}};
  auto taken = unblame_loop(st, now, 20002, {"8@1", "9@1", "1@1"}, streak);
  EXPECT_EQ(now[0].node, "");
  EXPECT_EQ(now[0].cause, "GPU error");
  EXPECT_EQ(now[1].node, "node-7");
  double back = 0;
  for (const auto& k : taken) {
    EXPECT_TRUE(k.task == "8@1" || k.task == "9@1") << k.task;
    back += k.gpu_s;
  }
  EXPECT_DOUBLE_EQ(back, 90 + 90 + 10);
  EXPECT_EQ(st.last_node, "");  // the next run's queue and rework: no node's either
  EXPECT_EQ(st.redo_node, "");
  for (const auto& k : st.node_charges) EXPECT_TRUE(k.task != "8@1" && k.task != "9@1");
  EXPECT_TRUE(unblame_loop(st, none, 20002, {"8@1", "9@1"}, streak).empty());  // taken once
  EXPECT_FALSE(st.node_charges.empty());

  // The next run passes the step: no end so far may be a loop's but the last (not counted yet
  // in the look it ended).
  st.last_task = "7@1";
  unblame_loop(st, none, 20003, {}, {});
  ASSERT_FALSE(st.node_charges.empty());
  for (const auto& k : st.node_charges) EXPECT_EQ(k.task, "7@1");
  st.last_task = "10@1";
  unblame_loop(st, none, 20003, {}, {});
  EXPECT_TRUE(st.node_charges.empty());
}

// The clocks split a look's time where it changed hands (#29 ground truth: with a look every
// 30 s, up to 30 s of a hang was charged as training, a save between two looks as training,
// and a task's end at the look that found it gone).
TEST(Goodput, TheLastStepsClockSplitsTrainingFromTheHangThatFollows) {
  GoodputState st;
  GoodputLook a;
  a.task = "7@1", a.task_start = 100, a.now = 100;
  account_goodput(st, a);
  a.now = 130, a.advanced = true, a.step = 1, a.progress_at = 110;  // first step at 110
  auto first = sum_by_bucket(account_goodput(st, a));
  EXPECT_DOUBLE_EQ(first["startup"], 10);
  a.now = 160, a.step = 20, a.progress_at = 140;  // the last step, at 140
  auto trained = sum_by_bucket(account_goodput(st, a));
  EXPECT_DOUBLE_EQ(trained["productive"], 30) << "110 to 140";
  a.now = 190, a.advanced = false, a.hang_firing = true;
  auto hang = sum_by_bucket(account_goodput(st, a));
  EXPECT_DOUBLE_EQ(hang["hang"], 50) << "140 to 190";
  GoodputLook gone;
  gone.now = 220, gone.ended_at = 200;  // Slurm ended it at 200
  gone.ended = std::pair<std::string, std::string>{"cancelled", ""};
  auto end = sum_by_bucket(account_goodput(st, gone));
  EXPECT_DOUBLE_EQ(end["hang"], 10) << "190 to Slurm's end, not to the look";
}

// A first read holding steps 21-25 (1 s each, the last at 130): startup ends at step 21,
// about 4 s before the read's clock; the four steps after it were done before (rework).
TEST(Goodput, StartupEndsAtTheFirstStepOfARead) {
  GoodputState st;
  st.best = 30;
  GoodputLook a;
  a.task = "7@1", a.task_start = 100, a.now = 100;
  account_goodput(st, a);
  st.redo_upto = 30;
  a.now = 131, a.advanced = true, a.step = 25, a.progress_at = 130;
  a.first_step = 21, a.first_step_at = 126;
  auto c = sum_by_bucket(account_goodput(st, a));
  EXPECT_DOUBLE_EQ(c["startup"], 26);
  EXPECT_DOUBLE_EQ(c["rework"], 4);
}

TEST(Goodput, ASaveBetweenTwoLooksIsCheckpointNotTraining) {
  GoodputState st;
  GoodputLook a;
  a.task = "7@1", a.task_start = 100, a.now = 100;
  account_goodput(st, a);
  a.now = 130, a.advanced = true, a.step = 1, a.progress_at = 100;
  account_goodput(st, a);
  a.now = 160, a.step = 10, a.progress_at = 158, a.save_from = 140, a.save_to = 152;
  auto c = sum_by_bucket(account_goodput(st, a));
  EXPECT_DOUBLE_EQ(c["checkpoint"], 12);
  EXPECT_DOUBLE_EQ(c["productive"], 30 + 28 - 12) << "100 to 158, less the save";
  EXPECT_DOUBLE_EQ(st.open_s, 2) << "158 to 160: its fate is the next step's";
}

TEST(Goodput, TheTimeBetweenRunsIsQueuedFromTheEndToTheNextStart) {
  GoodputState st;
  GoodputLook a;
  a.task = "7@1", a.task_start = 100, a.now = 100, a.gpus = 4;
  account_goodput(st, a);
  GoodputLook gone;  // the look that finds it gone: nothing waits yet (the restart comes after)
  gone.now = 130, gone.ended_at = 112, gone.gpus = 4;
  gone.ended = std::pair<std::string, std::string>{"crash", "node-2"};
  account_goodput(st, gone);
  GoodputLook waits;
  waits.now = 160, waits.pending = true, waits.gpus = 4;
  auto q1 = sum_by_bucket(account_goodput(st, waits));
  GoodputLook runs;
  runs.task = "8@2", runs.task_start = 170, runs.now = 190, runs.gpus = 4;
  auto q2 = sum_by_bucket(account_goodput(st, runs));
  EXPECT_DOUBLE_EQ((q1["queue"] + q2["queue"]) / 4, 170 - 112);
  EXPECT_DOUBLE_EQ(q2["startup"] / 4, 20);
}

// The property: random histories give non-negative charges that, with what is still open, sum
// exactly to the allocation the looks saw: every interval after a look with a running task
// (at that task's GPUs), and a new task's time since its start.
TEST(Goodput, RandomHistoriesGiveBucketsThatAreNonNegativeAndSumToTheTotal) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> u(0, 1);
  for (int history = 0; history < 2000; ++history) {
    GoodputState st;
    double t = 1'800'000'000, at = 0, expected = 0, accounted = 0;
    std::string task, prev_task;
    double prev_gpus = 0;
    int task_no = 0;
    std::int64_t step = 0;
    for (int i = 0; i < 60; ++i) {
      double jump = u(rng) < 0.05 ? -600 * u(rng) : 5 + 120 * u(rng);  // clocks step back
      if (u(rng) < 0.03) jump += 7200 * u(rng);                        // llmwatch was down
      t += jump;
      GoodputLook l;
      l.now = t;
      l.gpus = 1 + std::floor(u(rng) * 64);
      double r = u(rng);
      if (r < 0.1) {  // the task ends, nothing runs (or a run seen only after it ended)
        task.clear();
        l.pending = u(rng) < 0.5;
        if (u(rng) < 0.7) l.ended = std::pair<std::string, std::string>{"crash", "node-1"};
      } else if (r < 0.2 || task.empty()) {  // a new task (a requeue: same id, new start)
        task = "7@" + std::to_string(++task_no);
        l.task_start = u(rng) < 0.2 ? 0 : t - 200 * u(rng);
        step = u(rng) < 0.5 ? step / 2 : step;  // resumed from an older checkpoint
      }
      l.task = task;
      if (task != prev_task && u(rng) < 0.6) l.ended_at = t - 300 * u(rng);  // may be before `at`
      if (!task.empty()) {
        l.advanced = u(rng) < 0.7;
        if (l.advanced) step += 1 + static_cast<std::int64_t>(u(rng) * 20);
        l.step = step;
        if (u(rng) < 0.1)
          l.save_from = t - 300 * u(rng), l.save_to = u(rng) < 0.5 ? 0 : t - 30 * u(rng);
        if (l.advanced && u(rng) < 0.7) l.progress_at = t - 150 * u(rng);  // may be before `at`
        if (l.advanced && u(rng) < 0.5)
          l.first_step = step - static_cast<std::int64_t>(u(rng) * 5),
          l.first_step_at = t - 200 * u(rng);
        l.hang_firing = u(rng) < 0.05;
        l.slow_share = u(rng) < 0.1 ? u(rng) * 1.5 - 0.2 : 0;  // out of range too
      }
      // The allocation this look adds, as the looks saw it.
      double dt = at > 0 ? std::max(0.0, t - at) : 0;
      bool new_task = !task.empty() && task != prev_task;
      double from = at > 0 ? std::min(at, t) : t;
      double start =
          new_task && at > 0 && l.task_start > 0 ? std::clamp(l.task_start, from, t) : -1;
      if (!prev_task.empty() && task != prev_task) {
        double limit = start >= 0 ? start : t;
        double until = l.ended_at > 0 ? std::clamp(l.ended_at, from, limit) : limit;
        expected += (at > 0 ? std::max(0.0, until - at) : 0) * prev_gpus;
        dt = start >= 0 ? t - start : 0;
      } else if (new_task && start >= 0) {
        dt = t - start;
      }
      if (!task.empty()) expected += dt * l.gpus;
      at = std::max(at, t);
      prev_task = task;
      prev_gpus = l.gpus;
      for (const auto& c : account_goodput(st, l)) {
        ASSERT_GE(c.gpu_s, 0) << c.bucket;
        ASSERT_TRUE(std::isfinite(c.gpu_s));
        if (c.bucket != "queue") accounted += c.gpu_s;
      }
    }
    ASSERT_NEAR(accounted + st.open_s, expected, 1e-6 * std::max(1.0, expected))
        << "history " << history;
  }
}

TEST(Goodput, TheStateSurvivesItsJsonAndGarbageIsAFreshState) {
  GoodputState s;
  s.at = 5, s.task = "7@1", s.stepped = true, s.open_s = 40, s.redo_upto = 9;
  s.redo_cause = "hang", s.best = 12, s.gpus = 8;
  auto back = GoodputState::from_json(s.to_json());
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(GoodputState::from_json("not json").to_json(), GoodputState{}.to_json());
  EXPECT_EQ(GoodputState::from_json("{\"at\":-5,\"open_s\":\"x\"}").at, 0);
}

// The store keeps a state as written whenever round_trips() says reading it back gives it
// again: a property over random states, odd bytes and odd numbers among them.
TEST(Goodput, AStateThatRoundTripsIsReadBackExactly) {
  std::mt19937_64 rng(29);
  const double doubles[] = {0, 1e-300, 12.5, 1800000000.123456, -1, NAN, INFINITY, 1e308};
  const std::int64_t ints[] = {-1,       0, 7, std::int64_t{1} << 53, (std::int64_t{1} << 53) + 1,
                               INT64_MAX};
  const char* strings[] = {"", "hang", "node-\xff", "n\xc3\xa9ud", "a\"b\\c\n"};
  int kept = 0;
  for (int i = 0; i < 40000; ++i) {
    GoodputState s;
    s.at = doubles[rng() % 8], s.open_s = doubles[rng() % 8], s.gpus = doubles[rng() % 8];
    s.redo_upto = ints[rng() % 6], s.best = ints[rng() % 6], s.last_step = ints[rng() % 6];
    s.task = strings[rng() % 5], s.redo_cause = strings[rng() % 5];
    s.redo_node = strings[rng() % 5], s.last_cause = strings[rng() % 5];
    s.last_node = strings[rng() % 5], s.stepped = rng() % 2, s.hung = rng() % 2;
    s.last_task = strings[rng() % 5], s.redo_task = strings[rng() % 5];
    for (int n = static_cast<int>(rng() % 3); n > 0; --n)
      s.node_charges.push_back({strings[rng() % 5], ints[rng() % 6], strings[rng() % 5],
                                strings[rng() % 5], strings[rng() % 5], doubles[rng() % 8]});
    if (!s.round_trips()) continue;
    ++kept;
    auto back = GoodputState::from_json(s.to_json());
    ASSERT_EQ(back.at, s.at);
    ASSERT_EQ(back.open_s, s.open_s);
    ASSERT_EQ(back.gpus, s.gpus);
    ASSERT_EQ(back.redo_upto, s.redo_upto);
    ASSERT_EQ(back.best, s.best);
    ASSERT_EQ(back.last_step, s.last_step);
    ASSERT_EQ(back.task, s.task);
    ASSERT_EQ(back.redo_cause, s.redo_cause);
    ASSERT_EQ(back.redo_node, s.redo_node);
    ASSERT_EQ(back.last_cause, s.last_cause);
    ASSERT_EQ(back.last_node, s.last_node);
    ASSERT_EQ(back.stepped, s.stepped);
    ASSERT_EQ(back.hung, s.hung);
    ASSERT_EQ(back.last_task, s.last_task);
    ASSERT_EQ(back.redo_task, s.redo_task);
    ASSERT_EQ(back.node_charges.size(), s.node_charges.size());
    for (std::size_t k = 0; k < s.node_charges.size(); ++k) {
      const auto &a = back.node_charges[k], &b = s.node_charges[k];
      ASSERT_EQ(std::tie(a.task, a.day, a.bucket, a.cause, a.node, a.gpu_s),
                std::tie(b.task, b.day, b.bucket, b.cause, b.node, b.gpu_s));
    }
  }
  EXPECT_GT(kept, 50);
}

}  // namespace
}  // namespace llmwatch
