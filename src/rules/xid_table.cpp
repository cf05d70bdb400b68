#include "rules/xid_table.h"

#include <toml++/toml.h>

#include <set>

#include "util/files.h"
#include "xid_table_default.h"  // generated from conf/xid.toml by CMake

namespace llmwatch {
namespace {

const std::set<std::string> kActions = {"ignore", "log",   "app", "reset-when-idle",
                                        "reset",  "drain", "rma", "follow"};

std::string where(const std::string& source, const toml::node& n) {
  return source + ":" + std::to_string(n.source().begin.line);
}

}  // namespace

const XidRule& XidTable::rule(int xid) const {
  auto it = rules.find(xid);
  return it == rules.end() ? fallback : it->second;
}

XidTableResult parse_xid_table(const std::string& text, const std::string& source) {
  XidTableResult out;
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    out.error =
        source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description());
    return out;
  }
  XidTable table;
  if (auto d = doc["default"].value<std::string>()) {
    if (!kActions.count(*d))
      return out.error = where(source, *doc.get("default")) + ": unknown action '" + *d + "'", out;
    table.fallback.action = *d;
  }
  table.fallback.meaning = "not in the Xid table";
  const toml::table* xids = doc["xid"].as_table();
  if (!xids) return out.error = source + ": no [xid] table", out;
  for (const auto& [key, node] : *xids) {
    int xid = 0;
    try {
      size_t used = 0;
      xid = std::stoi(std::string(key.str()), &used);
      if (used != key.str().size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return out.error =
                 where(source, node) + ": '" + std::string(key.str()) + "' is not an Xid number",
             out;
    }
    const toml::table* entry = node.as_table();
    if (!entry)
      return out.error = where(source, node) + ": Xid " + std::to_string(xid) +
                         " must be a table { action = ..., meaning = ... }",
             out;
    XidRule r;
    r.action = entry->get("action") ? (*entry)["action"].value_or(std::string()) : "";
    if (!kActions.count(r.action))
      return out.error = where(source, node) + ": Xid " + std::to_string(xid) +
                         ": action must be one of ignore, log, app, reset-when-idle, reset, "
                         "drain, rma, follow",
             out;
    r.meaning = (*entry)["meaning"].value_or(std::string());
    r.repeat = static_cast<int>((*entry)["repeat"].value_or(std::int64_t{0}));
    for (const auto& [k, _] : *entry)
      if (k.str() != "action" && k.str() != "meaning" && k.str() != "repeat")
        return out.error = where(source, node) + ": Xid " + std::to_string(xid) +
                           ": unknown key '" + std::string(k.str()) + "'",
               out;
    table.rules[xid] = r;
  }
  out.table = std::move(table);
  return out;
}

XidTableResult load_xid_table(const std::string& path) {
  if (path.empty()) return parse_xid_table(kDefaultXidToml, "<built-in conf/xid.toml>");
  auto text = read_file_or_why(path);
  if (!text) return {std::nullopt, "the Xid table: " + text.error()};
  return parse_xid_table(*text, path);
}

}  // namespace llmwatch
