// MetricsText and PromText: the exposition's lines for the series added with
// the wait histogram, breaker trips, limit hits and per-user counters.
#include "daemon/metrics_text.h"

#include <catch2/catch.hpp>
#include <string>

#include "breaker/breaker_spec.h"

namespace brake {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos ||
         text.rfind(line + "\n", 0) == 0;
}

TEST_CASE("prom text: families, samples and escaped label values",
          "[metrics]") {
  PromText t;
  t.Family("x_total", "Things.", "counter");
  t.Sample("x_total", {}, int64_t{3});
  t.Sample("x_total", {{"user", "a\"b\\c\nd"}, {"k", "v"}}, int64_t{-1});
  t.Sample("y", {}, 0.25);
  t.Sample("y", {}, 1e-9);
  CHECK(t.Take() ==
        "# HELP x_total Things.\n"
        "# TYPE x_total counter\n"
        "x_total 3\n"
        "x_total{user=\"a\\\"b\\\\c\\nd\",k=\"v\"} -1\n"
        "y 0.25\n"
        "y 1e-09\n");
}

TEST_CASE("metrics text: histogram, trips, limit hits and busiest users",
          "[metrics]") {
  Counters counters;
  counters.waits.Observe(true, Reason::kRateLimited, 30'000);
  counters.waits.Observe(false, Reason::kQueueFull, 0);
  ServerStats server;
  server.limit_hits.Add(LimitHit::kMaxLineBytes);
  server.limit_hits.Add(LimitHit::kMaxLineBytes);
  MetricsSources src;
  src.counters = &counters;
  src.server = &server;
  src.breaker_trips[static_cast<size_t>(breaker::Cause::kLoop)] = 4;
  SubjectActivity alice;
  alice.subject = "alice";
  alice.grants = 7;
  alice.denials = 2;
  alice.tokens = 700;
  alice.usd_nano = 1'500'000'000;
  src.top_users = {alice};
  const std::string text = MetricsText(src);
  INFO(text);

  CHECK(HasLine(text, "# TYPE brake_wait_seconds histogram"));
  CHECK(HasLine(
      text, "brake_wait_seconds_bucket{result=\"granted\",le=\"0.025\"} 0"));
  CHECK(HasLine(text,
                "brake_wait_seconds_bucket{result=\"granted\",le=\"0.05\"} 1"));
  CHECK(HasLine(text,
                "brake_wait_seconds_bucket{result=\"granted\",le=\"+Inf\"} 1"));
  CHECK(HasLine(text, "brake_wait_seconds_sum{result=\"granted\"} 0.03"));
  CHECK(HasLine(text, "brake_wait_seconds_count{result=\"granted\"} 1"));
  CHECK(HasLine(text, "brake_wait_seconds_count{result=\"queue_full\"} 1"));
  // timeout always; a reason that never happened is left out.
  CHECK(HasLine(text, "brake_wait_seconds_count{result=\"timeout\"} 0"));
  CHECK(text.find("result=\"cost_cap\"") == std::string::npos);

  CHECK(HasLine(text, "brake_breaker_trips_total{cause=\"loop\"} 4"));
  CHECK(HasLine(text, "brake_breaker_trips_total{cause=\"manual\"} 0"));
  CHECK(text.find("cause=\"none\"") == std::string::npos);

  CHECK(HasLine(text, "brake_limit_hits_total{limit=\"max_line_bytes\"} 2"));
  for (const char* limit :
       {"max_depth", "max_connections", "max_output_bytes",
        "partial_line_timeout_ms", "max_waiters_per_scope"}) {
    CHECK(HasLine(text, std::string("brake_limit_hits_total{limit=\"") + limit +
                            "\"} 0"));
  }

  CHECK(HasLine(text, "brake_user_grants_total{user=\"alice\"} 7"));
  CHECK(HasLine(text, "brake_user_denials_total{user=\"alice\"} 2"));
  CHECK(HasLine(text, "brake_user_granted_tokens_total{user=\"alice\"} 700"));
  CHECK(HasLine(text, "brake_user_granted_usd_total{user=\"alice\"} 1.5"));
}

}  // namespace
}  // namespace brake
