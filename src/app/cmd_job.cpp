// `kill|save|cancel|restart|hold|release JOB`: what a human asks llmwatch to do to a job it
// manages. Same plugins, journal, budgets and dry-run as automatic actions, so everything a
// human did shows up in `status` and `events` next to what llmwatch did.
#include <iostream>

#include "app/commands.h"
#include "cycle/executor.h"
#include "cycle/self_chain.h"
#include "cycle/supervisor.h"
#include "rules/job_rules.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/strings.h"

namespace llmwatch {

std::string not_a_job(const Config& config, const std::string& label) {
  std::vector<std::string> labels;
  for (const auto& j : config.jobs) labels.push_back(job_label(j));
  std::string best = closest_match(label, labels);
  return "'" + label + "' is not a [[job]] in " + config.path +
         (best.empty() ? "" : "; did you mean '" + best + "'?");
}

int cmd_job_action(const Config& config, const std::string& verb, const std::string& label) {
  const JobSettings* settings = nullptr;
  for (const auto& j : config.jobs)
    if (job_label(j) == label) settings = &j;
  if (!settings) {
    std::cerr << "llmwatch " << verb << ": " << not_a_job(config, label)
              << "; llmwatch only acts on jobs it was asked to manage\n";
    return kExitUsage;
  }
  try {
    Store store(config.state_dir);
    SlurmClient slurm(config.slurm);
    auto queue = slurm.queue();
    if (!queue.ok()) {
      std::cerr << "llmwatch " << verb << ": " << queue.error << "\n";
      return kExitFailure;
    }
    double now = unix_now();
    ActionRequest base;
    base.job = label;
    base.settings = settings;
    base.queue = select_jobs(queue.jobs, *settings, config.self.job_name);
    if (const SlurmJob* task = running_task(base.queue)) base.task = *task;
    base.finding.key = "manual:" + verb + "@" + std::to_string(static_cast<long long>(now * 1000));
    base.finding.kind = "manual";
    base.finding.subject = label;
    base.finding.severity = Severity::Info;
    base.finding.summary = verb + " requested by " + current_user_name();
    base.episode = now;
    store.add_event(now, "manual", label, "info",
                    current_user_name() + " asked to " + verb + " " + label);
    std::vector<std::string> plan = {verb};
    if (verb == "restart") plan = {"cancel", "restart"};
    Executor executor(config, store, slurm, now);
    executor.run_plan(base, plan);
    // What did not happen (failed, skipped, waiting) is a non-zero exit: a script that asked
    // for a save must not go on as if it had one (#27: "skipped — no save_switch" exited 0).
    int not_done = 0;
    auto recent = store.recent_actions(static_cast<int>(plan.size()));
    for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
      std::cout << it->kind << " " << label << ": " << it->state << " — " << it->detail << "\n";
      not_done += it->state == "failed" || it->state == "skipped" || it->state == "waiting";
    }
    return not_done ? kExitFailure : kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
