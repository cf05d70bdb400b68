// The goodput ledger read back (#29): totals and ETTR, the top losers with their causes, the
// status line, the table, and the one-file HTML report with one bar per day.
#include "views/goodput_view.h"

#include <gtest/gtest.h>

#include "views/goodput_html.h"

namespace llmwatch {
namespace {

const std::vector<GoodputRow> kRows = {
    {20000, "tr", "productive", "", "", 9000 * 3600.0},
    {20000, "tr", "rework", "GPU error", "node-17", 150 * 3600.0},
    {20000, "tr", "idle end", "GPU error", "node-17", 12 * 3600.0},
    {20001, "tr", "hang", "hang", "", 110 * 3600.0},
    {20001, "llm", "productive", "", "", 600 * 3600.0},
    {20001, "llm", "rework", "NCCL or network error", "node-17", 50 * 3600.0},
    {20001, "llm", "checkpoint", "", "", 78 * 3600.0},
    {20001, "llm", "queue", "hang", "", 40 * 3600.0},
};

TEST(GoodputView, TotalsAndEttrLeaveTheQueueOutOfTheAllocation) {
  auto t = goodput_totals(kRows);
  EXPECT_DOUBLE_EQ(t.allocated, 10000 * 3600.0);
  EXPECT_DOUBLE_EQ(t.ettr(), 0.96);
  EXPECT_DOUBLE_EQ(goodput_totals(kRows, "llm").ettr(), 600.0 / 728);
  EXPECT_EQ(goodput_line(t, "30d"),
            "goodput 30d: 96.0% (rework 2.0%, hang 1.1%, checkpoint 0.8%, idle end 0.1%)");
  EXPECT_EQ(goodput_line(goodput_totals({}), "30d"), "");
}

TEST(GoodputView, LosersByNodeNameTheNodeItsRunsAndCauses) {
  auto losers = goodput_losers(kRows, "node");
  ASSERT_FALSE(losers.empty());
  EXPECT_EQ(losers[0].key, "node-17");
  EXPECT_DOUBLE_EQ(losers[0].lost, 212 * 3600.0);
  EXPECT_EQ(losers[0].runs, 2);
  EXPECT_DOUBLE_EQ(losers[0].causes["GPU error"], 162 * 3600.0);
  auto table = goodput_table(goodput_json(kRows, "node"));
  EXPECT_NE(table.find("node-17: 212 GPU-h across 2 runs (GPU error 162 GPU-h, NCCL or network "
                       "error 50 GPU-h)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("ETTR 96.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("(not allocated)"), std::string::npos) << "queue is shown apart";
}

// --by user: each run's losses under its owner; a run no [[job]] names any more is shown
// as such, never as somebody's.
TEST(GoodputView, LosersByUserGroupTheRunsOfEachOwner) {
  RunOwners owners = {{"llm", "alice"}};
  auto losers = goodput_losers(kRows, "user", owners);
  ASSERT_FALSE(losers.empty());
  double alice = 0, unknown = 0;
  for (const auto& l : losers) (l.key == "alice" ? alice : unknown) += l.lost;
  double total = 0;
  for (const auto& l : goodput_losers(kRows, "job")) total += l.lost;
  EXPECT_GT(alice, 0);
  EXPECT_DOUBLE_EQ(alice + unknown, total);
  for (const auto& l : losers) EXPECT_TRUE(l.key == "alice" || l.key == "(owner unknown)") << l.key;
}

TEST(GoodputView, TheHtmlReportIsOneFileWithOneBarPerDay) {
  auto html = goodput_html(kRows, "30d");
  size_t bars = 0;
  for (size_t at = html.find("<g class=\"day\">"); at != std::string::npos;
       at = html.find("<g class=\"day\">", at + 1))
    ++bars;
  EXPECT_EQ(bars, 2u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg"), html.find("http")) << "nothing fetched";
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(goodput_html({{20000, "<b>", "rework", "<i>", "<u>", 1}}, "<x>").find("<x>"),
            std::string::npos)
      << "names are escaped";
}

}  // namespace
}  // namespace llmwatch
