// The goodput report as a person opens it (#29): `llmwatch goodput --html` written from a real
// state file, then loaded by a real browser (Debian's chromium, headless). The browser's DOM,
// not the text we wrote, must hold the chart: one bar group per day with a rect for each
// bucket, and the table.
#include <unistd.h>

#include "local_cluster.h"
#include "store/goodput_ledger.h"
#include "store/store.h"

namespace llmwatch::testing {
namespace {

std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

TEST(GoodputReport, TheHtmlOpensInAHeadlessBrowserWithOneBarPerDay) {
  std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium missing (setup.sh test installs it)";
  TempDir dir;
  write_file(dir / "c.toml", "[llmwatch]\nstate_dir = \"" + dir / "state" +
                                 "\"\n[[job]]\nname = \"llama\"\n" + job_owner());
  {
    Store store(dir / "state");
    GoodputLedger ledger(store);
    double now = unix_now();
    // Three days of one run: training, a hang on node-2 the second day, rework the third.
    ledger.add("llama", now - 2 * 86400,
               {{"productive", "", "", 7200, ""}, {"startup", "", "", 300, ""}});
    ledger.add("llama", now - 86400,
               {{"productive", "", "", 6000, ""}, {"hang", "hung", "node-2", 900, "7@1"}});
    ledger.add("llama", now,
               {{"productive", "", "", 7000, ""}, {"rework", "crash", "node-2", 400, "8@2"}});
  }
  std::string html = dir / "report.html";
  ProcessSpec report;
  report.argv = {llmwatch_bin(), "--config", dir / "c.toml", "goodput",
                 "--since",      "7d",       "--html",       html};
  report.timeout = std::chrono::seconds(30);
  auto written = run_process(report);
  ASSERT_TRUE(written.ok()) << written.describe("goodput --html") << written.err;

  ProcessSpec open;
  // --no-sandbox: the tests run as root, where chromium's sandbox refuses to start.
  open.argv = {browser,         "--headless",     "--no-sandbox",
               "--disable-gpu", "--no-first-run", "--user-data-dir=" + dir / "profile",
               "--dump-dom",    "file://" + html};
  open.timeout = std::chrono::seconds(90);
  auto dom = run_process(open);
  ASSERT_TRUE(dom.ok()) << dom.describe("chromium --dump-dom") << dom.err;
  EXPECT_EQ(count_of(dom.out, "<g class=\"day\">"), 3u) << dom.out;
  EXPECT_EQ(count_of(dom.out, "<rect"), 6u) << dom.out;  // a rect per bucket per day
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  EXPECT_NE(dom.out.find("node-2"), std::string::npos) << "the table names the node";
}

}  // namespace
}  // namespace llmwatch::testing
