#pragma once
// The set of keys each config table accepts, their kinds, and where each value goes.
// Keeping this as data is what lets `config check` reject unknown keys with a
// "did you mean", type-check every value, and test that conf/llmwatch.toml documents them all.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace llmwatch {

enum class KeyKind {
  String,
  Bool,
  Int,
  Float,
  Duration,
  Size,
  Percent,
  StringList,
  Duration_or_auto
};

inline constexpr std::int64_t kOffAtZero = -1;

template <class T>
struct KeySpec {
  KeySpec(std::string n, KeyKind k, std::function<void(T&, const ConfigValue&)> setter,
          bool is_secret = false, std::int64_t lo = 0, std::int64_t hi = 0,
          std::vector<std::string> allowed = {})
      : name(std::move(n)),
        kind(k),
        set(std::move(setter)),
        secret(is_secret),
        min(lo),
        max(hi),
        choices(std::move(allowed)) {}
  std::string name;
  KeyKind kind;
  std::function<void(T&, const ConfigValue&)> set;
  bool secret = false;  // never echoed in messages or logs
  // For Int, the least value. For Duration, the least seconds: 0 (the default) means at
  // least 1s, since a zero timeout, interval, window or grace is never what was meant;
  // kOffAtZero lets "0s" mean "off" for the keys documented so.
  std::int64_t min = 0;
  std::int64_t max = 0;              // for Int (0: none)
  std::vector<std::string> choices;  // for String (empty: any)
};

const std::vector<KeySpec<Config>>& general_keys();                      // [llmwatch]
const std::vector<KeySpec<SlurmSettings>>& slurm_keys();                 // [slurm]
const std::vector<KeySpec<SelfJobSettings>>& self_keys();                // [self]
const std::vector<KeySpec<Limits>>& limits_keys();                       // [limits]
const std::vector<KeySpec<JobSettings>>& job_keys();                     // [[job]]
const std::vector<KeySpec<StorageSettings>>& storage_keys();             // [[storage]]
const std::vector<KeySpec<CommandCheckSettings>>& command_check_keys();  // [[check]]
const std::vector<KeySpec<GpuSettings>>& gpu_keys();                     // [gpu]
// [[alert.TYPE]]: the keys every channel shares; each type adds its own
// (config/channel_catalogue.h).
const std::vector<KeySpec<AlertChannel>>& alert_keys();
// Those of one channel type: the shared keys, then its own options (empty for an unknown type).
std::vector<KeySpec<AlertChannel>> channel_keys(const std::string& type);

// "table.key" for every key above, for the documentation check; a channel type's own keys
// are "alert.TYPE.key".
std::vector<std::string> all_config_keys();

}  // namespace llmwatch
