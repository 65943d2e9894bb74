#include "common/spend_puts.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace brake {
namespace {

// Row `n`: its own scope (past a short string for odd n) and numbers.
SpendRow SpendSample(int n) {
  const std::string s = std::to_string(n);
  return SpendRow{n % 2 ? "task:a-task-with-a-long-name-" + s : "user:" + s,
                  n, 10 * n, -n};
}

void CheckSame(const SpendView& got, const SpendRow& want) {
  CHECK(got.scope == want.scope);
  CHECK(got.requests == want.requests);
  CHECK(got.tokens == want.tokens);
  CHECK(got.usd_nano == want.usd_nano);
}

TEST_CASE("spend puts: rows read back as added, in order", "[spend_puts]") {
  SpendPuts puts;
  CHECK(puts.empty());
  std::vector<SpendRow> want;
  for (int n = 0; n < 6; ++n) {
    want.push_back(SpendSample(n));
    puts.push_back(want.back());
  }
  REQUIRE(puts.size() == want.size());
  size_t i = 0;
  for (const SpendView row : puts) CheckSame(row, want[i++]);
  CheckSame(puts.front(), want.front());
  const std::vector<SpendRow> rows = RowsOf(puts);
  REQUIRE(rows.size() == want.size());
  for (size_t k = 0; k < rows.size(); ++k) CheckSame(puts[k], rows[k]);
}

TEST_CASE("spend puts: Append and EraseIf keep each row whole",
          "[spend_puts]") {
  SpendPuts a{SpendSample(1), SpendSample(2)};
  a.Append(SpendPuts{SpendSample(3), SpendSample(4), SpendSample(5)});
  a.EraseIf([](const SpendView& r) { return r.requests % 2 == 0; });
  REQUIRE(a.size() == 3);
  CheckSame(a[0], SpendSample(1));
  CheckSame(a[1], SpendSample(3));  // its numbers follow its scope
  CheckSame(a[2], SpendSample(5));

  SpendPuts empty;
  SpendPuts b{SpendSample(7)};
  empty.Append(std::move(b));
  CHECK(b.empty());  // NOLINT: Append leaves its source empty
  REQUIRE(empty.size() == 1);
  CheckSame(empty[0], SpendSample(7));
}

}  // namespace
}  // namespace brake
