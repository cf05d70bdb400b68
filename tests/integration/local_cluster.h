#pragma once
// Integration-test helpers: a real Slurm cluster from slurm/local-cluster.sh, started per
// test in its own temp dir and always stopped (by pid) when the test ends, pass or fail.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "test_util.h"
#include "util/identity.h"
#include "util/subprocess.h"

namespace llmwatch::testing {

// A [[job]] selected by name needs its owner when llmwatch runs as root (config/job_owner.h);
// the test jobs belong to whoever runs the tests.
inline std::string job_owner() {
  return "user = \"" + current_user_name() + "\"\n";
}

inline std::string source_dir() {
  return LLMWATCH_SOURCE_DIR;
}
inline std::string llmwatch_bin() {
  return LLMWATCH_BIN;
}

class LocalCluster {
 public:
  TempDir dir;
  std::string cluster_dir;
  std::string error;

  // `env`: local-cluster.sh's options, e.g. LLMWATCH_CLUSTER_ACCOUNTING=1 (MariaDB + slurmdbd,
  // so sacct answers) and LLMWATCH_CLUSTER_MIN_JOB_AGE (how soon slurmctld forgets a job).
  explicit LocalCluster(int nodes = 4, std::map<std::string, std::string> env = {})
      : cluster_dir(dir / "cluster") {
    ProcessSpec spec;
    spec.argv = {source_dir() + "/slurm/local-cluster.sh", "start", cluster_dir,
                 std::to_string(nodes)};
    spec.env = std::move(env);
    spec.timeout = std::chrono::seconds(150);
    auto r = run_process(spec);
    if (!r.ok()) error = r.describe("local-cluster.sh start") + "\n" + r.err;
    setenv("SLURM_CONF", (cluster_dir + "/slurm.conf").c_str(), 1);
  }
  ~LocalCluster() { stop(); }

  void stop() {
    ProcessSpec spec;
    spec.argv = {source_dir() + "/slurm/local-cluster.sh", "stop", cluster_dir};
    spec.timeout = std::chrono::seconds(60);
    run_process(spec);
  }

  // Runs a Slurm client command (squeue, sbatch, ...) against this cluster.
  ProcessResult slurm(std::vector<std::string> argv, int timeout_s = 30) const {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.timeout = std::chrono::seconds(timeout_s);
    return run_process(spec);
  }

  // squeue --json, parsed; empty on failure.
  nlohmann::json jobs() const {
    auto r = slurm({"squeue", "--json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_object() && j.contains("jobs") ? j["jobs"] : nlohmann::json::array();
  }

  int pid_of(const std::string& daemon) const {
    return std::atoi(read_file(cluster_dir + "/run/" + daemon + ".pid").c_str());
  }
};

// Runs the llmwatch binary with a config file.
inline ProcessResult llmwatch(const std::string& config, std::vector<std::string> args,
                              int timeout_s = 120,
                              const std::map<std::string, std::string>& env = {}) {
  ProcessSpec spec;
  spec.env = env;  // beside the scrubbed environment every child gets
  spec.argv = {llmwatch_bin(), "--config", config};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(timeout_s);
  return run_process(spec);
}

// One value from llmwatch's state store, read with the sqlite3 CLI as an operator would.
inline std::string llmwatch_sql(const std::string& state_dir, const std::string& sql) {
  ProcessSpec spec;
  // A read that meets the daemon's write lock waits for it (up to 8 s), as llmwatch's own
  // connections do: without a busy timeout sqlite3 prints "database is locked" and answers
  // nothing, which a test reads as "not there yet", or as "gone".
  spec.argv = {"sqlite3", "-cmd", ".timeout 8000", state_dir + "/state.db", sql};
  spec.timeout = std::chrono::seconds(10);
  return run_process(spec).out;
}

// A TCP port free right now on loopback (bind to 0, read it, release it).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A process the test runs in the background (a daemon, a recording server), output to a
// file; killed by pid when the test ends, whatever happens.
struct BackgroundProcess {
  pid_t pid = -1;
  std::string log;
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& log_path)
      : log(log_path) {
    pid = fork();
    if (pid == 0) {
      int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
  }
  // Waits for it to exit; its exit status, or -1 on timeout.
  int wait_exit(int seconds) {
    int status = 0;
    bool done = eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, seconds);
    if (!done) return -1;
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~BackgroundProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Integration tests need root (Slurm daemons) and the Debian Slurm packages.
#define LLMWATCH_REQUIRE_CLUSTER()                                                              \
  do {                                                                                          \
    if (geteuid() != 0) GTEST_SKIP() << "integration tests start Slurm daemons and need root";  \
    if (access("/usr/sbin/slurmctld", X_OK) != 0) GTEST_SKIP() << "slurmctld is not installed"; \
  } while (0)

}  // namespace llmwatch::testing
