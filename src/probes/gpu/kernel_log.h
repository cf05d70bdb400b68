#pragma once
// Reads the Xid events of this boot from the configured kernel-log source:
//   kmsg        /dev/kmsg (every record still in the ring buffer; needs no program)
//   journalctl  `journalctl -k -b -o short --no-pager`
//   dmesg       `dmesg`
//   file        a file (e.g. a syslog copy, or what a test writes): the last 64 MiB
// The whole boot is read each time: an Xid that needs a reset keeps the node unhealthy until
// a reboot (which empties the ring) or until an operator acknowledges it after repair
// (`node-check --ack`); the node-check state remembers which events were already reported.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/gpu/xid_line.h"
#include "util/result.h"

namespace llmwatch {

struct KernelLogRead {
  std::vector<XidEvent> xids;
  std::string error;  // why the source could not be read ("" when it could)
};

KernelLogRead read_kernel_log(const GpuSettings& s, const std::string& node,
                              std::chrono::milliseconds timeout);

// Identity of one Xid line within a boot, for acknowledgements and "seen" sets.
std::string xid_identity(const XidEvent& e);

// node-check's memory on the node, per boot: which Xid lines were acknowledged (repaired) and
// which were already reported. A new boot id starts afresh.
struct NodeCheckState {
  std::string boot_id;
  std::set<std::string> acked, seen;
  static NodeCheckState load(const std::string& path, const std::string& boot_id);
  // Writes atomically (temporary file + rename).
  Status save(const std::string& path) const;
};

std::string current_boot_id();

}  // namespace llmwatch
