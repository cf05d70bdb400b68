#pragma once
// Every alert channel type, registered by the channel's own file (plugins/alert/channel.h,
// LLMWATCH_REGISTER_CHANNEL): its type name, the keys it takes beyond the ones every channel
// shares, which of them are secret or required, and its rules across keys. Config loading and
// `config check` read only this, so a new channel type is one new file: no list of types or
// keys is kept by hand anywhere else, and a key of one type under another is an error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_schema.h"
#include "util/result.h"

namespace llmwatch {

struct ChannelOption {
  std::string name;
  KeyKind kind = KeyKind::String;
  bool secret = false;    // also accepted as <name>_file; never echoed
  bool required = false;  // config check: "[[alert.TYPE]] needs <name>"
  std::string help;       // one line, for the docs check and `config keys`
};

struct ChannelInfo {
  std::string type;  // [[alert.TYPE]]
  std::string help;
  std::vector<ChannelOption> options;
  // Rules across keys, once each value has its type: fails saying what is wrong.
  std::function<Status(const AlertChannel&, const Config&)> check;
};

void add_channel_info(ChannelInfo info);
std::vector<ChannelInfo> channel_catalogue();  // sorted by type
std::optional<ChannelInfo> find_channel_info(const std::string& type);
std::vector<std::string> channel_types();

}  // namespace llmwatch
