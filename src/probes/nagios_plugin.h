#pragma once
// A Nagios-convention plugin (LBNL NHC, Meta's gcm health checks, check_* scripts, a site's
// own): its exit status is the verdict (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) and its first
// line the summary ("STATUS - text | perfdata"). A timeout, a crash or a program that cannot
// run is UNKNOWN: "could not look", which never acts. Run by the supervisor ([[check]]
// where = "here") and by node-check on each node (where = "nodes").
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/subprocess.h"

namespace llmwatch {

struct PluginAnswer {
  int code = 3;                     // the Nagios code
  std::string summary;              // the first line without perfdata, or what went wrong
  std::vector<std::string> detail;  // the next lines and stderr, at most 10
  // The first line's performance data (probes/perfdata.h): a figure the fleet is judged by.
  std::map<std::string, double> figures;
  double seconds = 0;
  double ts = 0;  // when it ran
};

PluginAnswer plugin_answer(const ProcessResult& r, const std::string& program);
PluginAnswer run_plugin(const CommandCheckSettings& check,
                        const std::map<std::string, std::string>& env = {});

// One [[check]] as a node ran it: from a cache of the last answer when it is younger than the
// check's `every` (node-check runs at every cycle; a one-hour NHC run must not).
struct NodePluginRun {
  std::string name, hint;
  PluginAnswer answer;
  bool cached = false;
};
// When this host booted, from sysinfo()'s uptime (what slurmd reports as BootTime); 0 when
// it cannot tell.
double host_boot_time();

// Runs (or reads from `cache_prefix`<name>.json) every where = "nodes" check, concurrently,
// with LLMWATCH_NODE=<node> in its environment (a host may run several slurmd).
// An answer kept from before this host's last boot (`booted`, unix seconds; 0: unknown) is
// never used: it speaks of a node that no longer runs (#26.6: a CRITICAL cached before a
// reboot read as "still fails after its reboot", and a healthy node was drained for a human).
std::vector<NodePluginRun> run_node_plugins(const std::vector<CommandCheckSettings>& checks,
                                            const std::string& node,
                                            const std::string& cache_prefix, double now,
                                            double booted = host_boot_time());

}  // namespace llmwatch
