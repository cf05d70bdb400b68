#pragma once
// Writes the Prometheus text file that node_exporter's textfile collector picks up,
// atomically (temp file + rename) so a scrape never sees half a file.
#include <string>

namespace llmwatch {

struct CycleResult;
class Store;

std::string render_metrics(const CycleResult& result, Store& store);
bool write_metrics_file(const std::string& path, const CycleResult& result, std::size_t jobs, Store& store);

}  // namespace llmwatch
