// The hostile world on the real local cluster (#13): what an operator's cluster really does
// to a supervisor that acts as root. Each test failed on the main before the trust work.
#include <sys/stat.h>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

// setup.sh creates this ordinary user, so that jobs belong to someone other than root.
constexpr const char* kUser = "llmwatch-itest";

#define REQUIRE_TEST_USER()                                                                  \
  do {                                                                                       \
    if (!lookup_user(kUser)) GTEST_SKIP() << kUser << " missing (setup.sh test creates it)"; \
  } while (0)

struct UserRun {
  LocalCluster& c;
  std::string work, config;
  explicit UserRun(LocalCluster& cluster, const std::string& job_keys)
      : c(cluster), work(c.dir / "work"), config(c.dir / "llmwatch.toml") {
    // The job user must reach its working directory (mkdtemp made the test's 0700).
    ::chmod(c.dir.path.c_str(), 0711);
    std::filesystem::create_directories(work);
    ::chmod(work.c_str(), 0777);
    write_file(work + "/job.sh",
               "#!/bin/sh\n"
               "echo \"user=$(/usr/bin/id -un) group=$(/usr/bin/id -gn)\"\n"
               "echo \"secret=${LLMWATCH_TEST_SECRET:-none}\"\n"
               "echo \"global_step: 1\"\n"
               // Dies like a Python program when the test says so (a person's scancel is a
               // decision, never restarted).
               "while [ ! -e crash ]; do /bin/sleep 0.2; done\n"
               "echo 'Traceback (most recent call last):'\n"
               "echo \"KeyError: 'input_ids'\"\n"
               "exit 1\n");
    ::chmod((work + "/job.sh").c_str(), 0755);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\n[slurm]\ntimeout = \"10s\"\n[[job]]\nname = \"itest-user\"\n" +
                           "user = \"" + kUser + "\"\nstartup_grace = \"5m\"\n" + job_keys);
  }
  std::string submit() {
    auto sub =
        c.slurm({"sbatch", "--parsable", "--uid=" + std::string(kUser),
                 "--gid=" + std::string(kUser), "--job-name=itest-user",
                 "--chdir=" + work, "--output=" + work + "/out-%j.txt", work + "/job.sh"});
    EXPECT_TRUE(sub.ok()) << sub.err;
    return sub.out.substr(0, sub.out.find_first_of(";\n"));
  }
  std::vector<nlohmann::json> live() {
    std::vector<nlohmann::json> out;
    for (const auto& j : c.jobs())
      if (j["name"] == "itest-user" &&
          (j["job_state"] == "RUNNING" || j["job_state"] == "PENDING" ||
           j["job_state"] == "COMPLETING" || j["job_state"] == "CONFIGURING"))
        out.push_back(j);
    return out;
  }
  // llmwatch runs with a secret in its own environment, as under the shipped unit.
  ProcessResult run() {
    return llmwatch(config, {"run", "--once"}, 120, {{"LLMWATCH_TEST_SECRET", "hunter2"}});
  }
};

// Defect: `restart` resubmitted another user's batch script as root, with llmwatch's
// environment (a secret printed by the resubmitted job). Now: as the owner, --export=NONE.
TEST(HostileWorld, RestartRunsAsTheJobOwnerWithoutLlmwatchsSecrets) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_TEST_USER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  UserRun u(c, "on_absent = [\"restart\"]\n");
  std::string first = u.submit();
  ASSERT_TRUE(eventually([&] {
    u.run();
    return read_file(u.work + "/out-" + first + ".txt").find("global_step") != std::string::npos;
  }));
  write_file(u.work + "/crash", "");
  ASSERT_TRUE(eventually([&] { return u.live().empty(); }));
  std::filesystem::remove(u.work + "/crash");  // the restarted run trains on
  auto run = u.run();
  ASSERT_TRUE(run.ok()) << run.err;
  auto again = u.live();
  ASSERT_EQ(again.size(), 1u) << run.err << llmwatch(u.config, {"events"}).out;
  std::string second = std::to_string(again[0]["job_id"].get<long long>());
  EXPECT_EQ(again[0]["user_name"], kUser);
  // The defect: sbatch --uid alone left the restarted run in group root (GroupId=root(0)).
  EXPECT_EQ(again[0]["group_name"], kUser);
  std::string out;
  ASSERT_TRUE(eventually([&] {
    out = read_file(u.work + "/out-" + second + ".txt");
    return out.find("secret=") != std::string::npos;
  }));
  EXPECT_NE(out.find(std::string("user=") + kUser + " group=" + kUser), std::string::npos) << out;
  EXPECT_NE(out.find("secret=none"), std::string::npos) << out;
  c.slurm({"scancel", second});
}

// Defect: switch files followed symlinks, so root created whatever file a link pointed at.
TEST(HostileWorld, ASwitchPathThatIsASymlinkIsNeverFollowed) {
  LLMWATCH_REQUIRE_CLUSTER();
  REQUIRE_TEST_USER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string victim = c.dir / "victim";
  UserRun u(c, "kill_switch = \"" + (c.dir / "work/kill") + "\"\n");
  std::filesystem::create_symlink(victim, u.work + "/kill");  // planted by the job's user
  std::string id = u.submit();
  ASSERT_TRUE(eventually([&] {
    auto now = u.live();  // one look: a second call may see an empty queue
    return !now.empty() && now[0]["job_state"] == "RUNNING";
  }));
  auto kill = llmwatch(u.config, {"kill", "itest-user"});
  EXPECT_FALSE(kill.ok()) << kill.out;
  EXPECT_NE(kill.out.find("not touched"), std::string::npos) << kill.out;
  EXPECT_FALSE(std::filesystem::exists(victim));
  std::filesystem::remove(u.work + "/kill");
  // Without the link, the switch is created and belongs to the job's owner.
  auto again = llmwatch(u.config, {"kill", "itest-user"});  // a new request, a new journal key
  struct stat st {};
  if (::lstat((u.work + "/kill").c_str(), &st) == 0) {
    EXPECT_EQ(st.st_uid, lookup_user(kUser)->uid);
  } else {
    ADD_FAILURE() << "kill switch not created: " << again.out << again.err;
  }
  // Nor a symlink at a directory above it (#26 B: O_NOFOLLOW guarded the last component).
  std::filesystem::create_directories(c.dir / "elsewhere");
  std::filesystem::create_directory_symlink(c.dir / "elsewhere", u.work + "/ckpt");
  UserRun linked(c, "kill_switch = \"" + (c.dir / "work/ckpt/kill") + "\"\n");
  auto through = llmwatch(linked.config, {"kill", "itest-user"});
  EXPECT_FALSE(through.ok()) << through.out;
  EXPECT_NE(through.out.find("'ckpt' is a symlink"), std::string::npos) << through.out;
  EXPECT_FALSE(std::filesystem::exists(c.dir / "elsewhere/kill")) << through.out;
  c.slurm({"scancel", id});
}

}  // namespace
}  // namespace llmwatch::testing
