#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/records.h"

namespace brake {
namespace {

LedgerRow At(int64_t time_ms) {
  LedgerRow row;
  row.time_ms = time_ms;
  return row;
}

std::vector<std::string> PolicyScopes(const Batch& b) {
  std::vector<std::string> out;
  for (const PolicyRow& row : b.policies_put) out.push_back(row.scope);
  return out;
}

TEST_CASE("Batch::empty ignores seq and sees every kind", "[storage]") {
  Batch b;
  b.seq = 7;
  CHECK(b.empty());
  SECTION("policy delete") { b.policies_deleted.push_back("global"); }
  SECTION("limiter put") {
    b.limiters_put.push_back({"user:a", "rpm", "tb", {}});
  }
  SECTION("limiter scope delete") {
    b.limiter_scopes_deleted.push_back("user:a");
  }
  SECTION("breaker delete") { b.breakers_deleted.push_back("tool:x"); }
  SECTION("price put") { b.prices_put.push_back({"m", 1, 2}); }
  SECTION("ledger append") { b.ledger_append.push_back(LedgerRow{}); }
  CHECK_FALSE(b.empty());
}

TEST_CASE("Batch::Clear empties every kind and keeps the room", "[storage]") {
  Batch b;
  b.seq = 7;
  b.policies_put.push_back({"p", "{}"});
  b.policies_deleted.push_back("global");
  b.tasks_put.push_back(TaskRow{});
  b.limiters_put.push_back({"user:a", "rpm", "tb", {}});
  b.limiter_scopes_deleted.push_back("user:a");
  b.spend_put.push_back(SpendRow{});
  b.spend_deleted.push_back("task:t");
  b.leases_put.Add("L1", "{}");
  b.leases_deleted.push_back("L0");
  b.breakers_put.push_back(BreakerRow{});
  b.breakers_deleted.push_back("tool:x");
  b.prices_put.push_back({"m", 1, 2});
  b.ledger_append.push_back(LedgerRow{});
  const size_t room = b.capacity_bytes();
  CHECK(room > 0);

  b.Clear();
  CHECK(b.empty());
  CHECK(b.seq == 0);
  CHECK(b.capacity_bytes() == room);
  b.leases_put.Add("L2", "{2}");
  REQUIRE(b.leases_put.size() == 1);
  CHECK(b.leases_put[0].id == "L2");
  CHECK(b.leases_put[0].json == "{2}");
}

TEST_CASE("Batch::Append concatenates in order and empties the source",
          "[storage]") {
  Batch a;
  a.seq = 3;
  a.policies_put.push_back({"p1", "{}"});
  a.ledger_append.push_back(At(1));
  Batch b;
  b.seq = 5;
  b.policies_put.push_back({"p2", "{}"});
  b.policies_put.push_back({"p1", "{\"v\":2}"});
  b.ledger_append.push_back(At(2));
  b.prices_put.push_back({"m", 1, 2});

  a.Append(std::move(b));
  CHECK(a.seq == 5);
  CHECK(PolicyScopes(a) == std::vector<std::string>{"p1", "p2", "p1"});
  CHECK(a.policies_put.back().json == "{\"v\":2}");  // the later put is last
  REQUIRE(a.ledger_append.size() == 2);
  CHECK(a.ledger_append[0].time_ms == 1);
  CHECK(a.ledger_append[1].time_ms == 2);
  CHECK(a.prices_put.size() == 1);
  CHECK(b.empty());  // NOLINT: moved-from is specified as empty here
}

TEST_CASE("Batch::Append keeps a later delete effective over earlier puts",
          "[storage]") {
  // Deletes run before puts inside a batch, so a merged batch must not keep
  // an earlier put of a key that a later batch deletes.
  Batch a;
  a.policies_put.push_back({"gone", "{}"});
  a.policies_put.push_back({"kept", "{}"});
  a.limiters_put.push_back({"user:a", "rpm", "tb", {1}});
  a.limiters_put.push_back({"user:b", "rpm", "tb", {2}});
  a.spend_put.push_back({"user:a", 1, 2, 3});
  a.leases_put.Add("L1", "{}");
  a.breakers_put.push_back({"tool:x", {0}});
  Batch b;
  b.policies_deleted.push_back("gone");
  b.limiter_scopes_deleted.push_back("user:a");
  b.limiters_put.push_back({"user:a", "tpm", "tb", {3}});
  b.spend_deleted.push_back("user:a");
  b.leases_deleted.push_back("L1");
  b.breakers_deleted.push_back("tool:x");

  a.Append(std::move(b));
  CHECK(PolicyScopes(a) == std::vector<std::string>{"kept"});
  CHECK(a.policies_deleted == std::vector<std::string>{"gone"});
  REQUIRE(a.limiters_put.size() == 2);
  CHECK(a.limiters_put[0].scope == "user:b");
  CHECK(a.limiters_put[1].name == "tpm");  // the later put survives
  CHECK(a.limiter_scopes_deleted == std::vector<std::string>{"user:a"});
  CHECK(a.spend_put.empty());
  CHECK(a.leases_put.empty());
  CHECK(a.leases_deleted == TextList{"L1"});
  CHECK(a.breakers_put.empty());
}

TEST_CASE("Batch::Append keeps each lease row's id and text across batches",
          "[storage]") {
  // One string holds a batch's lease rows: the later batch's rows move
  // into it, and a row dropped by a later delete leaves its neighbours whole.
  Batch a;
  a.leases_put.Add("L1", "[1]", /*fresh=*/true);
  a.leases_put.Add("L22", "[22,2]");
  a.leases_put.Add("L333", "[333,3,3]", /*fresh=*/true);
  Batch b;
  b.leases_deleted.push_back("L22");
  b.leases_put.Add("L4", "[4444]");
  b.leases_put.Add("L22", "[22,again]", /*fresh=*/true);

  a.Append(std::move(b));
  std::vector<std::string> rows;
  for (const LeasePuts::Row row : a.leases_put) {
    rows.push_back(std::string(row.id) + "=" + std::string(row.json) +
                   (row.fresh ? " fresh" : ""));
  }
  CHECK(rows == std::vector<std::string>{"L1=[1] fresh", "L333=[333,3,3] fresh",
                                         "L4=[4444]", "L22=[22,again] fresh"});
  CHECK(b.leases_put.empty());
  CHECK(a.leases_deleted == TextList{"L22"});
}

}  // namespace
}  // namespace brake
