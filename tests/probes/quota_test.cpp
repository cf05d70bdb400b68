#include "probes/quota.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace llmwatch {
namespace {

QuotaReport parse(const std::string& kind, const std::string& file) {
  return parse_quota(kind, testing::read_file(testing::fixture("quota/" + file)));
}

TEST(Quota, LustreOverQuotaWithGrace) {
  auto r = parse("lfs", "lfs-quota-over.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.over);
  EXPECT_EQ(r.used_bytes, 4294967296ULL * 1024);
  EXPECT_EQ(r.limit_bytes, 4294967296ULL * 1024);
  EXPECT_EQ(r.grace, "6d23h59m");
  EXPECT_EQ(r.used_files, 123456u);
  EXPECT_EQ(r.limit_files, 0u);  // none
}

TEST(Quota, LustreLongPathOnItsOwnLine) {
  auto r = parse("lfs", "lfs-quota-longname.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.over);
  EXPECT_EQ(r.used_bytes, 1048576ULL * 1024);
  EXPECT_EQ(r.limit_bytes, 2147483648ULL * 1024);
  EXPECT_EQ(r.limit_files, 1000000u);
}

TEST(Quota, LinuxQuotaNoGraceWhenUnder) {
  auto r = parse("quota", "quota-w.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.used_bytes, 512000ULL * 1024);
  EXPECT_EQ(r.limit_bytes, 1200000ULL * 1024);
  EXPECT_EQ(r.used_files, 2000u);
  EXPECT_FALSE(r.over);
}

TEST(Quota, GpfsFilesetOverItsSoftLimitInGrace) {
  auto r = parse("mmlsquota", "mmlsquota-fileset.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.used_bytes, 209715200ULL * 1024);
  EXPECT_EQ(r.limit_bytes, 209715200ULL * 1024);
  EXPECT_EQ(r.grace, "7 days");
  EXPECT_TRUE(r.over);  // above its soft limit
  EXPECT_EQ(r.used_files, 123456u);
  EXPECT_EQ(r.limit_files, 2000000u);
}

TEST(Quota, BeegfsWithUnitsAndUnlimited) {
  auto r = parse("beegfs", "beegfs-getquota.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.used_bytes, 10ULL << 30);
  EXPECT_EQ(r.limit_bytes, 100ULL << 30);
  EXPECT_EQ(r.used_files, 12345u);
  EXPECT_EQ(r.limit_files, 0u);
}

TEST(Quota, CustomRegexAndGarbage) {
  auto r = parse_quota("custom", "used 4.5TiB of 5TiB", R"(used (\S+) of (\S+))");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.limit_bytes, 5ULL << 40);
  EXPECT_FALSE(parse_quota("custom", "nothing here", R"(used (\S+) of (\S+))").ok());
  EXPECT_FALSE(parse_quota("custom", "x", "(").ok());
  for (const char* kind : {"lfs", "quota", "mmlsquota", "beegfs"}) {
    EXPECT_FALSE(parse_quota(kind, "lfs: error: cannot connect").ok()) << kind;
    EXPECT_FALSE(parse_quota(kind, "").ok()) << kind;
  }
}

}  // namespace
}  // namespace llmwatch
