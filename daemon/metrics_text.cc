#include "daemon/metrics_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "breaker/breaker_spec.h"
#include "daemon/json_fields.h"

namespace brake {

void PromText::Family(std::string_view name, std::string_view help,
                      std::string_view type) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += help;
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PromText::Head(std::string_view name, const Labels& labels) {
  text_ += name;
  if (labels.empty()) {
    text_ += ' ';
    return;
  }
  char sep = '{';
  for (const auto& [label, value] : labels) {
    text_ += sep;
    sep = ',';
    text_ += label;
    text_ += "=\"";
    for (char c : value) {
      if (c == '\\' || c == '"') {
        text_ += '\\';
        text_ += c;
      } else if (c == '\n') {
        text_ += "\\n";
      } else {
        text_ += c;
      }
    }
    text_ += '"';
  }
  text_ += "} ";
}

void PromText::Sample(std::string_view name, const Labels& labels,
                      int64_t value) {
  Head(name, labels);
  text_ += std::to_string(value);
  text_ += '\n';
}

void PromText::Sample(std::string_view name, const Labels& labels,
                      double value) {
  Head(name, labels);
  if (std::isnan(value)) {
    text_ += "NaN";
  } else if (std::isinf(value)) {
    text_ += value > 0 ? "+Inf" : "-Inf";
  } else {
    // The shortest text that reads back as the same double.
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    text_.append(buf, ec == std::errc() ? end : buf);
  }
  text_ += '\n';
}

namespace {

void WaitSeries(const WaitHistogram& h, PromText* t) {
  static constexpr const char* kName = "brake_wait_seconds";
  t->Family(kName,
            "How long waiting acquires (wait_ms > 0) waited for their "
            "answer, by result (granted or the denial reason).",
            "histogram");
  for (size_t r = 0; r < WaitHistogram::kResults; ++r) {
    // A result appears once it has happened; granted and timeout always.
    if (h.Count(r) == 0 && r != 0 &&
        WaitHistogram::ResultName(r) != ReasonName(Reason::kTimeout)) {
      continue;
    }
    const std::string_view result = WaitHistogram::ResultName(r);
    for (size_t b = 0; b < WaitHistogram::kBuckets; ++b) {
      char le[32] = "+Inf";
      if (b < WaitHistogram::kBoundsUs.size()) {
        std::snprintf(le, sizeof le, "%g",
                      static_cast<double>(WaitHistogram::kBoundsUs[b]) / 1e6);
      }
      t->Sample("brake_wait_seconds_bucket", {{"result", result}, {"le", le}},
                h.CumulativeCount(r, b));
    }
    t->Sample("brake_wait_seconds_sum", {{"result", result}},
              static_cast<double>(h.SumUs(r)) / 1e6);
    t->Sample("brake_wait_seconds_count", {{"result", result}}, h.Count(r));
  }
}

void TripSeries(const std::array<int64_t, 7>& trips, PromText* t) {
  t->Family("brake_breaker_trips_total",
            "Breakers that opened (from closed or half-open), by cause.",
            "counter");
  for (size_t i = 1; i < trips.size(); ++i) {
    t->Sample("brake_breaker_trips_total",
              {{"cause", breaker::CauseName(static_cast<breaker::Cause>(i))}},
              trips[i]);
  }
}

void LimitSeries(const LimitHits& hits, PromText* t) {
  t->Family("brake_limit_hits_total",
            "Requests or connections refused or closed by a resource limit "
            "of braked, by the setting.",
            "counter");
  for (size_t i = 0; i < kLimitHitCount; ++i) {
    t->Sample("brake_limit_hits_total",
              {{"limit", LimitHitName(static_cast<LimitHit>(i))}},
              hits.by_limit[i]);
  }
}

// Per-user series for the busiest users only, so the number of series stays
// bounded by metrics_top_users however many users there are.
void UserSeries(const std::vector<SubjectActivity>& users, PromText* t) {
  struct Field {
    const char* name;
    const char* help;
    int64_t SubjectActivity::*value;
    bool usd;  // nano-usd shown as usd
  };
  static constexpr Field kFields[] = {
      {"brake_user_grants_total",
       "Granted acquires of the busiest users (metrics_top_users).",
       &SubjectActivity::grants, false},
      {"brake_user_denials_total",
       "Refused acquires of the busiest users (metrics_top_users).",
       &SubjectActivity::denials, false},
      {"brake_user_granted_tokens_total",
       "Tokens reserved by the grants of the busiest users.",
       &SubjectActivity::tokens, false},
      {"brake_user_granted_usd_total",
       "usd reserved by the grants of the busiest users.",
       &SubjectActivity::usd_nano, true},
  };
  for (const Field& f : kFields) {
    t->Family(f.name, f.help, "counter");
    for (const SubjectActivity& u : users) {
      if (f.usd) {
        t->Sample(f.name, {{"user", u.subject}}, NanoToUsd(u.*f.value));
      } else {
        t->Sample(f.name, {{"user", u.subject}}, u.*f.value);
      }
    }
  }
}

// Cluster mode's series (docs/CLUSTER.md), from cluster.status.
void ClusterSeries(const nlohmann::json& status, PromText* t) {
  if (!status.is_object()) return;
  auto num = [&status](const char* key) {
    auto it = status.find(key);
    return it != status.end() && it->is_number() ? it->get<int64_t>() : 0;
  };
  auto one = [t](const char* name, const char* help, const char* type,
                 int64_t value) {
    t->Family(name, help, type);
    t->Sample(name, {}, value);
  };
  one("brake_cluster_link_up", "1 while the link to Redis is up.", "gauge",
      status.value("link", "") == "up" ? 1 : 0);
  one("brake_cluster_redis_calls_total",
      "Slice calls to Redis answered (leases, renewals, give-backs).",
      "counter", num("share_calls"));
  one("brake_cluster_slice_refills_total",
      "Slice calls that were granted units.", "counter", num("refills"));
  one("brake_cluster_give_backs_total",
      "Slice calls that gave unused units back.", "counter",
      num("give_backs"));
  one("brake_cluster_failed_calls_total",
      "Slice calls with no answer or an error.", "counter",
      num("failed_calls"));
  one("brake_cluster_held_requests_total",
      "Acquires held until Redis answered (their slice was short).",
      "counter", num("held_requests"));
  t->Family("brake_cluster_seconds_without_redis_total",
            "Time without a usable link to Redis since start.", "counter");
  t->Sample("brake_cluster_seconds_without_redis_total", {},
            static_cast<double>(num("down_ms")) / 1000.0);
  one("brake_cluster_local_grants_total",
      "Grants from the local share while Redis was away (local).",
      "counter", num("local_grants"));
  one("brake_cluster_shares", "Shared limits this daemon holds a share of.",
      "gauge",
      status.contains("shares") && status["shares"].is_array()
          ? static_cast<int64_t>(status["shares"].size())
          : 0);
}

}  // namespace

std::string MetricsText(const MetricsSources& src) {
  const Counters& c = *src.counters;
  const ServerStats& s = *src.server;
  PromText t;
  auto one = [&t](const char* name, const char* help, const char* type,
                  int64_t value) {
    t.Family(name, help, type);
    t.Sample(name, {}, value);
  };
  one("brake_requests_total", "Request lines handled.", "counter", c.requests);
  one("brake_errors_total", "Requests answered with an error.", "counter",
      c.errors);
  t.Family("brake_acquires_total", "Acquire decisions by result and reason.",
           "counter");
  t.Sample("brake_acquires_total", {{"result", "granted"}}, c.acquires_granted);
  for (size_t i = 0; i < c.acquires_denied.size(); ++i) {
    t.Sample(
        "brake_acquires_total",
        {{"result", "denied"}, {"reason", ReasonName(static_cast<Reason>(i))}},
        c.acquires_denied[i]);
  }
  one("brake_fail_open_grants_total",
      "Acquires let through while storage failed (on_storage_error open).",
      "counter", c.fail_open_grants);
  one("brake_commits_total", "Leases committed.", "counter", c.commits);
  one("brake_cancels_total", "Leases cancelled.", "counter", c.cancels);
  one("brake_leases_open", "Leases granted and not yet settled.", "gauge",
      src.leases_open);
  one("brake_tasks", "Tasks in memory.", "gauge", src.tasks);
  one("brake_subjects", "Subjects (users, tasks, resources) in memory.",
      "gauge", src.subjects);
  one("brake_prefetched_decisions_total",
      "Acquires whose task was announced lines ahead (many subjects).",
      "counter", src.prefetched);
  one("brake_subject_loads_total",
      "Requests that waited for subjects to load from storage.", "counter",
      s.subject_loads);
  one("brake_subjects_evicted_total",
      "Idle subjects dropped from memory (still stored).", "counter",
      s.subjects_evicted);
  one("brake_connections", "Open client connections.", "gauge", s.connections);
  one("brake_connections_total", "Connections accepted.", "counter",
      s.connections_total);
  one("brake_storage_batches_total", "Storage transactions committed.",
      "counter", s.storage_batches);
  one("brake_storage_failures_total", "Storage transactions failed.", "counter",
      s.storage_failures);
  one("brake_replies_held_total",
      "Replies written only once a storage commit came (strict: every "
      "change; batched: while the disk lagged).",
      "counter", s.replies_held);
  t.Family("brake_storage_commit_seconds_total",
           "Time spent committing storage transactions.", "counter");
  t.Sample("brake_storage_commit_seconds_total", {},
           static_cast<double>(s.storage_commit_us_total) / 1e6);
  one("brake_waiters", "Acquires waiting (wait_ms > 0).", "gauge", src.waiters);
  one("brake_spend_tokens_total", "Tokens settled, all subjects.", "counter",
      src.spend.tokens);
  t.Family("brake_spend_usd_total", "usd settled, all subjects.", "counter");
  t.Sample("brake_spend_usd_total", {}, NanoToUsd(src.spend.usd_nano));
  t.Family("brake_breakers", "Breakers that are not closed, by state.",
           "gauge");
  t.Sample("brake_breakers", {{"state", "open"}}, src.breakers_open);
  t.Sample("brake_breakers", {{"state", "half_open"}}, src.breakers_half_open);
  one("brake_storage_ok", "1 while storage writes succeed.", "gauge",
      src.storage_ok ? 1 : 0);
  WaitSeries(c.waits, &t);
  TripSeries(src.breaker_trips, &t);
  LimitHits hits = s.limit_hits;
  hits.by_limit[static_cast<size_t>(LimitHit::kMaxOpenLeases)] =
      src.lease_cap_refusals;
  LimitSeries(hits, &t);
  UserSeries(src.top_users, &t);
  ClusterSeries(src.cluster, &t);
  return t.Take();
}

}  // namespace brake
