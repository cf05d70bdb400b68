#pragma once
// The Xid → verdict mapping, as data (conf/xid.toml, overridable by the operator).
#include <map>
#include <optional>
#include <string>

namespace llmwatch {

struct XidRule {
  std::string action =
      "app";  // ignore | log | app | reset-when-idle | reset | drain | rma | follow
  std::string meaning;
  int repeat = 0;  // this many on one GPU make an app/log/ignore Xid "drain"; 0: never
};

struct XidTable {
  std::map<int, XidRule> rules;
  XidRule fallback;  // for Xids not in the table
  const XidRule& rule(int xid) const;
};

struct XidTableResult {
  std::optional<XidTable> table;
  std::string error;  // "file:line: message"
};

// The table from `path`, or the copy of conf/xid.toml built into llmwatch when path is "".
XidTableResult load_xid_table(const std::string& path);
XidTableResult parse_xid_table(const std::string& text, const std::string& source);

}  // namespace llmwatch
