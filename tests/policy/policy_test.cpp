#include "policy/policy.h"

#include <gtest/gtest.h>

#include "rules/job_rules.h"

namespace llmwatch {
namespace {

TEST(Policy, HangFollowsTheJobsEscalationWithAlertLast) {
  JobSettings job;
  job.on_hang = {"alert", "save", "cancel", "restart"};
  Finding f;
  f.kind = "hung";
  f.severity = Severity::Critical;
  EXPECT_EQ(actions_for(f, job), (std::vector<std::string>{"save", "cancel", "restart", "alert"}));
}

TEST(Policy, EveryActionIsAnnounced) {
  JobSettings job;
  job.on_hang = {"cancel", "restart"};
  Finding f;
  f.kind = "hung";
  f.severity = Severity::Critical;
  EXPECT_EQ(actions_for(f, job), (std::vector<std::string>{"cancel", "restart", "alert"}));
}

TEST(Policy, UnknownFindingsNeverActBeyondAlerting) {
  JobSettings job;
  job.on_hang = {"cancel", "restart", "alert"};
  Finding f;
  f.kind = "hung";
  f.severity = Severity::Unknown;
  EXPECT_EQ(actions_for(f, job), std::vector<std::string>{"alert"});
  EXPECT_FALSE(action_allowed_on(f, "cancel"));
}

TEST(Policy, OtherFindingsAlertOnlyAndInfoDoesNothing) {
  Finding f;
  f.kind = "stuck";
  f.severity = Severity::Warning;
  EXPECT_EQ(actions_for(f, JobSettings{}), std::vector<std::string>{"alert"});
  f.severity = Severity::Info;
  EXPECT_TRUE(actions_for(f, JobSettings{}).empty());
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

TEST(Policy, CrashLoopStopsRestartsOfThatJob) {
  Finding loop;
  loop.kind = "crash-loop";
  std::vector<std::string> plan = {"cancel", "restart", "alert"};
  suppress_restarts_in_crash_loop({loop}, plan);
  EXPECT_EQ(plan, (std::vector<std::string>{"cancel", "alert"}));
  // Nor is a task Slurm holds after a failed launch released: the loop's hold holds it too.
  plan = {"relaunch", "alert"};
  suppress_restarts_in_crash_loop({loop}, plan);
  EXPECT_EQ(plan, (std::vector<std::string>{"alert"}));
  JobSettings job;
  loop.severity = Severity::Critical;
  EXPECT_EQ(actions_for(loop, job), (std::vector<std::string>{"hold", "alert"}));
}

// A hang at the step where the runs before it stopped (a step loop): dumped and cancelled as
// any hang, but never restarted; on_crash_loop's hold goes before the cancel, which would let an
// array's next task start. Alerts still go last.
TEST(Policy, AStepLoopHangIsCancelledAndHeldNotRestarted) {
  Finding hang;
  hang.kind = "hung";
  hang.severity = Severity::Critical;
  JobSettings job;
  EXPECT_EQ(actions_for(hang, job),
            (std::vector<std::string>{"dump", "cancel", "restart", "alert"}));
  hang.cause = kStepLoop;
  EXPECT_EQ(actions_for(hang, job), (std::vector<std::string>{"dump", "hold", "cancel", "alert"}));
  job.on_hang = {"alert", "save", "kill+5m", "cancel+15m", "restart+15m"};
  EXPECT_EQ(actions_for(hang, job),
            (std::vector<std::string>{"save", "kill+5m", "hold", "cancel+15m", "alert"}));
  job.on_hang = {"alert", "cancel"};  // a site that restarts nothing on a hang: as it says
  EXPECT_EQ(actions_for(hang, job), (std::vector<std::string>{"cancel", "alert"}));
  job.on_hang = {"dump", "cancel", "restart"};
  job.on_crash_loop = {"alert"};
  EXPECT_EQ(actions_for(hang, job), (std::vector<std::string>{"dump", "cancel", "alert"}));
}

}  // namespace
}  // namespace llmwatch

#include "config/staged_action.h"

namespace llmwatch {
namespace {

TEST(StagedAction, ParsesDelays) {
  EXPECT_EQ(parse_staged_action("cancel")->action, "cancel");
  EXPECT_EQ(parse_staged_action("cancel")->delay.count(), 0);
  auto s = parse_staged_action("kill+5m");
  EXPECT_EQ(s->action, "kill");
  EXPECT_EQ(s->delay.count(), 300);
  auto bad = parse_staged_action("kill+soon");
  EXPECT_FALSE(bad);
  EXPECT_NE(bad.error().find("'soon'"), std::string::npos) << bad.error();
}

TEST(Policy, StagedRestartsAreSuppressedInACrashLoopToo) {
  Finding loop;
  loop.kind = "crash-loop";
  std::vector<std::string> plan = {"cancel+5m", "restart+5m", "alert"};
  suppress_restarts_in_crash_loop({loop}, plan);
  EXPECT_EQ(plan, (std::vector<std::string>{"cancel+5m", "alert"}));
}

}  // namespace
}  // namespace llmwatch
