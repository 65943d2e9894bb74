#include "budget/limit_spec.h"

#include "common/name_table.h"

#include <array>
#include <utility>

namespace brake {
namespace {

constexpr std::array<std::pair<Algorithm, std::string_view>, 7> kAlgorithms{{
    {Algorithm::kTokenBucket, "token_bucket"},
    {Algorithm::kWarmup, "warmup"},
    {Algorithm::kSlidingLog, "sliding_log"},
    {Algorithm::kFixedWindow, "fixed_window"},
    {Algorithm::kLeakyBucket, "leaky_bucket"},
    {Algorithm::kQuota, "quota"},
    {Algorithm::kConcurrency, "concurrency"},
}};
constexpr std::array<std::pair<Resource, std::string_view>, 3> kResources{{
    {Resource::kRequests, "requests"},
    {Resource::kTokens, "tokens"},
    {Resource::kUsd, "usd"},
}};
constexpr std::array<std::pair<Period, std::string_view>, 5> kPeriods{{
    {Period::kHour, "hour"},
    {Period::kDay, "day"},
    {Period::kWeek, "week"},
    {Period::kMonth, "month"},
    {Period::kTotal, "total"},
}};

}  // namespace

std::string_view AlgorithmName(Algorithm a) { return NameOf(kAlgorithms, a, "?"); }
std::string_view ResourceName(Resource r) { return NameOf(kResources, r, "?"); }
std::string_view PeriodName(Period p) { return NameOf(kPeriods, p, "?"); }
bool ParseAlgorithm(std::string_view n, Algorithm* o) {
  return LookupName(kAlgorithms, n, o);
}
bool ParseResource(std::string_view n, Resource* o) {
  return LookupName(kResources, n, o);
}
bool ParsePeriod(std::string_view n, Period* o) {
  return LookupName(kPeriods, n, o);
}

}  // namespace brake
