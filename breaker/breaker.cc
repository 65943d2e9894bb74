#include "breaker/breaker.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <utility>

#include "common/sat_math.h"

namespace brake::breaker {
namespace {

constexpr int64_t kStateVersion = 1;
constexpr int64_t kPartsPerUnit = 1000000;  // ratios compare in ppm

// The ratio in parts per million, so that "exactly at the threshold" is
// decided in integers: 3 of 10 against 0.3 must not trip on a rounding error.
int64_t RatioPpm(double ratio) {
  if (!(ratio > 0.0)) return 0;
  if (ratio >= 1.0) return kPartsPerUnit;
  return std::llround(ratio * static_cast<double>(kPartsPerUnit));
}

// Sentinel's rule: at least min_calls, and hits / calls strictly > ratio.
bool RatioTrips(RollingCounter::Sums sums, int64_t min_calls, double ratio) {
  if (sums.total <= 0 || sums.total < min_calls) return false;
  return static_cast<__int128>(sums.hits) * kPartsPerUnit >
         static_cast<__int128>(RatioPpm(ratio)) * sums.total;
}

std::string Num(int64_t v) { return std::to_string(v); }

std::string Ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", r);
  return buf;
}

std::string Ms(int64_t us) { return Num(us / sat::kUsPerMs) + " ms"; }

// The state list layout (kStateVersion 1):
//   version, state, cause, open_until_us, consecutive_opens,
//   probes_in_flight, probes_ok,
//   slow window, errors window, spend window (RollingCounter::AppendState),
//   fingerprints (LoopDetector::AppendState).
constexpr size_t kHeaderSize = 7;

}  // namespace

Breaker::Breaker(BreakerSpec spec) { Reconfigure(std::move(spec)); }

void Breaker::Reconfigure(BreakerSpec spec) {
  spec_ = std::move(spec);
  slow_.SetWindow(spec_.slow ? spec_.slow->window_ms : 0);
  errors_.SetWindow(spec_.errors ? spec_.errors->window_ms : 0);
  spend_.SetWindow(spec_.spend_velocity ? spec_.spend_velocity->window_ms : 0);
  if (!spec_.loop) loop_.Clear();
}

int64_t Breaker::ProbeSlots() const {
  return std::max<int64_t>(1, spec_.half_open_probes);
}

void Breaker::Emit(BreakerState from, std::string figures, int64_t now_us) {
  if (transitions_.size() >= kMaxPendingTransitions) {
    transitions_.erase(transitions_.begin());
  }
  transitions_.push_back({from, state_, cause_, std::move(figures), now_us});
}

std::vector<Transition> Breaker::TakeTransitions() {
  return std::exchange(transitions_, {});
}

void Breaker::ClearWindows() {
  slow_.Clear();
  errors_.Clear();
  spend_.Clear();
  loop_.Clear();
}

void Breaker::Advance(int64_t now_us) {
  if (state_ == BreakerState::kOpen && now_us >= open_until_us_) {
    state_ = BreakerState::kHalfOpen;
    probes_in_flight_ = 0;
    probes_ok_ = 0;
    Emit(BreakerState::kOpen,
         "open time over; up to " + Num(ProbeSlots()) + " probes", now_us);
  }
  // After a reconfigure or restore to fewer probes, the probes already ok
  // may be enough; without this the breaker would deny every acquire and
  // wait for an outcome that no admitted probe can bring.
  if (state_ == BreakerState::kHalfOpen && probes_ok_ >= ProbeSlots()) {
    Close(Num(probes_ok_) + " of " + Num(ProbeSlots()) + " probes ok", now_us);
  }
}

int64_t Breaker::NextOpenUs() const {
  // Re-opens from half-open back off; an open from closed does not.
  int64_t n = state_ == BreakerState::kHalfOpen ? consecutive_opens_ : 0;
  double ms = static_cast<double>(std::max<int64_t>(spec_.open_ms, 0));
  if (n > 0 && spec_.open_backoff > 0.0) {
    ms *= std::pow(spec_.open_backoff, static_cast<double>(n));
  }
  if (spec_.max_open_ms > 0) {
    ms = std::min(ms, static_cast<double>(spec_.max_open_ms));
  }
  // Compared as doubles before converting: a huge or NaN product saturates.
  constexpr double kMaxMs = static_cast<double>(sat::kMax / sat::kUsPerMs);
  if (!(ms < kMaxMs)) return sat::kMax;
  return sat::MsToUs(static_cast<int64_t>(ms));
}

void Breaker::Open(Cause cause, int64_t duration_us, std::string figures,
                   int64_t now_us) {
  BreakerState from = state_;
  int64_t until = sat::SatAdd(now_us, std::max<int64_t>(duration_us, 0));
  if (state_ == BreakerState::kOpen) {
    if (until <= open_until_us_) return;  // never shortens an open time
  } else {
    consecutive_opens_ =
        state_ == BreakerState::kClosed ? 1 : sat::SatAdd(consecutive_opens_, 1);
    probes_in_flight_ = 0;
    probes_ok_ = 0;
    state_ = BreakerState::kOpen;
  }
  cause_ = cause;
  open_until_us_ = until;
  Emit(from, std::move(figures) + "; open for " + Ms(sat::SatSub(until, now_us)),
       now_us);
}

void Breaker::Close(std::string figures, int64_t now_us) {
  BreakerState from = state_;
  state_ = BreakerState::kClosed;
  cause_ = Cause::kNone;
  consecutive_opens_ = 0;
  probes_in_flight_ = 0;
  probes_ok_ = 0;
  ClearWindows();
  Emit(from, std::move(figures), now_us);
}

Admission Breaker::Check(int64_t now_us) {
  Advance(now_us);
  switch (state_) {
    case BreakerState::kClosed:
      return {};
    case BreakerState::kOpen:
      return {false, false, cause_, sat::Until(open_until_us_, now_us)};
    case BreakerState::kHalfOpen:
      if (sat::SatAdd(probes_in_flight_, probes_ok_) < ProbeSlots()) {
        return {true, true, Cause::kNone, 0};
      }
      return {false, false, cause_, kNever};
  }
  return {};
}

void Breaker::OnAdmitted(bool probe, int64_t now_us) {
  Advance(now_us);
  if (probe && state_ == BreakerState::kHalfOpen) {
    probes_in_flight_ = sat::SatAdd(probes_in_flight_, 1);
  }
}

void Breaker::ReleaseProbe(int64_t now_us) {
  Advance(now_us);
  if (state_ == BreakerState::kHalfOpen && probes_in_flight_ > 0) {
    --probes_in_flight_;
  }
}

bool Breaker::OnFingerprint(uint64_t fingerprint_hash, int64_t now_us) {
  Advance(now_us);
  if (!spec_.loop) return false;
  const LoopRule& rule = *spec_.loop;
  int64_t seen = loop_.Record(fingerprint_hash, now_us, rule.repeats,
                              sat::MsToUs(rule.window_ms));
  if (seen < std::max<int64_t>(rule.repeats, 1) || !RulesActive()) {
    return false;
  }
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, fingerprint_hash);
  Open(Cause::kLoop, NextOpenUs(),
       "fingerprint " + std::string(hash) + " seen " + Num(seen) +
           " times within " + Num(rule.window_ms) + " ms",
       now_us);
  return true;
}

void Breaker::OnOutcome(int64_t latency_ms, Outcome outcome, bool probe,
                        int64_t now_us) {
  Advance(now_us);
  const bool timed = spec_.slow && latency_ms >= 0;
  const bool slow = timed && latency_ms > spec_.slow->max_rt_ms;
  const bool failed =
      outcome == Outcome::kError || outcome == Outcome::kTimeout;

  if (probe && state_ == BreakerState::kHalfOpen && probes_in_flight_ > 0) {
    --probes_in_flight_;
    if (failed || outcome == Outcome::kThrottled || slow) {
      std::string why =
          slow && !failed ? "probe took " + Num(latency_ms) + " ms > " +
                                Num(spec_.slow->max_rt_ms) + " ms"
                          : "probe ended " + std::string(OutcomeName(outcome));
      Cause cause = slow && !failed                  ? Cause::kSlowCalls
                    : outcome == Outcome::kThrottled ? Cause::kThrottled
                                                     : Cause::kErrors;
      Open(cause, NextOpenUs(), why + "; re-open " + Num(consecutive_opens_),
           now_us);
      return;
    }
    probes_ok_ = sat::SatAdd(probes_ok_, 1);
    if (probes_ok_ >= ProbeSlots()) {
      Close(Num(probes_ok_) + " of " + Num(ProbeSlots()) + " probes ok",
            now_us);
    }
    return;
  }
  // Outcomes of calls admitted before a trip say nothing about recovery.
  if (state_ != BreakerState::kClosed) return;

  if (timed) slow_.Add(now_us, 1, slow ? 1 : 0);
  if (spec_.errors) errors_.Add(now_us, 1, failed ? 1 : 0);
  if (spec_.slow) {
    RollingCounter::Sums s = slow_.Sum(now_us);
    if (RatioTrips(s, spec_.slow->min_calls, spec_.slow->ratio)) {
      Open(Cause::kSlowCalls, NextOpenUs(),
           Num(s.hits) + " of " + Num(s.total) + " calls slower than " +
               Num(spec_.slow->max_rt_ms) + " ms within " +
               Num(spec_.slow->window_ms) + " ms (ratio > " +
               Ratio(spec_.slow->ratio) + ")",
           now_us);
      return;
    }
  }
  if (spec_.errors) {
    RollingCounter::Sums s = errors_.Sum(now_us);
    if (RatioTrips(s, spec_.errors->min_calls, spec_.errors->ratio)) {
      Open(Cause::kErrors, NextOpenUs(),
           Num(s.hits) + " of " + Num(s.total) + " calls failed within " +
               Num(spec_.errors->window_ms) + " ms (ratio > " +
               Ratio(spec_.errors->ratio) + ")",
           now_us);
    }
  }
}

void Breaker::OnThrottled(int64_t retry_after_ms, int64_t now_us) {
  Advance(now_us);
  int64_t duration_us = retry_after_ms > 0 ? sat::MsToUs(retry_after_ms)
                                           : sat::MsToUs(spec_.open_ms);
  std::string figures =
      retry_after_ms > 0
          ? "downstream throttled, retry after " + Num(retry_after_ms) + " ms"
          : "downstream throttled without a retry time";
  Open(Cause::kThrottled, duration_us, std::move(figures), now_us);
}

void Breaker::OnSpend(int64_t tokens, int64_t now_us) {
  Advance(now_us);
  if (tokens <= 0 || !spec_.spend_velocity) return;
  spend_.Add(now_us, tokens, 0);
  if (!RulesActive()) return;
  const SpendVelocityRule& rule = *spec_.spend_velocity;
  int64_t sum = spend_.Sum(now_us).total;
  if (sum <= rule.tokens) return;
  Open(Cause::kSpendVelocity, NextOpenUs(),
       Num(sum) + " tokens settled within " + Num(rule.window_ms) +
           " ms (limit " + Num(rule.tokens) + ")",
       now_us);
}

void Breaker::OpenUntil(Cause cause, int64_t until_us, std::string figures,
                        int64_t now_us) {
  Advance(now_us);
  if (until_us <= now_us) return;
  Open(cause, sat::SatSub(until_us, now_us), std::move(figures), now_us);
}

void Breaker::Trip(int64_t open_ms, int64_t now_us) {
  Advance(now_us);
  if (open_ms <= 0) open_ms = spec_.open_ms;
  BreakerState from = state_;
  if (state_ != BreakerState::kOpen) {
    consecutive_opens_ =
        state_ == BreakerState::kClosed ? 1 : sat::SatAdd(consecutive_opens_, 1);
    probes_in_flight_ = 0;
    probes_ok_ = 0;
    state_ = BreakerState::kOpen;
  }
  cause_ = Cause::kManual;
  // An admin's open time is taken as given, even if shorter.
  open_until_us_ = sat::SatAdd(now_us, sat::MsToUs(std::max<int64_t>(open_ms, 0)));
  Emit(from, "tripped by admin; open for " + Num(open_ms) + " ms", now_us);
}

void Breaker::Reset(int64_t now_us) {
  open_until_us_ = 0;
  if (state_ == BreakerState::kClosed) {
    // Not a transition, but the same fresh start.
    consecutive_opens_ = 0;
    ClearWindows();
    return;
  }
  Close("reset by admin", now_us);
}

bool Breaker::IsFresh(int64_t now_us) const {
  if (state_ != BreakerState::kClosed || consecutive_opens_ != 0 ||
      probes_in_flight_ != 0 || probes_ok_ != 0 || !transitions_.empty()) {
    return false;
  }
  const int64_t loop_window_us =
      spec_.loop ? sat::MsToUs(spec_.loop->window_ms) : 0;
  return slow_.IdleAt(now_us) && errors_.IdleAt(now_us) &&
         spend_.IdleAt(now_us) && loop_.IdleAt(now_us, loop_window_us);
}

Snapshot Breaker::View(int64_t now_us) const {
  Snapshot s;
  s.state = state_;
  s.cause = cause_;
  s.consecutive_opens = consecutive_opens_;
  s.open_until_us = open_until_us_;
  s.probes_in_flight = probes_in_flight_;
  s.probes_ok = probes_ok_;
  if (state_ == BreakerState::kOpen) {
    if (now_us >= open_until_us_) {
      s.state = BreakerState::kHalfOpen;
      s.probes_in_flight = 0;
      s.probes_ok = 0;
    } else {
      s.retry_in_us = sat::Until(open_until_us_, now_us);
    }
  } else if (state_ == BreakerState::kHalfOpen && probes_ok_ >= ProbeSlots()) {
    s = Snapshot{};  // what Advance will make of it
  }
  return s;
}

std::vector<int64_t> Breaker::SaveState() const {
  std::vector<int64_t> out = {kStateVersion,
                              static_cast<int64_t>(state_),
                              static_cast<int64_t>(cause_),
                              open_until_us_,
                              consecutive_opens_,
                              probes_in_flight_,
                              probes_ok_};
  slow_.AppendState(&out);
  errors_.AppendState(&out);
  spend_.AppendState(&out);
  loop_.AppendState(&out);
  return out;
}

bool Breaker::RestoreState(const std::vector<int64_t>& in) {
  if (in.size() < kHeaderSize || in[0] != kStateVersion) return false;
  int64_t state = in[1], cause = in[2];
  if (state < 0 || state > static_cast<int64_t>(BreakerState::kHalfOpen) ||
      cause < 0 || cause > static_cast<int64_t>(Cause::kManual)) {
    return false;
  }
  // Closed exactly when there is no cause.
  if ((state == static_cast<int64_t>(BreakerState::kClosed)) !=
      (cause == static_cast<int64_t>(Cause::kNone))) {
    return false;
  }
  if (in[4] < 0 || in[5] < 0 || in[6] < 0) return false;
  // Parsed into copies, so that a malformed tail changes nothing.
  RollingCounter slow = slow_, errors = errors_, spend = spend_;
  LoopDetector loop;
  size_t pos = kHeaderSize;
  if (!slow.ParseState(in, &pos) || !errors.ParseState(in, &pos) ||
      !spend.ParseState(in, &pos) || !loop.ParseState(in, &pos) ||
      pos != in.size()) {
    return false;
  }
  state_ = static_cast<BreakerState>(state);
  cause_ = static_cast<Cause>(cause);
  open_until_us_ = in[3];
  consecutive_opens_ = in[4];
  probes_in_flight_ = 0;  // restored as released: see RestoreState's contract
  probes_ok_ = in[6];
  slow_ = std::move(slow);
  errors_ = std::move(errors);
  spend_ = std::move(spend);
  loop_ = spec_.loop ? std::move(loop) : LoopDetector();
  return true;
}

}  // namespace brake::breaker
