#pragma once
// One NVIDIA Xid event from a kernel log line, in any of the forms the kernel, dmesg,
// syslog and /dev/kmsg print it:
//   [Fri Oct 14 14:56:49 2022] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: ...
//   [171167.620236] NVRM: Xid (0000:03:00): 79, pid='<unknown>', name=<unknown>, GPU has ...
//   Aug 17 06:18:01 host kernel: NVRM: Xid (PCI:0000:9b:00): 149, NETIR_LINK_EVT Fatal ...
//   6,1234,5678901,-;NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from ...
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmwatch {

struct XidEvent {
  int xid = 0;
  std::string bus_id;                    // normalized ("0000:9b:00"); "" when the line names none
  std::string when;                      // the line's own time text, as printed ("" when none)
  std::optional<std::int64_t> kmsg_seq;  // /dev/kmsg record sequence number
  std::string pid, process;              // "" when <unknown>
  std::string text;                      // the message after "NN, "
  std::string line;                      // the whole line, sanitized (evidence)
  // Only the kernel may report an Xid: a /dev/kmsg record of the kernel facility, a dmesg
  // line, or a syslog line tagged "kernel:". Anyone can `logger "NVRM: Xid ..."` into syslog
  // or write a user-facility record into /dev/kmsg; such lines never drain a node.
  bool from_kernel = false;
  // Xid 154: the recovery action it changed to ("GPU Reset Required"), and its code.
  std::optional<int> new_recovery_code;
  std::string new_recovery_action;
};

std::optional<XidEvent> parse_xid_line(std::string_view line);

}  // namespace llmwatch
