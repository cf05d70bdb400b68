#include "probes/gpu/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/files.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace llmwatch {
namespace {

constexpr std::uintmax_t kMaxFileBytes = 64ull << 20;

void collect(std::string_view text, std::vector<XidEvent>& out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.find("Xid") != std::string_view::npos)
      if (auto e = parse_xid_line(line); e && e->from_kernel) out.push_back(std::move(*e));
    start = end + 1;
  }
}

KernelLogRead read_kmsg() {
  KernelLogRead out;
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return out.error = std::string("/dev/kmsg: ") + std::strerror(errno), out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EPIPE) continue;  // overwritten while reading: go on with the next
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: the end of the ring
    std::string_view record(buf, static_cast<size_t>(n));
    // Continuation lines (" SUBSYSTEM=pci") follow the first line; only the first matters.
    collect(record.substr(0, record.find('\n')), out.xids);
  }
  ::close(fd);
  return out;
}

KernelLogRead read_command(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  KernelLogRead out;
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = timeout;
  auto r = run_process(spec);
  if (!r.ok()) return out.error = r.describe(argv[0]), out;
  collect(r.out, out.xids);
  return out;
}

KernelLogRead read_file(const std::string& path) {
  KernelLogRead out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out.error = path + ": " + std::strerror(errno), out;
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) in.seekg(static_cast<std::streamoff>(size - kMaxFileBytes));
  std::stringstream ss;
  ss << in.rdbuf();
  collect(ss.str(), out.xids);
  return out;
}

}  // namespace

KernelLogRead read_kernel_log(const GpuSettings& s, const std::string& node,
                              std::chrono::milliseconds timeout) {
  if (s.kernel_log == "kmsg") return read_kmsg();
  if (s.kernel_log == "journalctl")
    return read_command({"journalctl", "-k", "-b", "-o", "short", "--no-pager", "-q"}, timeout);
  if (s.kernel_log == "dmesg") return read_command({"dmesg", "--kernel"}, timeout);
  if (s.kernel_log == "file") {
    std::string path = s.kernel_log_path;
    for (size_t at; (at = path.find("{node}")) != std::string::npos;) path.replace(at, 6, node);
    if (path.empty()) return {{}, "[gpu] kernel_log = \"file\" needs kernel_log_path"};
    return read_file(path);
  }
  return {};
}

std::string xid_identity(const XidEvent& e) {
  // kmsg records have a sequence number; other sources are identified by their line.
  if (e.kmsg_seq) return "seq:" + std::to_string(*e.kmsg_seq);
  return "line:" + std::to_string(std::hash<std::string>{}(e.line));
}

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return std::string(trim(id));
}

NodeCheckState NodeCheckState::load(const std::string& path, const std::string& boot_id) {
  NodeCheckState st;
  st.boot_id = boot_id;
  auto text = read_text_file(path);
  if (!text) return st;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || j.value("boot_id", "") != boot_id) return st;  // a new boot
  st.acked = j.value("acked", std::set<std::string>{});
  st.seen = j.value("seen", std::set<std::string>{});
  return st;
}

Status NodeCheckState::save(const std::string& path) const {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  return write_file_atomic(
      path, json_dump(nlohmann::json{{"boot_id", boot_id}, {"acked", acked}, {"seen", seen}}));
}

}  // namespace llmwatch
