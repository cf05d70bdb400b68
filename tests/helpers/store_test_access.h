#pragma once
// Tests that inject faults into the database (a trigger that fails like a full disk) or test
// the connection itself reach it as the store's own classes do.
#include "store/store.h"

namespace llmwatch {
struct StoreTestAccess {
  static Db& db(Store& s) { return s.db(); }
  // What a process killed now would lose: everything it kept in memory and had not written.
  static void die(Store& s) { s.goodput_states_.clear(); }
};
}  // namespace llmwatch
