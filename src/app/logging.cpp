// spdlog to stderr: human-readable by default, one JSON object per line with --log-format json.
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "app/commands.h"

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

}  // namespace

void setup_logging(const std::string& format, bool verbose) {
  auto logger = spdlog::stderr_color_mt("llmwatch-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(&format)));
  if (format == "json")
    logger->set_formatter(std::make_unique<JsonFormatter>());
  else
    logger->set_pattern("%Y-%m-%d %H:%M:%S %^%l%$ %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace llmwatch
