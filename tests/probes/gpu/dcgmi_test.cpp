#include "probes/gpu/dcgmi.h"

#include <gtest/gtest.h>

#include "test_util.h"

using namespace llmwatch;

TEST(Dcgmi, Diag3xShape) {
  auto d = parse_dcgmi_diag(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dcgmi-diag-r1-3x-fail.json")));
  ASSERT_TRUE(d.ran()) << d.not_run;
  EXPECT_EQ(d.version, "3.x");
  int fail = 0, warn = 0;
  for (const auto& r : d.results) {
    fail += r.status == "Fail";
    warn += r.status == "Warn";
    if (r.status == "Fail") {
      EXPECT_EQ(r.test, "Persistence Mode");
    }
  }
  EXPECT_EQ(fail, 1);
  EXPECT_EQ(warn, 1);
}

TEST(Dcgmi, Diag4xShapePerEntityWithSeverity) {
  auto d = parse_dcgmi_diag(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/dcgmi-diag-r2-4x-shape-fail.json")));
  ASSERT_TRUE(d.ran()) << d.not_run;
  EXPECT_EQ(d.version, "4.2.3");
  const DcgmiResult* fail = nullptr;
  for (const auto& r : d.results)
    if (r.status == "Fail") fail = &r;
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->gpu, 1);
  EXPECT_EQ(fail->test, "pcie");
  EXPECT_EQ(fail->severity, 2);
  EXPECT_NE(fail->message.find("row remappings are pending"), std::string::npos);
}

TEST(Dcgmi, BusyAbortedSkippedAndGarbageAreNotAPass) {
  auto busy = parse_dcgmi_diag(
      R"({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Fail", "warnings": [{"warning": "GPU 0 is busy: 2 processes running"}]}]}]}]}})");
  EXPECT_FALSE(busy.ran());
  EXPECT_NE(busy.not_run.find("busy"), std::string::npos);
  auto runtime = parse_dcgmi_diag(
      R"({"DCGM GPU Diagnostic": {"runtime_error": "Cannot run diagnostic: GPUs in use"}})");
  EXPECT_FALSE(runtime.ran());
  auto skipped = parse_dcgmi_diag(
      R"({"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name": "targeted_stress", "results": [{"entity_id": 0, "status": "Skip"}]}]}]}})");
  EXPECT_FALSE(skipped.ran());
  EXPECT_FALSE(parse_dcgmi_diag("Error: unable to connect to host engine").ran());
  EXPECT_FALSE(parse_dcgmi_diag("{\"other\": 1}").ran());
}

TEST(Dcgmi, HealthOverall) {
  EXPECT_EQ(parse_dcgmi_health("+----+\n| Overall Health: Healthy |\n"), "Healthy");
  EXPECT_EQ(parse_dcgmi_health("Overall Health      : Failure"), "Failure");
  EXPECT_FALSE(parse_dcgmi_health("Error: host engine not running"));
}
