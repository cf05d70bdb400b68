#include "config/channel_catalogue.h"

#include "util/catalogue.h"

namespace llmwatch {
namespace {
using Channels = Catalogue<ChannelInfo, &ChannelInfo::type>;
}  // namespace

void add_channel_info(ChannelInfo info) {
  Channels::add(std::move(info));
}

std::vector<ChannelInfo> channel_catalogue() {
  return Channels::all();
}

std::optional<ChannelInfo> find_channel_info(const std::string& type) {
  for (auto& c : channel_catalogue())
    if (c.type == type) return c;
  return std::nullopt;
}

std::vector<std::string> channel_types() {
  std::vector<std::string> out;
  for (const auto& c : channel_catalogue()) out.push_back(c.type);
  return out;
}

}  // namespace llmwatch
