#include "views/goodput_html.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "rules/goodput.h"
#include "util/units.h"
#include "views/goodput_view.h"

namespace llmwatch {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* colour(const std::string& bucket) {
  static const std::map<std::string, const char*> colours = {
      {"productive", "#2e7d32"}, {"rework", "#ef6c00"}, {"checkpoint", "#1565c0"},
      {"startup", "#6a1b9a"},    {"hang", "#c62828"},   {"slow", "#f9a825"},
      {"idle end", "#757575"},   {"open", "#bdbdbd"}};
  auto it = colours.find(bucket);
  return it == colours.end() ? "#000000" : it->second;
}

std::string num(double v, const char* f = "%.1f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string goodput_html(const std::vector<GoodputRow>& rows, const std::string& period) {
  // day -> bucket -> GPU-seconds (allocated buckets only: queue is not on the bars)
  std::map<std::int64_t, std::map<std::string, double>> days;
  double tallest = 0;
  for (const auto& r : rows)
    if (r.bucket != "queue") days[r.day][r.bucket] += r.gpu_seconds;
  for (const auto& [d, b] : days) {
    double sum = 0;
    for (const auto& [k, v] : b) sum += v;
    tallest = std::max(tallest, sum);
  }
  const int bar = 24, gap = 8, height = 240, left = 60;
  int width = left + static_cast<int>(days.size()) * (bar + gap) + 20;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height + 60) + "\" role=\"img\">\n";
  svg += "<text x=\"4\" y=\"14\" font-size=\"11\">" + num(tallest / 3600) + " GPU-h</text>\n";
  int i = 0;
  for (const auto& [d, b] : days) {
    int x = left + i++ * (bar + gap);
    double y = height + 20;
    svg += "<g class=\"day\"><title>" + format_utc(static_cast<double>(d) * 86400).substr(0, 10) +
           "</title>\n";
    for (const char* bucket : kGoodputBuckets) {
      auto it = b.find(bucket);
      if (it == b.end() || tallest <= 0) continue;
      double h = it->second / tallest * height;
      y -= h;
      svg += "<rect x=\"" + std::to_string(x) + "\" y=\"" + num(y, "%.2f") + "\" width=\"" +
             std::to_string(bar) + "\" height=\"" + num(h, "%.2f") + "\" fill=\"" + colour(bucket) +
             "\"><title>" + bucket + ": " + num(it->second / 3600, "%.2f") +
             " GPU-h</title></rect>\n";
    }
    svg += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(height + 36) +
           "\" font-size=\"9\">" + format_utc(static_cast<double>(d) * 86400).substr(5, 5) +
           "</text></g>\n";
  }
  svg += "</svg>\n";
  std::string legend;
  for (const char* bucket : kGoodputBuckets)
    if (std::string(bucket) != "queue")
      legend += "<span style=\"color:" + std::string(colour(bucket)) + "\">&#9632;</span> " +
                bucket + " &nbsp; ";
  auto report = goodput_json(rows, "node");
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>llmwatch goodput, last " +
         escape(period) +
         "</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>Goodput, last " +
         escape(period) + "</h1>\n<p>" + legend + "</p>\n" + svg + "<pre>" +
         escape(goodput_table(report)) + "</pre>\n</body></html>\n";
}

}  // namespace llmwatch
