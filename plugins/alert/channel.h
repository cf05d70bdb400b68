#pragma once
// An alert channel type is one file: it describes its keys (config/channel_catalogue.h) and
// delivers, and registers both with LLMWATCH_REGISTER_CHANNEL. The notifier knows channels
// only through this registry.
#include <functional>
#include <string>
#include <vector>

#include "alert/alert_message.h"
#include "config/channel_catalogue.h"

namespace llmwatch {

// One delivery attempt of one cycle's messages (one or more) to one channel.
using DeliverBatch =
    std::function<Delivery(const AlertChannel& channel, const std::vector<AlertMessage>& messages)>;
using DeliverOne =
    std::function<Delivery(const AlertChannel& channel, const AlertMessage& message)>;

// For a channel that sends one message per delivery: the cycle's messages grouped into one
// (40 drained nodes are one message, not 40; a single one stays as it is).
DeliverBatch grouped(DeliverOne one);

// Called at static initialisation by LLMWATCH_REGISTER_CHANNEL; returns true.
bool register_channel(ChannelInfo info, DeliverBatch deliver);
// nullptr for a type nothing registered.
const DeliverBatch* find_channel(const std::string& type);

#define LLMWATCH_CHANNEL_CONCAT_(a, b) a##b
#define LLMWATCH_CHANNEL_CONCAT(a, b) LLMWATCH_CHANNEL_CONCAT_(a, b)
#define LLMWATCH_REGISTER_CHANNEL(info, deliver)                                              \
  [[maybe_unused]] static const bool LLMWATCH_CHANNEL_CONCAT(registered_channel_, __LINE__) = \
      ::llmwatch::register_channel(info, deliver)

}  // namespace llmwatch
