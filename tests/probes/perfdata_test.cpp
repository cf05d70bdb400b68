#include "probes/perfdata.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

using Figures = std::map<std::string, double>;

TEST(Perfdata, LabelsValuesAndUnitsAsTheGuidelinesWriteThem) {
  EXPECT_EQ(parse_perfdata(" gflops=512.5;400;300;0; 'mem bw'=2900GB/s time=0.31s"),
            (Figures{{"gflops", 512.5}, {"mem bw", 2900}, {"time", 0.31}}));
  EXPECT_EQ(parse_perfdata("'it''s'=1"), (Figures{{"it's", 1}}));
  EXPECT_EQ(parse_perfdata("pct=95%"), (Figures{{"pct", 95}}));
}

TEST(Perfdata, WhatIsNotAFigureIsDroppedNeverZero) {
  EXPECT_TRUE(parse_perfdata("").empty());
  EXPECT_TRUE(parse_perfdata("gflops=U").empty());
  EXPECT_TRUE(parse_perfdata("gflops= x=").empty());
  EXPECT_TRUE(parse_perfdata("gflops=1e999 nan=nan").empty());
  EXPECT_TRUE(parse_perfdata("just words here").empty());
  EXPECT_TRUE(parse_perfdata("'unterminated=5").empty());
  EXPECT_TRUE(parse_perfdata(std::string("bad\x01label=5")).empty());
  EXPECT_EQ(parse_perfdata("junk ok=2"), (Figures{{"ok", 2}}));
}

}  // namespace
}  // namespace llmwatch
