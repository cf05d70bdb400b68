// successor: gives llmwatch's own job chain exactly one queued successor. Planned by the
// self-chain check (a chain that is on with no successor queued, or with more than one),
// never named in an on_* list. With none it queues one (sbatch, tried twice: a busy
// controller times out); with several it keeps the newest and cancels the others. Like every
// action it is journaled before it runs and dry-run only says what it would do (the
// executor's); its key is the cycle's, so a chain still broken next cycle is mended again.
#include "action.h"
#include "registry.h"
#include "self/self_job.h"
#include "store/keys.h"
#include "store/store.h"

namespace llmwatch {
namespace {

class SuccessorAction : public ActionPlugin {
 public:
  std::string name() const override { return "successor"; }
  ActionTarget target() const override { return ActionTarget::Self; }
  std::string help() const override {
    return "queue the next llmwatch job of the self chain, or cancel all but the newest of "
           "several";
  }
  std::string idem_key(const ActionRequest& r) const override {
    return "successor@" + std::to_string(static_cast<long long>(r.now));  // no ':' : no job id
  }
  // r.queue: the chain's pending jobs, as the self-chain check saw them.
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (r.queue.size() > 1) return keep_newest(r, ctx);
    if (!r.queue.empty())
      return {ActionState::Skipped, "already queued: " + std::to_string(r.queue[0].job_id)};
    std::string config_path = ctx.store.get(kv::kSelfConfig).value_or(ctx.config.path);
    long delay = std::stol(ctx.store.get(kv::kSelfInterval)
                               .value_or(std::to_string(ctx.config.self.interval.count())));
    auto args = self_job_args(ctx.config, config_path, delay);
    auto submitted = ctx.slurm.submit(args, {}, true);
    if (!submitted.job_id) submitted = ctx.slurm.submit(args, {}, true);
    if (!submitted.job_id)
      return {ActionState::Failed,
              "could not queue the next llmwatch job; the chain stops when this one ends: " +
                  submitted.error};
    ctx.store.put(kv::kSelfSuccessor, std::to_string(*submitted.job_id), ctx.now);
    return {ActionState::Done,
            "re-queued the chain's next llmwatch job: " + std::to_string(*submitted.job_id)};
  }

 private:
  static ActionOutcome keep_newest(const ActionRequest& r, ActionContext& ctx) {
    const SlurmJob* keep = &r.queue.front();
    for (const auto& q : r.queue)
      if (q.job_id > keep->job_id) keep = &q;
    std::string keep_id = std::to_string(keep->job_id);
    std::string cancelled, failed;
    for (const auto& q : r.queue) {
      if (&q == keep) continue;
      std::string id = std::to_string(q.job_id);
      if (auto cancel = ctx.slurm.cancel(id))
        cancelled += " " + id;
      else
        failed += " " + id + ": " + cancel.error();
    }
    ctx.store.put(kv::kSelfSuccessor, keep_id, ctx.now);
    if (!failed.empty())
      return {ActionState::Failed, "could not cancel duplicate llmwatch jobs" + failed};
    return {ActionState::Done, "cancelled duplicate llmwatch jobs" + cancelled +
                                   "; the chain goes on with " + keep_id};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<SuccessorAction>());

}  // namespace llmwatch
