// Reading the Prometheus text exposition that braked's `metrics` op returns.
#include "ctl/prometheus.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

namespace brake::ctl {
namespace {

TEST_CASE("metrics text: samples, labels, comments and special values",
          "[ctl][top]") {
  Result<MetricSet> set = MetricSet::Parse(
      "# HELP brake_acquires_total Acquire decisions by result and reason.\n"
      "# TYPE brake_acquires_total counter\n"
      "brake_acquires_total{result=\"granted\"} 12\n"
      "brake_acquires_total{result=\"denied\",reason=\"rate_limited\"} 3\n"
      "brake_acquires_total{ result = \"denied\" , reason=\"cost_cap\", } 4\n"
      "\n"
      "brake_storage_commit_seconds_total 0.000290\r\n"
      "weird{path=\"a\\\\b\\\"c\\nd\"} 1e3 1712345678000\n"
      "up +Inf\n"
      "down -Inf\n"
      "gone NaN\n"
      "   # indented comment\n"
      "last 7");
  REQUIRE(set.ok());
  REQUIRE(set->samples().size() == 9);
  CHECK(set->Sum("brake_acquires_total") == 19);
  CHECK(set->Sum("brake_acquires_total", {{"result", "denied"}}) == 7);
  CHECK(set->Sum("brake_acquires_total",
                 {{"result", "denied"}, {"reason", "cost_cap"}}) == 4);
  CHECK_FALSE(set->Sum("brake_acquires_total", {{"result", "other"}}));
  CHECK_FALSE(set->Sum("brake_waiters"));  // absent is not zero
  CHECK(set->Sum("brake_storage_commit_seconds_total") == Approx(0.00029));
  const MetricSample& weird = set->samples()[4];
  CHECK(weird.name == "weird");
  REQUIRE(weird.labels.size() == 1);
  CHECK(weird.labels[0].second == "a\\b\"c\nd");
  CHECK(weird.value == 1000);
  CHECK(std::isinf(*set->Sum("up")));
  CHECK(*set->Sum("down") < 0);
  CHECK(std::isnan(*set->Sum("gone")));
  CHECK(set->Sum("last") == 7);
  CHECK(set->LabelValues("brake_acquires_total", "reason") ==
        std::vector<std::string>{"rate_limited", "cost_cap"});
  CHECK(set->LabelValues("brake_acquires_total", "reason",
                         {{"result", "granted"}})
            .empty());
}

TEST_CASE("metrics text: a malformed line fails the parse and is named",
          "[ctl][top]") {
  const char* bad[] = {
      "1abc 3",          // name must not start with a digit
      "x{a=\"1\" 3",     // unclosed labels
      "x{a=1} 3",        // unquoted label value
      "x{a=\"\\t\"} 3",  // unknown escape
      "x",               // no value
      "x3",              // no space before the value
      "x abc",           // not a number
      "x nan",           // NaN is spelt NaN
      "x 1 12ab",        // timestamp not an integer
      "x{=\"v\"} 1",     // label without a name
  };
  for (const char* line : bad) {
    INFO(line);
    Result<MetricSet> set = MetricSet::Parse(std::string("ok 1\n") + line);
    REQUIRE_FALSE(set.ok());
    CHECK(set.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(set.status().message(), Catch::StartsWith("metrics: line 2: "));
  }
  CHECK(MetricSet::Parse("").ok());
  CHECK(MetricSet::Parse("# only a comment\n").ok());
}

}  // namespace
}  // namespace brake::ctl
