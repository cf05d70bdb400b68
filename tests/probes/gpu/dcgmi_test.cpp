#include "probes/gpu/dcgmi.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

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

// What dcgmi diag -r 3 measured, from its results' info lines as DCGM's plugins print them: the
// node's slowest GPU for each figure (GPU 1's PCIe runs at half width), a failed test's figure
// too (it measured the node), and a line of any other shape (a latency) is not a figure.
TEST(Dcgmi, DiagPerformanceFiguresAreTheNodesSlowestGpu) {
  auto d = parse_dcgmi_diag(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dcgmi-diag-r3-4x-perf.json")));
  ASSERT_TRUE(d.ran()) << d.not_run;
  const std::map<std::string, double> want = {{"diagnostic/gflops", 47988.02},
                                              {"pcie/bidir_gbps", 50.88},
                                              {"pcie/d2h_gbps", 26.03},
                                              {"pcie/h2d_gbps", 25.96},
                                              {"targeted_stress/stress_level", 3100}};
  EXPECT_EQ(d.figures, want);
}

// DCGM 3.x's shape: one result for all GPUs, each info line naming its GPU.
TEST(Dcgmi, DiagPerformanceFiguresIn3xShape) {
  auto d = parse_dcgmi_diag(
      R"({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Integration", "tests": [{"name": "PCIe", "results": [{"gpu_ids": "0,1", "status": "Pass", "info": ["GPU 0 GPU to Host bandwidth:\t\t13.08 GB/s", "GPU 1 GPU to Host bandwidth:\t\t12.61 GB/s", "GPU 0 Host to GPU latency:\t\t4.200 us"]}]}]}]}})");
  ASSERT_TRUE(d.ran()) << d.not_run;
  EXPECT_EQ(d.figures, (std::map<std::string, double>{{"pcie/d2h_gbps", 12.61}}));
}

// A figure is read only where its line says what it is and in its unit: never guessed.
TEST(Dcgmi, DiagInfoLinesThatAreNotAFigureAreNotRead) {
  for (const char* info :
       {"GPU 0 GPU to Host bandwidth:\t\t13.08 MB/s", "GPU 0 GPU to Host bandwidth:\t\t-3 GB/s",
        "GPU 0 GPU to Host bandwidth:\t\tnan GB/s", "GPU 0 calculated at approximately gigaflops",
        "GPU 0 relative stress level\t", "GPU 0 temperature average:\t31 C",
        "Allocated 16583361795 bytes (97.2%)"}) {
    nlohmann::json doc = {
        {"DCGM Diagnostic",
         {{"test_categories",
           {{{"category", "Stress"},
             {"tests",
              {{{"name", "x"},
                {"results", {{{"entity_id", 0}, {"status", "Pass"}, {"info", {info}}}}}}}}}}}}}};
    auto d = parse_dcgmi_diag(doc.dump());
    ASSERT_TRUE(d.ran()) << d.not_run;
    EXPECT_TRUE(d.figures.empty()) << info;
  }
}
