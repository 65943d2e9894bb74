// What tests/integration/money*_test.cc share: a usd cap, a usd amount in
// whole nano-usd, and a user's usage total.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"

namespace brake::integration {

// A usd amount of a reply in whole nano-usd.
inline int64_t Nano(const json& usd) {
  REQUIRE(usd.is_number());
  return std::llround(usd.get<double>() * 1e9);
}

// policy.set of a quota over all time on usd, named `name`.
inline void SetUsdCap(Client& c, const std::string& scope, double usd,
                      const std::string& name = "cap") {
  CallOk(c, {{"op", "policy.set"},
             {"scope", scope},
             {"limits",
              {{{"name", name},
                {"resource", "usd"},
                {"algorithm", "quota"},
                {"limit", usd},
                {"period", "total"}}}}});
}

// The one row of {"op":"usage","user":U,"by":"total"}.
inline json UsageTotal(Client& c, const std::string& user) {
  json usage = CallOk(c, {{"op", "usage"}, {"user", user}, {"by", "total"}});
  INFO("usage: " << usage.dump());
  REQUIRE(usage["rows"].is_array());
  REQUIRE(usage["rows"].size() == 1);
  return usage["rows"][0];
}

}  // namespace brake::integration
