#include "rules/attribution.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool network_error(std::string_view line) {
  return contains(line, "NCCL WARN") || contains(line, "NCCL ERROR") ||
         contains(line, "NCCL error") || contains(line, "ncclSystemError") ||
         contains(line, "ncclRemoteError") || contains(line, "Gloo") ||
         contains(line, "Connection reset by peer") || contains(line, "Connection refused");
}

bool gpu_error(std::string_view line) {
  return contains(line, "CUDA error") || contains(line, "uncorrectable ECC") ||
         contains(line, "NVRM: Xid") || contains(line, "ncclUnhandledCudaError");
}

// The host of an NCCL line, "node-2:48211:48377 [5] NCCL WARN ...": the last token before
// "NCCL" shaped host:pid:tid.
std::string nccl_host(std::string_view line) {
  auto at = line.find(" NCCL ");
  if (at == std::string_view::npos) return "";
  std::string_view head = line.substr(0, at);
  std::string host;
  size_t i = 0;
  while (i < head.size()) {
    while (i < head.size() && head[i] == ' ') ++i;
    size_t j = head.find(' ', i);
    if (j == std::string_view::npos) j = head.size();
    std::string_view tok = head.substr(i, j - i);
    // Strip a "[rank3]:" prefix glued to the token.
    if (auto close = tok.rfind("]:"); close != std::string_view::npos && tok[0] == '[')
      tok = tok.substr(close + 2);
    auto c2 = tok.rfind(':');
    auto c1 =
        c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : tok.rfind(':', c2 - 1);
    if (c1 != std::string_view::npos && c1 > 0 && all_digits(tok.substr(c1 + 1, c2 - c1 - 1)) &&
        all_digits(tok.substr(c2 + 1)))
      host = std::string(tok.substr(0, c1));
    i = j;
  }
  return host;
}

// Dotted IPv4 addresses in a line (with an optional :port or <port> after them).
std::vector<std::string> ipv4s(std::string_view line) {
  std::vector<std::string> out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(line[i])) ||
        (i > 0 && (std::isalnum(static_cast<unsigned char>(line[i - 1])) || line[i - 1] == '.')))
      continue;
    unsigned a, b, c, d;
    int n = 0;
    std::string rest(line.substr(i, 15));
    if (std::sscanf(rest.c_str(), "%3u.%3u.%3u.%3u%n", &a, &b, &c, &d, &n) == 4 && a < 256 &&
        b < 256 && c < 256 && d < 256) {
      out.push_back(rest.substr(0, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

// "[rank12]:" or "[Rank 12]" at the start of a line.
int rank_of(std::string_view line) {
  auto p = line.find("[rank");
  if (p == std::string_view::npos) p = line.find("[Rank ");
  if (p == std::string_view::npos || p > 2) return -1;
  size_t i = p + 5;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t j = i;
  while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
  if (j == i || j - i > 7) return -1;
  return std::stoi(std::string(line.substr(i, j - i)));
}

// A name as printed (possibly a FQDN) to one of the task's nodes.
std::string task_node(const std::string& name, const TaskLayout& layout) {
  std::string shortname = name.substr(0, name.find('.'));
  for (const auto& n : layout.nodes)
    if (n == name || n == shortname) return n;
  return "";
}

}  // namespace

std::vector<Suspect> attribute_crash(const std::vector<std::string>& lines,
                                     const TaskLayout& layout,
                                     const std::vector<NodeTrouble>& troubles) {
  std::map<std::string, Suspect> by_node;
  // Nodes some evidence names as the culprit: Slurm's state, a peer address, a GPU error of
  // the node's own. Printing a network error only reports one: every rank of a job prints
  // the error of the peer that failed it.
  std::set<std::string> named;
  auto charge = [&](const std::string& node, double weight, const std::string& why, bool names) {
    if (node.empty()) return;
    Suspect& s = by_node[node];
    s.node = node;
    s.confidence = 1 - (1 - s.confidence) * (1 - weight);
    if (s.why.size() < 3) s.why.push_back(truncate_utf8(why, 300));
    if (names) named.insert(node);
  };
  for (const auto& t : troubles) charge(task_node(t.node, layout), 0.9, t.why, true);
  std::set<std::string> seen;  // the same line from every rank counts once
  // An address no node is known by -> the hosts that reported a failure from it.
  std::map<std::string, std::set<std::string>> reporters_of;
  for (const auto& line : lines) {
    if (line.find("Watchdog caught collective operation timeout") != std::string::npos) continue;
    bool net = network_error(line), gpu = gpu_error(line);
    if (!net && !gpu) continue;
    if (!seen.insert(line).second) continue;
    const std::string host = task_node(nccl_host(line), layout);
    if (!host.empty()) charge(host, 0.4, "printed: " + line, gpu);
    if (net) {
      for (const auto& ip : ipv4s(line)) {
        if (auto it = layout.address_to_node.find(ip); it != layout.address_to_node.end())
          charge(task_node(it->second, layout), 0.6, "named as peer " + ip + ": " + line, true);
        else if (!host.empty())
          reporters_of[ip].insert(host);
      }
    }
    if (int rank = rank_of(line); rank >= 0 && layout.ranks_per_node > 0) {
      size_t index = static_cast<size_t>(rank / layout.ranks_per_node);
      if (index < layout.nodes.size())
        charge(layout.nodes[index], 0.3, "rank " + std::to_string(rank) + ": " + line, gpu);
    }
  }
  // A named culprit outweighs its reporters (#26.2: the hosts that printed "completion from
  // peer <node-2>" were excluded and charged with node-2): once any node is named, one that
  // only reported stays below the threshold. With nobody named, the reporter is all there is.
  if (!named.empty())
    for (auto& [node, s] : by_node)
      if (!named.count(node)) s.confidence = std::min(s.confidence, kReporterCeiling);
  // Two nodes or more that report the same peer, by an address no node is known by, point at
  // that peer, not at themselves (both their own links failing at once is far less likely):
  // neither is a suspect by those reports.
  for (const auto& [ip, hosts] : reporters_of)
    if (hosts.size() >= 2)
      for (const auto& host : hosts)
        if (!named.count(host))
          by_node[host].confidence = std::min(by_node[host].confidence, kReporterCeiling);
  std::vector<Suspect> out;
  for (auto& [node, s] : by_node)
    if (s.confidence >= kSuspectThreshold) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const Suspect& a, const Suspect& b) { return a.confidence > b.confidence; });
  return out;
}

std::string describe_suspects(const std::vector<Suspect>& suspects) {
  std::string out;
  for (const auto& s : suspects) {
    char conf[16];
    std::snprintf(conf, sizeof conf, "%.2f", s.confidence);
    out += (out.empty() ? "" : ", ") + s.node + " (" + conf + ")";
  }
  return out;
}

}  // namespace llmwatch
