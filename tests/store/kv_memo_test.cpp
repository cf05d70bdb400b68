#include "store/kv_memo.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "store/store.h"
#include "store_test_access.h"
#include "test_util.h"

namespace llmwatch {
namespace {

TEST(KvMemo, AnotherConnectionsCommitEmptiesIt) {
  KvMemo memo;
  memo.check(1);
  memo.remember("k", "v");
  memo.remember("absent", std::nullopt);
  ASSERT_NE(memo.find("k"), nullptr);
  EXPECT_EQ(*memo.find("k"), "v");
  ASSERT_NE(memo.find("absent"), nullptr);
  EXPECT_FALSE(memo.find("absent")->has_value());
  memo.check(1);  // nobody else wrote
  EXPECT_NE(memo.find("k"), nullptr);
  memo.check(2);
  EXPECT_EQ(memo.find("k"), nullptr);
  EXPECT_EQ(memo.find("absent"), nullptr);
}

TEST(KvMemo, ALargeValueIsNotKeptNorLeavesAnOlderOneBehind) {
  KvMemo memo;
  memo.remember("k", "small");
  memo.remember("k", std::string(KvMemo::kMaxValue + 1, 'x'));
  EXPECT_EQ(memo.find("k"), nullptr);
}

// The daemon's Store answers kv reads and unchanged writes from memory inside a transaction.
// Whatever another connection (the CLI, a second instance) wrote, and whatever rolled back,
// must still be what it reads, and a write equal to what it remembers but not to the file
// must reach the file.
TEST(KvMemo, TheStoreNeverAnswersFromAStaleMemory) {
  testing::TempDir dir;
  Store daemon(dir.path), cli(dir.path);
  daemon.transaction([&] { daemon.put("k", "1", 1); });
  daemon.transaction([&] { EXPECT_EQ(daemon.get("k"), "1"); });

  cli.put("k", "2", 2);
  daemon.transaction([&] { EXPECT_EQ(daemon.get("k"), "2"); });
  EXPECT_EQ(daemon.get("k"), "2");  // outside a transaction too

  daemon.transaction([&] { daemon.put("k", "3", 3); });
  cli.put("k", "4", 4);
  daemon.transaction([&] { daemon.put("k", "3", 5); });  // remembered as 3, but the file has 4
  EXPECT_EQ(cli.get("k"), "3");

  EXPECT_THROW(daemon.transaction([&] {
    daemon.put("k", "rolled back", 6);
    EXPECT_EQ(daemon.get("k"), "rolled back");
    throw std::runtime_error("disk full");
  }),
               std::runtime_error);
  daemon.transaction([&] { EXPECT_EQ(daemon.get("k"), "3"); });

  cli.put("new", "seen", 7);  // a key the daemon had read as absent
  EXPECT_FALSE(daemon.get("other").has_value());
  daemon.transaction([&] {
    EXPECT_FALSE(daemon.get("other").has_value());
    EXPECT_EQ(daemon.get("new"), "seen");
  });
}

// A memory hit is no read of the file: shown by a row changed under the daemon's own
// connection (no other connection, so data_version does not move), which only a real read
// would see. This is what makes 1,000 jobs' reads cost no SQL.
TEST(KvMemo, InsideATransactionARememberedValueCostsNoQuery) {
  testing::TempDir dir;
  Store daemon(dir.path);
  daemon.transaction([&] { daemon.put("k", "remembered", 1); });
  StoreTestAccess::db(daemon).exec("UPDATE kv SET value='changed underneath' WHERE key='k'");
  daemon.transaction([&] { EXPECT_EQ(daemon.get("k"), "remembered"); });
  EXPECT_EQ(daemon.get("k"), "changed underneath");  // outside a transaction: read
}

TEST(Store, TheLastJobIsKeptParsedAndReadBackAsStored) {
  testing::TempDir dir;
  Store daemon(dir.path), cli(dir.path);
  EXPECT_FALSE(daemon.last_job("tr").has_value());
  SlurmJob task;
  task.job_id = 42;
  task.state = "RUNNING";
  task.nodes = "gpu[1-2]";
  daemon.put_last_job("tr", task, 1);
  auto got = daemon.last_job("tr");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, 42);
  EXPECT_EQ(got->nodes, "gpu[1-2]");
  task.state = "COMPLETED";
  cli.put_last_job("tr", task, 2);  // another process
  ASSERT_TRUE(daemon.last_job("tr").has_value());
  EXPECT_EQ(daemon.last_job("tr")->state, "COMPLETED");
}

// The goodput state is kept parsed the same way (#29), and what another process stored, or a
// rollback took back, is what is read.
TEST(Store, TheGoodputStateIsKeptParsedAndReadBackAsStored) {
  testing::TempDir dir;
  Store daemon(dir.path), cli(dir.path);
  EXPECT_EQ(daemon.goodput_state("tr").at, 0);
  GoodputState s;
  s.at = 1800000000.25, s.task = "7@1", s.open_s = 12.5, s.best = 40, s.gpus = 8;
  daemon.put_goodput_state("tr", s, 1);
  EXPECT_EQ(daemon.goodput_state("tr").to_json(), s.to_json());
  s.best = 41;
  cli.put_goodput_state("tr", s, 2);  // another process
  EXPECT_EQ(daemon.goodput_state("tr").best, 41);
  EXPECT_THROW(daemon.transaction([&] {
    GoodputState t = s;
    t.best = 99;
    daemon.put_goodput_state("tr", t, 3);
    throw std::runtime_error("cycle failed");
  }),
               std::runtime_error);
  EXPECT_EQ(daemon.goodput_state("tr").best, 41);
  GoodputState odd = s;
  odd.last_node = "node-\xff";  // not kept as written: read back as stored
  daemon.put_goodput_state("tr", odd, 4);
  EXPECT_EQ(daemon.goodput_state("tr").to_json(), GoodputState::from_json(odd.to_json()).to_json());
}

}  // namespace
}  // namespace llmwatch
