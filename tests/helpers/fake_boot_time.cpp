// LD_PRELOAD for the local test cluster's "rebooted" slurmd (slurm/local-reboot-program).
// All nodes are slurmds on one host, so a node's reboot restarts its slurmd; slurmctld takes
// the reboot as done only when the node reports a boot time after the request, which slurmd
// computes from sysinfo()'s uptime. With LLMWATCH_FAKE_BOOT_TIME=<unix seconds>, uptime is
// counted from then: the node "booted" when its slurmd restarted.
#include <dlfcn.h>
#include <sys/sysinfo.h>

#include <cstdlib>
#include <ctime>

extern "C" int sysinfo(struct sysinfo* info) {
  using Real = int (*)(struct sysinfo*);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "sysinfo"));
  int rc = real ? real(info) : -1;
  const char* boot = std::getenv("LLMWATCH_FAKE_BOOT_TIME");
  if (rc == 0 && boot) {
    long up = static_cast<long>(std::time(nullptr)) - std::atol(boot);
    if (up >= 0 && up < info->uptime) info->uptime = up;
  }
  return rc;
}
