// dump: hang forensics, before a hung run is cancelled (the first step of the default
// on_hang). Runs `llmwatch stacks` on every node of the running task (srun --overlap, one
// task per node, within probe_timeout), keeps the stacks under state_dir/stacks (the newest
// 20 dumps) and says where the ranks are: "24 processes: 23 in allreduce wait (...); 1 in
// __next__ (dataloader.py:631) [node-7 pid 4242]": the odd one out is usually the culprit.
// A dump that fails is reported and never holds up the rest of the plan.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "action.h"
#include "probes/python_stacks.h"
#include "registry.h"
#include "rules/job_progress.h"
#include "slurm/slurm_job.h"
#include "slurm/srun_label.h"
#include "store/hang_confirm.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/text.h"
#include "util/units.h"

namespace llmwatch {
namespace {

constexpr size_t kKeptDumps = 20;

// Confirmation of a hang (confirm_hang): a second dump confirm_hang after the first (less after a
// fatal line: confirm_gap in rules/job_progress.h), taken in a later cycle (the wait never holds
// up the cycle and every other job in it: it used to be a sleep inside the cycle). Stacks that
// moved disprove the hang: recorded as a near miss, after which the job check restarts the hang
// clock (job_log_check.cpp) and the executor runs nothing but alerts for this finding. Once per
// silence: the benefit of the doubt is spent until the run steps again (stacks that move in a
// retry loop that never steps are cancelled at the next hang). It was once per task, and a
// healthy run that stepped on for hours after its near miss was cancelled, undumped, at its next
// long silence. Until the second dump, nothing is cancelled: the plan waits at the dump.
std::optional<PendingConfirm> pending_confirm(const ActionRequest& r, ActionContext& ctx,
                                              double gap) {
  auto p = read_hang_confirm(ctx.store, r.job);
  if (!p) return std::nullopt;
  // Another task's, or one so old that the hang it was taken for ended (the run stepped again
  // and a new hang began): not this hang's first dump.
  double expires = gap + 3.0 * static_cast<double>(ctx.config.interval.count());
  if (p->task != r.task->display_id() || ctx.now < p->ts || ctx.now - p->ts > expires)
    return std::nullopt;
  return p;
}

// A near miss of this task with no step after it: its benefit of the doubt is spent. A record
// without its step (an older llmwatch's) is spent for the whole task, as it was then.
bool near_miss_spent(const nlohmann::json& near_miss, const std::string& task,
                     const std::optional<std::int64_t>& step) {
  if (!near_miss.is_object() || near_miss.value("task", "") != task) return false;
  if (!near_miss.contains("step") || !near_miss["step"].is_number_integer()) return true;
  return near_miss["step"].get<std::int64_t>() == step.value_or(-1);
}

bool confirms(const ActionRequest& r) {
  return r.settings && r.settings->confirm_hang.count() > 0 && ends_with(r.finding.key, "/hung");
}

// Before a dump: wait, without dumping, while the first dump is younger than the gap.
std::optional<ActionOutcome> confirm_not_due(const ActionRequest& r, ActionContext& ctx,
                                             double gap) {
  if (!confirms(r)) return std::nullopt;
  auto p = pending_confirm(r, ctx, gap);
  if (!p || ctx.now - p->ts >= gap) return std::nullopt;
  ActionOutcome later{ActionState::Waiting, "confirming the hang: a second dump " +
                                                format_seconds(gap) +
                                                " after the first, before anything is cancelled"};
  later.defers = true;
  return later;
}

// After a dump: the first is kept (and the plan waits), the second decides.
std::optional<ActionOutcome> confirm(const ActionRequest& r, ActionContext& ctx, double gap,
                                     const std::optional<std::int64_t>& step,
                                     const std::string& dump_text,
                                     const std::vector<ProcessStack>& now_stacks) {
  if (!confirms(r)) return std::nullopt;
  auto before =
      nlohmann::json::parse(ctx.store.get(kv::near_miss(r.job)).value_or("{}"), nullptr, false);
  if (near_miss_spent(before, r.task->display_id(), step))
    return std::nullopt;  // no step since its near miss: no second benefit of the doubt
  auto first = pending_confirm(r, ctx, gap);
  // No rank's training thread in this dump (not a Python run, no debug symbols): a second one
  // could prove nothing either way, so it is not waited for.
  const bool comparable = shows_training_frames(now_stacks);
  if (!first && !comparable) return std::nullopt;
  auto keep_first = [&](const std::string& why) {
    put_hang_confirm(ctx.store, r.job, {r.task->display_id(), dump_text, ctx.now}, ctx.now);
    ActionOutcome later{ActionState::Waiting, why + " (" + summarize_stacks(now_stacks) +
                                                  "); a second one " + format_seconds(gap) +
                                                  " later confirms the hang before anything is "
                                                  "cancelled"};
    later.defers = true;
    later.done_meanwhile = true;  // a dump was taken: told, whatever waited before it
    return later;
  };
  if (!first) return keep_first("first dump kept");
  clear_hang_confirm(ctx.store, r.job, ctx.now);
  auto earlier = parse_stacks(first->dump);
  if (earlier.empty() || !stacks_moved(earlier, now_stacks)) return std::nullopt;
  // The look's stacks were taken before the hang was found, while a peer may still have been on
  // its way into the collective: that it moved since is no sign of life, and this dump is the
  // first (as it was before the look took any), never a near miss.
  if (first->by_look)
    return keep_first(
        "the stacks moved since the look after the crash line took them (a rank "
        "still on its way into the collective): this dump is the first, kept");
  // The run was seen moving when the second dump came back, not when the cycle began: a dump
  // can take longer than the run's whole allowance (the hang clock would have run out again by
  // the next cycle).
  double seen_moving = std::max(ctx.now, unix_now());
  ctx.store.put(
      kv::near_miss(r.job),
      json_dump({{"task", r.task->display_id()}, {"ts", seen_moving}, {"step", step.value_or(-1)}}),
      ctx.now);
  ActionOutcome out{ActionState::Done,
                    "near miss: the stacks moved between two dumps " +
                        format_duration(Seconds(std::llround(ctx.now - first->ts))) +
                        " apart, so the run is not hung; nothing else is done and its hang clock "
                        "restarts (now: " +
                        summarize_stacks(now_stacks) + ")"};
  out.disproves = true;
  return out;
}

class DumpStacksAction : public ActionPlugin {
 public:
  std::string name() const override { return "dump"; }
  std::string help() const override {
    return "collect the Python stacks of every rank on every node (py-spy or gdb) and say "
           "where they wait";
  }
  bool manual() const override { return true; }
  // One dump per episode of its finding, not per task: a run seen moving (a near miss) that
  // hangs again later in the same task is dumped again (its second hang was cancelled unseen).
  std::string idem_key(const ActionRequest& r) const override {
    return ActionPlugin::idem_key(r) + ":" + std::to_string(static_cast<long long>(r.episode));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task || !r.task->running()) return {ActionState::Skipped, "no running task of " + r.job};
    // The step runs as the job's owner (srun --uid, when llmwatch is root): slurmctld lets no
    // one else, root included, start a step in a user's job (the dump of every user's hung job
    // failed with "Access/permission denied"), and the dumper then has the rights of the
    // processes it dumps and no more: a gdb script the user wrote runs as the user (#26.7).
    // The step's credential names a group too, and slurmd refuses one that is not the job's
    // ("Invalid job credential"): --gid with the job's group (--uid alone is root's group).
    auto identity = owner_identity_args(*r.task);
    if (!identity) return {ActionState::Failed, "no dump: " + identity.error()};
    std::vector<std::string> args = std::move(*identity);
    for (auto& arg : stacks_step_args(*r.task)) args.push_back(std::move(arg));
    args.insert(args.end(), {"--timeout", "20"});
    // Worked out once: the wait before the dump and the judgement after it use the same gap.
    // The progress read once: the gap and the near miss's step are both the hang's.
    const JobProgress progress = !confirms(r) ? JobProgress{}
                                 : r.progress ? *r.progress
                                              : ctx.store.progress(r.job);
    const double gap = confirms(r) ? confirm_gap(progress, *r.settings) : 0;
    if (auto wait = confirm_not_due(r, ctx, gap)) return *wait;
    // The dump waits on every node of the task: it runs only in a cycle with time left for it
    // (the cycle's remote budget), and the plan after it (the cancel) waits with it.
    if (!ctx.grant(ctx.config.probe_timeout)) {
      ActionOutcome later{ActionState::Waiting,
                          "no time left in this cycle to dump the stacks of " +
                              r.task->display_id() + ": dumped next cycle, before any cancel"};
      later.defers = true;
      return later;
    }
    auto res = ctx.slurm.run_step(
        args, ctx.grant(ctx.config.probe_timeout).value_or(ctx.config.probe_timeout));
    // Each node's blocks whole, whatever the other nodes printed meanwhile.
    res.out = srun_output_by_task(res.out);
    auto stacks = parse_stacks(res.out);
    if (stacks.empty())
      return {ActionState::Failed,
              res.describe("srun llmwatch stacks in " + std::to_string(r.task->job_id))};
    std::string summary = summarize_stacks(stacks);
    if (auto decided = confirm(r, ctx, gap, progress.step, res.out, stacks)) return *decided;
    std::filesystem::path dir = std::filesystem::path(ctx.config.state_dir) / "stacks";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string file = (dir / (r.job + "-" + r.task->display_id() + "-" +
                               std::to_string(static_cast<long long>(ctx.now)) + ".txt"))
                           .string();
    std::string where = write_file_atomic(file, valid_utf8(res.out)).ok() ? file : "not kept";
    keep_newest_files(dir.string(), kKeptDumps);
    nlohmann::json record = {
        {"ts", ctx.now}, {"task", r.task->display_id()}, {"file", where}, {"summary", summary}};
    ctx.store.put(kv::stacks(r.job), json_dump(record), ctx.now);
    return {ActionState::Done, summary + " (stacks: " + where + ")"};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<DumpStacksAction>());

}  // namespace llmwatch
