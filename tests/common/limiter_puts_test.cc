#include "common/limiter_puts.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace brake {
namespace {

// Row `n`: its own texts (the scope past a short string) and a state of n
// values (none for 0), so that rows' states differ in length.
LimiterRow LimiterSample(int n) {
  const std::string s = std::to_string(n);
  LimiterRow r;
  r.scope = "task:a-task-with-a-long-name-" + s;
  r.name = "limit-" + s;
  r.algorithm = n % 2 ? "token_bucket" : "sliding_log";
  for (int i = 0; i < n; ++i) r.state.push_back(int64_t{n} * 100 - i);
  return r;
}

void CheckSame(const LimiterView& got, const LimiterRow& want) {
  CHECK(got.scope == want.scope);
  CHECK(got.name == want.name);
  CHECK(got.algorithm == want.algorithm);
  CHECK(std::vector<int64_t>(got.state.begin(), got.state.end()) ==
        want.state);
}

TEST_CASE("limiter puts: every row reads back as added", "[limiter_puts]") {
  LimiterPuts puts;
  CHECK(puts.empty());
  std::vector<LimiterRow> want;
  for (int n = 0; n < 7; ++n) {
    want.push_back(LimiterSample(n));
    if (n % 2) {
      puts.push_back(want.back());
    } else {  // the state appended by a filler, as Engine::Drain adds it
      const LimiterRow& r = want.back();
      puts.Add(r.scope, r.name, r.algorithm, [&](std::vector<int64_t>* out) {
        out->insert(out->end(), r.state.begin(), r.state.end());
      });
    }
    REQUIRE(puts.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CheckSame(puts[i], want[i]);
  }
  size_t i = 0;
  for (const LimiterView row : puts) CheckSame(row, want[i++]);
  CHECK(i == want.size());
  const std::vector<LimiterRow> rows = RowsOf(puts);
  REQUIRE(rows.size() == want.size());
  for (size_t k = 0; k < rows.size(); ++k) CheckSame(puts[k], rows[k]);
}

TEST_CASE("limiter puts: Append keeps both sides' rows and states in order",
          "[limiter_puts]") {
  LimiterPuts a{LimiterSample(3), LimiterSample(0)};
  LimiterPuts b{LimiterSample(2), LimiterSample(5), LimiterSample(1)};
  a.Append(std::move(b));
  CHECK(b.empty());
  const std::vector<LimiterRow> want = {LimiterSample(3), LimiterSample(0), LimiterSample(2), LimiterSample(5),
                                        LimiterSample(1)};
  REQUIRE(a.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CheckSame(a[i], want[i]);

  LimiterPuts empty;
  empty.Append(LimiterPuts{LimiterSample(4)});
  REQUIRE(empty.size() == 1);
  CheckSame(empty[0], LimiterSample(4));
}

TEST_CASE("limiter puts: EraseIf drops exactly the rows it names",
          "[limiter_puts]") {
  LimiterPuts puts{LimiterSample(1), LimiterSample(2), LimiterSample(3), LimiterSample(4)};
  puts.EraseIf([](const LimiterView& r) { return r.name == "limit-2"; });
  REQUIRE(puts.size() == 3);
  CheckSame(puts[0], LimiterSample(1));
  CheckSame(puts[1], LimiterSample(3));  // its state follows its row, not a position
  CheckSame(puts[2], LimiterSample(4));
}

TEST_CASE("limiter puts: clear keeps the room so refilling does not grow it",
          "[limiter_puts]") {
  LimiterPuts puts{LimiterSample(6), LimiterSample(5), LimiterSample(4)};
  puts.clear();
  CHECK(puts.empty());
  const size_t room = puts.capacity_bytes();
  CHECK(room > 0);
  for (int n : {6, 5, 4}) puts.push_back(LimiterSample(n));
  CHECK(puts.capacity_bytes() == room);
  CheckSame(puts[2], LimiterSample(4));
}

}  // namespace
}  // namespace brake
