#pragma once
// llmwatch's Prometheus metrics, rendered from the state store (so the textfile written
// after each cycle and the daemon's /metrics say the same). Names are stable, prefixed
// llmwatch_, in base units; see docs in render_metrics' HELP lines.
#include <string>

#include "config/config.h"
#include "util/result.h"

namespace llmwatch {

class Store;

std::string render_metrics(const Config& config, Store& store, double now);
// Atomic (temp file + rename) so node_exporter's textfile collector never reads half a file.
Status write_metrics_file(const std::string& path, const Config& config, Store& store, double now);

}  // namespace llmwatch
