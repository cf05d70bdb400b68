// reboot: Slurm's own remedy for a GPU that needs a reset (a reset-class Xid, a pending row
// remap): `scontrol reboot ASAP nextstate=RESUME reason="llmwatch: ..."`. Slurm drains the
// node at once (no new work), reboots it when its jobs are done, and returns it to service, so
// nobody has to undrain it by hand. It counts against max_drains_per_hour, since it takes the
// node out as a drain does (take_out.h: the reason rules are the drain's).
// Needs RebootProgram in slurm.conf: where Slurm refuses the reboot, the node is drained
// instead (a faulty GPU must not take new work), and the outcome says why.
#include "node/take_out.h"
#include "registry.h"

namespace llmwatch {
namespace {

class RebootAction : public TakeOutAction {
 public:
  std::string name() const override { return "reboot"; }
  std::string help() const override {
    return "scontrol reboot ASAP nextstate=RESUME: drain, reboot when idle, back to service";
  }

 protected:
  ActionOutcome take_out(const ActionRequest& r, ActionContext& ctx, const std::string& why,
                         bool) override {
    if (auto reboot = ctx.slurm.reboot_node(r.job, why); !reboot) {
      if (auto drain = ctx.slurm.update_node(r.job, "drain", why); !drain)
        return {ActionState::Failed, reboot.error() + "; drain instead: " + drain.error()};
      mark_taken_out(r, ctx);
      return {ActionState::Done, "drained " + r.job +
                                     " instead of a reboot, which Slurm refused (" +
                                     sanitize_line(reboot.error(), 160) + ")"};
    }
    mark_taken_out(r, ctx);
    // Until a node-check newer than the boot has spoken, the node's old verdict is not its
    // verdict (cycle/checks/node_health_check.cpp).
    ctx.store.put(kv::rebooting(r.job), std::to_string(ctx.now), ctx.now);
    return {ActionState::Done, "reboot of " + r.job +
                                   " requested: drained now, rebooted when idle, then resumed "
                                   "(reason \"" +
                                   why + "\")"};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<RebootAction>());

}  // namespace llmwatch
