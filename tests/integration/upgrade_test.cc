// Upgrades: a database left by an older braked opens in this one with
// everything in it, and is migrated (docs/OPERATIONS.md "Upgrades").
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {
namespace {

// A raw connection to a stopped daemon's database.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      throw std::runtime_error("cannot open " + path);
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void Exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) !=
        SQLITE_OK) {
      std::string message = error != nullptr ? error : "?";
      sqlite3_free(error);
      throw std::runtime_error(sql + ": " + message);
    }
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(st, 0);
      if (text != nullptr) out = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(st);
    return out;
  }
  void SetLeases(const std::string& leases) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, "UPDATE lease_chunks SET leases = ?1", -1,
                               &st, nullptr) == SQLITE_OK);
    sqlite3_bind_text(st, 1, leases.data(), static_cast<int>(leases.size()),
                      SQLITE_TRANSIENT);
    CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
  }

 private:
  sqlite3* db_ = nullptr;
};

// The lease of `line` ("ID\t[3,...]") as schema 3's braked wrote it: a
// JSON object with its id (format 1).
std::string FormatOneLine(const std::string& line) {
  const size_t tab = line.find('\t');
  REQUIRE(tab != std::string::npos);
  const std::string id = line.substr(0, tab);
  json two = json::parse(line.substr(tab + 1));
  REQUIRE(two.at(0) == 3);
  // Its own scopes by name: format 3's codes spelled out.
  for (json& scope : two.at(12)) {
    if (scope.is_string()) continue;
    const int code = scope.get<int>();
    const char* const kPrefixes[] = {"", "user:", "task:", "task:",
                                     "resource:"};
    REQUIRE(code >= 0);
    REQUIRE(code < 5);
    scope = code == 0 ? std::string("global")
                      : kPrefixes[code] + two.at(code).get<std::string>();
  }
  json charges = json::array();
  const char* const kResources[] = {"requests", "tokens", "usd"};
  for (const json& c : two.at(13)) {
    charges.push_back({two.at(12).at(c.at(0).get<size_t>()), c.at(1),
                       kResources[c.at(2).get<int>()], c.at(3)});
  }
  const json one = {{"id", id},           {"user", two[1]},
                    {"task", two[2]},      {"parent", two[3]},
                    {"resource", two[4]},  {"model", two[5]},
                    {"fingerprint", two[6]}, {"requests", two[7]},
                    {"tokens", two[8]},    {"usd_nano", two[9]},
                    {"granted_at_us", two[10]},
                    {"expires_at_us", two[11]},
                    {"scopes", two[12]},   {"charges", charges}};
  return id + "\t" + one.dump();
}

// Undoes schema 5's ledger change: its rowid ledger (with its three
// indexes) becomes the ledger again, as schemas 2 to 4 had it.
constexpr const char* kLedgerOfSchema4 =
    "DROP TABLE ledger; ALTER TABLE ledger_schema4 RENAME TO ledger;";

// Undoes schema 6's: a chunk's settled bitmap is a column of its row again.
constexpr const char* kLeasesOfSchema5 =
    "DROP TABLE lease_settled; ALTER TABLE lease_chunks ADD COLUMN settled "
    "TEXT NOT NULL DEFAULT '';";

TEST_CASE("a lease left open by a schema 3 braked settles after the upgrade",
          "[integration]") {
  RunningDaemon d;
  std::string lease;
  {
    Client c = d.daemon.Connect();
    SetPolicy(c, "user:*",
              R"([{"name":"day","resource":"tokens","algorithm":"quota",)"
              R"("limit":1000,"period":"day"}])");
    lease = AcquireLease(c, "alice", "t1", {{"tokens", 300}});
  }
  REQUIRE(d.daemon.Stop() == 0);
  {
    Db db(d.daemon.db_path());
    const std::string line = db.Text("SELECT leases FROM lease_chunks");
    REQUIRE(line.rfind(lease + "\t[3,", 0) == 0);
    db.SetLeases(FormatOneLine(line));
    db.Exec(kLedgerOfSchema4);
    db.Exec(kLeasesOfSchema5);
    // Two settlements of schema 1 (no lease) in the same millisecond, and
    // one of schema 2 or later: the new ledger's key would merge the first
    // two; they stay apart where they are.
    for (const char* lease_of_row : {"", "", "0123456789ab-7"}) {
      db.Exec(std::string("INSERT INTO ledger(time_ms, user, task, parent, "
                          "resource, model, requests, tokens, input_tokens, "
                          "output_tokens, usd_nano, latency_ms, outcome, "
                          "expired, lease) VALUES(1000, 'alice', 't0', '', "
                          "'', '', 1, 40, 0, 0, 0, 5, 'ok', 0, '") +
              lease_of_row + "')");
    }
    db.Exec("PRAGMA user_version = 3");
  }
  REQUIRE(d.daemon.Start());
  Client c = d.daemon.Connect();
  json alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["reserved"]["tokens"] == 300);
  // The quota still holds the reservation: 701 more do not fit.
  CHECK(c.Call({{"op", "acquire"}, {"user", "alice"}, {"task", "t1"},
                {"tokens", 701}})["granted"] == false);
  json commit =
      CallOk(c, {{"op", "commit"}, {"lease", lease}, {"tokens", 250}});
  CHECK(commit["charged_tokens"] == 250);
  alice = CallOk(c, {{"op", "status"}, {"user", "alice"}});
  CHECK(alice["reserved"]["tokens"] == 0);
  CHECK(alice["spend"]["tokens"] == 250);
  // Usage reads the rows written before the upgrade, where they were, and
  // the commit's row in the new ledger.
  json usage = CallOk(c, {{"op", "usage"}, {"user", "alice"}});
  INFO("usage: " << usage.dump());
  REQUIRE(usage["rows"].size() == 2);
  CHECK(usage["rows"][0]["key"] == "t0");
  CHECK(usage["rows"][0]["calls"] == 3);
  CHECK(usage["rows"][0]["tokens"] == 120);
  CHECK(usage["rows"][1]["key"] == "t1");
  CHECK(usage["rows"][1]["tokens"] == 250);
  REQUIRE(d.daemon.Stop() == 0);
  Db db(d.daemon.db_path());
  CHECK(db.Text("PRAGMA user_version") == "8");
  // Settled: its chunk and any bitmap of it are gone.
  CHECK(db.Text("SELECT count(*) FROM lease_chunks") == "0");
  CHECK(db.Text("SELECT count(*) FROM lease_settled") == "0");
  CHECK(db.Text("SELECT count(*) FROM ledger_schema4") == "3");
  CHECK(db.Text("SELECT lease FROM ledger") == lease);
}

}  // namespace
}  // namespace brake::integration
