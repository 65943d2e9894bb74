#include "common/ledger_rows.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace brake {
namespace {

// Row `n`: every field its own, texts of several lengths (some empty, the
// lease past a short string), numbers from n.
LedgerRow LedgerSample(int n) {
  const std::string s = std::to_string(n);
  LedgerRow r;
  r.time_ms = 1'000 + n;
  r.user = "user-" + s;
  r.task = n % 2 ? "task-with-a-long-name-" + s : "";
  r.parent = n % 3 ? "" : "p" + s;
  r.resource = "r";
  r.model = n % 2 ? "" : "model-" + s;
  r.requests = n;
  r.tokens = 10 * n;
  r.input_tokens = 3 * n;
  r.output_tokens = 7 * n;
  r.usd_nano = -n;  // any integer
  r.latency_ms = n % 2 ? -1 : n;
  r.outcome = n % 2 ? "ok" : "expired";
  r.expired = n % 2 == 0;
  r.lease = "0123456789ab-" + s;
  return r;
}

void CheckSame(const LedgerView& got, const LedgerRow& want) {
  CHECK(got.time_ms == want.time_ms);
  CHECK(got.user == want.user);
  CHECK(got.task == want.task);
  CHECK(got.parent == want.parent);
  CHECK(got.resource == want.resource);
  CHECK(got.model == want.model);
  CHECK(got.requests == want.requests);
  CHECK(got.tokens == want.tokens);
  CHECK(got.input_tokens == want.input_tokens);
  CHECK(got.output_tokens == want.output_tokens);
  CHECK(got.usd_nano == want.usd_nano);
  CHECK(got.latency_ms == want.latency_ms);
  CHECK(got.outcome == want.outcome);
  CHECK(got.expired == want.expired);
  CHECK(got.lease == want.lease);
}

TEST_CASE("ledger rows: every field reads back as pushed", "[ledger_rows]") {
  LedgerRows rows;
  CHECK(rows.empty());
  std::vector<LedgerRow> want;
  for (int n = 0; n < 9; ++n) {
    want.push_back(LedgerSample(n));
    rows.push_back(want.back());
    REQUIRE(rows.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CheckSame(rows[i], want[i]);
  }
  size_t i = 0;
  for (const LedgerView& row : rows) CheckSame(row, want[i++]);
  CHECK(i == want.size());
  // A pushed view is copied: the source may go away.
  const size_t text_before = rows.text_size();
  {
    LedgerRow gone = LedgerSample(42);
    rows.push_back(ViewOf(gone));
  }
  CheckSame(rows.back(), LedgerSample(42));
  rows.pop_back();  // the row and its text
  REQUIRE(rows.size() == want.size());
  CHECK(rows.text_size() == text_before);
  CheckSame(rows.back(), want.back());
  rows.push_back(LedgerSample(43));
  CheckSame(rows.back(), LedgerSample(43));
}

TEST_CASE("ledger rows: Append keeps both sides' rows in order",
          "[ledger_rows]") {
  LedgerRows a{LedgerSample(1), LedgerSample(2)};
  LedgerRows b{LedgerSample(3), LedgerSample(4), LedgerSample(5)};
  a.Append(std::move(b));
  CHECK(b.empty());  // NOLINT: Append leaves its source empty
  REQUIRE(a.size() == 5);
  for (int n = 1; n <= 5; ++n) CheckSame(a[static_cast<size_t>(n - 1)], LedgerSample(n));

  LedgerRows empty;
  empty.Append(std::move(a));  // into nothing: the rows move whole
  REQUIRE(empty.size() == 5);
  CheckSame(empty[4], LedgerSample(5));
}

}  // namespace
}  // namespace brake
