#include "rules/xid_table.h"

#include <gtest/gtest.h>

#include "test_util.h"

using namespace llmwatch;

TEST(XidTable, BuiltInCopyOfConfXidToml) {
  auto t = load_xid_table("");
  ASSERT_TRUE(t.table) << t.error;
  EXPECT_EQ(t.table->rule(79).action, "drain");
  EXPECT_EQ(t.table->rule(119).action, "reset");
  EXPECT_EQ(t.table->rule(63).action, "reset-when-idle");
  EXPECT_EQ(t.table->rule(64).action, "rma");
  EXPECT_EQ(t.table->rule(13).action, "ignore");
  EXPECT_EQ(t.table->rule(13).repeat, 20);
  EXPECT_EQ(t.table->rule(154).action, "follow");
  EXPECT_EQ(t.table->rule(9999).action, "app");  // default for an Xid not listed
  // The shipped file and the built-in copy are the same table.
  auto file = load_xid_table(std::string(LLMWATCH_SOURCE_DIR) + "/conf/xid.toml");
  ASSERT_TRUE(file.table) << file.error;
  EXPECT_EQ(file.table->rules.size(), t.table->rules.size());
}

TEST(XidTable, OperatorOverrideAndErrorsWithFileAndLine) {
  llmwatch::testing::TempDir dir;
  llmwatch::testing::write_file(dir / "xid.toml",
                                "default = \"log\"\n[xid]\n63 = { action = \"drain\" }\n");
  auto t = load_xid_table(dir / "xid.toml");
  ASSERT_TRUE(t.table) << t.error;
  EXPECT_EQ(t.table->rule(63).action, "drain");
  EXPECT_EQ(t.table->rule(79).action, "log");  // an operator's table is complete by itself

  llmwatch::testing::write_file(
      dir / "bad.toml", "[xid]\n79 = { action = \"drain\" }\n48 = { action = \"panic\" }\n");
  auto bad = load_xid_table(dir / "bad.toml");
  EXPECT_FALSE(bad.table);
  EXPECT_EQ(bad.error.rfind(dir / "bad.toml:3:", 0), 0u) << bad.error;

  llmwatch::testing::write_file(dir / "syntax.toml", "[xid]\n79 = { action = \n");
  auto syntax = load_xid_table(dir / "syntax.toml");
  EXPECT_FALSE(syntax.table);
  EXPECT_NE(syntax.error.find("syntax.toml:"), std::string::npos);
  EXPECT_FALSE(load_xid_table(dir / "missing.toml").table);
}
