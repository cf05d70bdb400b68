// spdlog to stderr: human-readable by default, one JSON object per line with --log-format json.
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "util/text.h"

namespace llmwatch {
namespace {

class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto secs = std::chrono::duration<double>(msg.time.time_since_epoch()).count();
    std::string line = nlohmann::json{{"ts", secs},
                                      {"level", spdlog::level::to_string_view(msg.level).data()},
                                      {"msg", std::string(msg.payload.data(), msg.payload.size())}}
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// Text lines carry bytes from outside (a user's script path in an action's outcome, a job
// name): escaped here, at the sink, once for every message, so that no caller has to
// remember (#26 B: the outcome detail was printed raw, escape sequences and all).
class SafeTextFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string safe =
        terminal_safe(valid_utf8(std::string_view(msg.payload.data(), msg.payload.size())));
    spdlog::details::log_msg copy = msg;
    copy.payload = safe;
    inner_->format(copy, dest);
    // The colour range the pattern marks, for the colour sink that reads it from `msg`.
    msg.color_range_start = copy.color_range_start;
    msg.color_range_end = copy.color_range_end;
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<SafeTextFormatter>();
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_ =
      std::make_unique<spdlog::pattern_formatter>("%Y-%m-%d %H:%M:%S %^%l%$ %v");
};

}  // namespace

std::unique_ptr<spdlog::formatter> text_log_formatter() {
  return std::make_unique<SafeTextFormatter>();
}

void setup_logging(const std::string& format, bool verbose) {
  auto logger = spdlog::stderr_color_mt("llmwatch-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(&format)));
  if (format == "json")
    logger->set_formatter(std::make_unique<JsonFormatter>());
  else
    logger->set_formatter(text_log_formatter());
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace llmwatch
