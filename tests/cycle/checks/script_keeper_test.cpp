// A run with no script file (sbatch --wrap) has its script kept from the cycle that first sees
// its task run, for a restart after Slurm forgot the task (MinJobAge).
#include "cycle/checks/script_keeper.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "fake_slurm.h"
#include "slurm/script_file.h"
#include "store/kept_script.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct Keeping {
  testing::TempDir dir;
  Store store{dir.path};
  Config config;
  testing::FakeSlurm slurm;
  std::vector<JobSettings> jobs;
  Keeping() { config.state_dir = dir.path; }

  // One watched job a task, each running task `id` of job label "job-<id>".
  void cycle(const std::vector<SlurmJob>& tasks, double now = 1000) {
    CycleState s(config, store, slurm, now);
    for (const auto& t : tasks) {
      JobWork w;
      w.label = "job-" + t.display_id();
      w.obs.running = t;
      s.work.push_back(std::move(w));
    }
    keep_scripts_of_wrapped_tasks(s, std::vector<std::string>(s.work.size()));
  }
};

SlurmJob wrapped(int id, const std::string& command = "(null)") {
  SlurmJob t;
  t.job_id = id;
  t.state = "RUNNING";
  t.start_time = 1700000000 + id;
  t.command = command;
  return t;
}

// Its bytes as Slurm gave them: a script need not be UTF-8, and its lines end as they do.
TEST(ScriptKeeper, KeepsSlurmsCopyOfAWrapTaskByteForByteOnceATask) {
  Keeping k;
  const std::string script = "#!/bin/sh\n# caf\xe9 \xff\r\nexec python3 train.py \"$@\"\n";
  k.slurm.scripts["7"] = script;
  k.cycle({wrapped(7)});
  auto kept = read_kept_script(k.store, "job-7");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->task, wrapped(7).run_key());
  EXPECT_TRUE(kept->error.empty());
  const std::string path = kept_script_path(k.config.state_dir, kept->task);
  EXPECT_EQ(testing::read_file(path), script);
  // Its owner's words, readable by no one else (the store, which `status` reads, holds none).
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((k.config.state_dir + "/scripts").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(k.store.get("script:job-7")->find("exec python3"), std::string::npos);
  // Later cycles (each a new check, in the daemon as in `run --once`) find it in the store and
  // ask no more.
  k.cycle({wrapped(7)});
  k.cycle({wrapped(7)});
  EXPECT_EQ(k.slurm.scripts_asked, std::vector<std::string>{"7"});
  // The same id requeued is another run: its script is asked again, and the earlier copy goes
  // (one a [[job]]).
  auto requeued = wrapped(7);
  requeued.start_time += 600;
  k.cycle({requeued});
  EXPECT_EQ(k.slurm.scripts_asked.size(), 2u);
  EXPECT_EQ(read_kept_script(k.store, "job-7")->task, requeued.run_key());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(kept_script_path(k.config.state_dir, requeued.run_key())));
}

// A task with a script file of its own, or whose command is not known yet, costs no call; nor
// does a task whose copy could not be had, after its one try.
TEST(ScriptKeeper, AsksOnlyForTasksWithNoScriptFileAndOnlyOnce) {
  Keeping k;
  k.cycle({wrapped(1, "/home/alice/train.sh"), wrapped(2, ""), wrapped(3)});
  k.cycle({wrapped(1, "/home/alice/train.sh"), wrapped(2, ""), wrapped(3)});
  EXPECT_EQ(k.slurm.scripts_asked, std::vector<std::string>{"3"});
  auto kept = read_kept_script(k.store, "job-3");
  ASSERT_TRUE(kept);
  EXPECT_NE(kept->error.find("Invalid job id"), std::string::npos) << kept->error;
  // A run llmwatch resubmitted from a copy names that copy, which is gone: asked too.
  k.cycle({wrapped(4, k.config.state_dir + "/scripts/3-1700000003.sh")});
  EXPECT_EQ(k.slurm.scripts_asked.back(), "4");
}

// After a maintenance window many runs start at once: at most kPerCycle calls a cycle, the
// rest the next.
TEST(ScriptKeeper, AsksAtMostItsShareOfSlurmACycle) {
  Keeping k;
  std::vector<SlurmJob> tasks;
  for (int id = 1; id <= kScriptsAskedPerCycle + 3; ++id) {
    tasks.push_back(wrapped(id));
    k.slurm.scripts[std::to_string(id)] = "#!/bin/sh\ntrue\n";
  }
  k.cycle(tasks);
  EXPECT_EQ(k.slurm.scripts_asked.size(), static_cast<size_t>(kScriptsAskedPerCycle));
  k.cycle(tasks);
  EXPECT_EQ(k.slurm.scripts_asked.size(), tasks.size());
  for (const auto& t : tasks) EXPECT_TRUE(read_kept_script(k.store, "job-" + t.display_id()));
}

}  // namespace
}  // namespace llmwatch
