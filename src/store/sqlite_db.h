#pragma once
// A thin RAII wrapper over the SQLite C API: open, exec, prepared statements, transactions.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace llmwatch {

struct DbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  // Borrows a cached statement; on destruction it is reset and handed back to `in_use`.
  Statement(sqlite3* db, sqlite3_stmt* cached, bool* in_use);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind_null(int index);
  bool step();  // true while a row is available
  void run() { step(); }
  std::string text(int col) const;
  std::int64_t integer(int col) const;
  double real(int col) const;
  bool is_null(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool* in_use_ = nullptr;  // set: borrowed from Db's cache
};

class Db {
 public:
  explicit Db(const std::string& path);  // throws DbError with the path in the message
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(const std::string& sql);
  // Prepared statements are cached by their SQL: re-parsing the same few statements for
  // every watched job was a fifth of a cycle at 1,000 jobs. A statement still in use (a
  // nested query with the same SQL) gets a fresh one.
  Statement prepare(const std::string& sql);
  std::int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  sqlite3* raw() { return db_; }
  bool in_transaction() const { return !sqlite3_get_autocommit(db_); }

  // Runs fn inside BEGIN IMMEDIATE ... COMMIT; rolls back if fn throws. Inside a transaction
  // already, fn joins it (its failure rolls back the outer one, whose caller sees it throw).
  template <class F>
  void transaction(F&& fn) {
    if (!sqlite3_get_autocommit(db_)) {
      fn();
      return;
    }
    exec("BEGIN IMMEDIATE");
    try {
      fn();
      exec("COMMIT");
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }

 private:
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::unordered_map<std::string, Cached> cache_;
};

}  // namespace llmwatch
