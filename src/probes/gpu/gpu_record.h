#pragma once
// What nvidia-smi says about one GPU, keyed by --query-gpu field names
// ("remapped_rows.pending", "pci.bus_id"), whichever output form it came from (CSV, -q text,
// -q -x XML): the rules read one shape. Values are kept as printed; the accessors below
// turn "[N/A]", "[Not Supported]", "N/A" (MIG) and the like into "not known".
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmwatch {

struct GpuRecord {
  int index = -1;
  std::map<std::string, std::string> fields;

  // The raw value, or nullopt when absent or one of nvidia-smi's "no value" forms.
  std::optional<std::string> text(const std::string& field) const;
  // The leading number ("0 us", "69.85 W", "0x1F" as hex), or nullopt.
  std::optional<double> number(const std::string& field) const;
  // A GPU index from this field: a whole number 0..65535, else nullopt (never a cast of inf).
  std::optional<int> gpu_index(const std::string& field) const;
  // Yes / Active / Enabled → true; No / Not Active / Disabled → false; else nullopt.
  std::optional<bool> flag(const std::string& field) const;
  std::string bus_id() const;  // normalized, see normalize_bus_id
};

// "00000000:9B:00.0", "0000:9b:00", "PCI:0000:9b:00" → "0000:9b:00": the form kernel Xid
// lines use, so an Xid can be matched to a GPU index.
std::string normalize_bus_id(const std::string& bus_id);

// Not a --query-gpu field: the compute processes on the GPU, from -q's "Processes" section or
// from `--query-compute-apps=pid,gpu_bus_id` (set_compute_processes). A GPU another process
// shares runs slower with telemetry that reads like its own load (#28).
inline constexpr const char* kComputeProcesses = "compute_processes";

struct GpuParse {
  std::vector<GpuRecord> gpus;
  std::string error;  // one line: what was wrong with the document
  bool ok() const { return error.empty(); }
};

// `nvidia-smi --query-gpu=... --format=csv[,nounits]` with its header line: fields are matched
// by name ("memory.total [MiB]" → "memory.total"), so a driver that adds or reorders fields
// does not shift values.
GpuParse parse_nvidia_smi_csv(const std::string& text);
// `nvidia-smi -q` (or -q -d PAGE_RETIREMENT ...): the indented "Name : value" report.
GpuParse parse_nvidia_smi_q(const std::string& text);
// `nvidia-smi -q -x`.
GpuParse parse_nvidia_smi_xml(const std::string& text);

// `nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader`: each GPU's count of
// compute processes, as its kComputeProcesses field (0 on a GPU the answer does not list).
// False, with nothing set, when a line is not "pid, bus id" or names a GPU not in `gpus`: what
// cannot be matched is not counted as 0.
bool set_compute_processes(GpuParse& gpus, const std::string& apps);

// `nvidia-smi nvlink -s`: per GPU, the number of links and how many are inactive.
struct NvlinkGpu {
  int index = -1;
  int links = 0, inactive = 0;
  bool all_inactive = false;  // "Unable to retrieve NVLink information as all links are inactive"
  std::vector<std::string> evidence;
};
std::vector<NvlinkGpu> parse_nvlink_status(const std::string& text);

}  // namespace llmwatch
