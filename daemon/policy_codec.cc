#include "daemon/policy_codec.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "common/json_plain.h"
#include "daemon/breaker_codec.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

constexpr int64_t kMaxCount = 1'000'000'000'000'000;  // 1e15 units
constexpr int64_t kMaxRate = 1'000'000'000;
constexpr int64_t kMaxMs = 10'000'000'000;  // ~115 days
constexpr double kMaxUsd = 1e9;

// Which fields each algorithm takes beyond name/resource/algorithm/shadow.
struct AlgorithmFields {
  Algorithm algorithm;
  std::set<std::string> fields;
};

const AlgorithmFields kFields[] = {
    {Algorithm::kTokenBucket, {"rate", "per_ms", "burst", "pay_later"}},
    {Algorithm::kWarmup, {"rate", "per_ms", "warmup_ms", "cold_factor"}},
    {Algorithm::kSlidingLog, {"limit", "window_ms"}},
    {Algorithm::kFixedWindow, {"limit", "window_ms"}},
    {Algorithm::kLeakyBucket, {"rate", "per_ms", "queue"}},
    {Algorithm::kQuota, {"limit", "period"}},
    {Algorithm::kConcurrency, {"limit"}},
};

const std::set<std::string> kCommonFields{"name", "resource", "algorithm",
                                          "shadow"};

}  // namespace

Result<LimitSpec> ParseLimit(const json& j, const std::string& field) {
  if (!j.is_object()) {
    return Status::BadRequest(field + ": must be an object");
  }
  LimitSpec spec;
  auto name = ReadString(j, "name", std::nullopt, field);
  if (!name.ok()) return name.status();
  if (Status s = ValidateName(*name, field + ".name"); !s.ok()) return s;
  if (name->size() > 64) {
    return Status::BadRequest(field + ".name: longer than 64 bytes");
  }
  spec.name = *name;
  auto resource = ReadString(j, "resource", std::nullopt, field);
  if (!resource.ok()) return resource.status();
  if (!ParseResource(*resource, &spec.resource)) {
    return Status::BadRequest(field +
                              ".resource: must be requests, tokens or usd");
  }
  auto algorithm = ReadString(j, "algorithm", std::nullopt, field);
  if (!algorithm.ok()) return algorithm.status();
  if (!ParseAlgorithm(*algorithm, &spec.algorithm)) {
    return Status::BadRequest(
        field +
        ".algorithm: must be token_bucket, warmup, sliding_log, "
        "fixed_window, leaky_bucket, quota or concurrency");
  }
  const std::set<std::string>* allowed = nullptr;
  for (const auto& f : kFields)
    if (f.algorithm == spec.algorithm) allowed = &f.fields;
  for (const auto& [key, value] : j.items()) {
    if (!kCommonFields.count(key) && !allowed->count(key)) {
      return Status::BadRequest(field + "." + key + ": not a field of " +
                                *algorithm);
    }
  }
  auto shadow = ReadBool(j, "shadow", false, field);
  if (!shadow.ok()) return shadow.status();
  spec.shadow = *shadow;

  const bool usd = spec.resource == Resource::kUsd;
  if (usd && spec.algorithm != Algorithm::kQuota &&
      spec.algorithm != Algorithm::kSlidingLog &&
      spec.algorithm != Algorithm::kFixedWindow) {
    return Status::BadRequest(field +
                              ".resource: usd limits must be quota, "
                              "sliding_log or fixed_window");
  }
  if (spec.algorithm == Algorithm::kConcurrency &&
      spec.resource != Resource::kRequests) {
    return Status::BadRequest(field +
                              ".resource: concurrency counts requests");
  }

  if (allowed->count("rate")) {
    auto rate = ReadInt(j, "rate", 1, kMaxRate, std::nullopt, field);
    if (!rate.ok()) return rate.status();
    spec.rate = *rate;
    auto per = ReadInt(j, "per_ms", 1, kMaxMs, 1000, field);
    if (!per.ok()) return per.status();
    spec.per_ms = *per;
  }
  if (allowed->count("burst")) {
    auto burst = ReadInt(j, "burst", 1, kMaxCount, spec.rate, field);
    if (!burst.ok()) return burst.status();
    spec.burst = *burst;
    auto pay_later = ReadBool(j, "pay_later", false, field);
    if (!pay_later.ok()) return pay_later.status();
    spec.pay_later = *pay_later;
  }
  if (allowed->count("warmup_ms")) {
    auto warmup = ReadInt(j, "warmup_ms", 1, kMaxMs, std::nullopt, field);
    if (!warmup.ok()) return warmup.status();
    spec.warmup_ms = *warmup;
    auto cold = ReadNumber(j, "cold_factor", 1.0, 1000.0, 3.0, field);
    if (!cold.ok()) return cold.status();
    spec.cold_factor = *cold;
  }
  if (allowed->count("limit")) {
    if (usd) {
      auto limit = ReadNumber(j, "limit", 0.0, kMaxUsd, std::nullopt, field);
      if (!limit.ok()) return limit.status();
      spec.limit = UsdToNano(*limit);
    } else {
      auto limit = ReadInt(j, "limit", 1, kMaxCount, std::nullopt, field);
      if (!limit.ok()) return limit.status();
      spec.limit = *limit;
    }
  }
  if (allowed->count("window_ms")) {
    auto window = ReadInt(j, "window_ms", 1, kMaxMs, std::nullopt, field);
    if (!window.ok()) return window.status();
    spec.window_ms = *window;
  }
  if (allowed->count("queue")) {
    auto queue = ReadInt(j, "queue", 0, 1'000'000, 0, field);
    if (!queue.ok()) return queue.status();
    spec.queue = *queue;
  }
  if (allowed->count("period")) {
    auto period = ReadString(j, "period", std::nullopt, field);
    if (!period.ok()) return period.status();
    if (!ParsePeriod(*period, &spec.period)) {
      return Status::BadRequest(
          field + ".period: must be hour, day, week, month or total");
    }
  }
  return spec;
}

json LimitToJson(const LimitSpec& spec) {
  json j = {{"name", spec.name},
            {"resource", ResourceName(spec.resource)},
            {"algorithm", AlgorithmName(spec.algorithm)}};
  const bool usd = spec.resource == Resource::kUsd;
  switch (spec.algorithm) {
    case Algorithm::kTokenBucket:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["burst"] = spec.burst;
      if (spec.pay_later) j["pay_later"] = true;
      break;
    case Algorithm::kWarmup:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["warmup_ms"] = spec.warmup_ms;
      j["cold_factor"] = spec.cold_factor;
      break;
    case Algorithm::kSlidingLog:
    case Algorithm::kFixedWindow:
      if (usd) {
        j["limit"] = NanoToUsd(spec.limit);
      } else {
        j["limit"] = spec.limit;
      }
      j["window_ms"] = spec.window_ms;
      break;
    case Algorithm::kLeakyBucket:
      j["rate"] = spec.rate;
      j["per_ms"] = spec.per_ms;
      j["queue"] = spec.queue;
      break;
    case Algorithm::kQuota:
      if (usd) {
        j["limit"] = NanoToUsd(spec.limit);
      } else {
        j["limit"] = spec.limit;
      }
      j["period"] = PeriodName(spec.period);
      break;
    case Algorithm::kConcurrency:
      j["limit"] = spec.limit;
      break;
  }
  if (spec.shadow) j["shadow"] = true;
  return j;
}

Result<Policy> ParsePolicy(const json& j, const std::string& field) {
  std::string prefix = field.empty() ? "" : field + ".";
  if (!j.is_object()) {
    return Status::BadRequest((field.empty() ? "policy" : field) +
                              ": must be an object");
  }
  // An unknown key is refused, not ignored: a misspelt "limits" in a config
  // file must not silently become a policy without limits.
  for (const auto& [key, value] : j.items()) {
    if (key != "limits" && key != "breaker") {
      return Status::BadRequest(prefix + key + ": not a field of a policy");
    }
  }
  Policy policy;
  json canonical = json::object();
  json limits = json::array();
  if (auto it = j.find("limits"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      return Status::BadRequest(prefix + "limits: must be an array");
    }
    if (it->size() > 64) {
      return Status::BadRequest(prefix + "limits: at most 64 limits");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < it->size(); ++i) {
      std::string f = prefix + "limits[" + std::to_string(i) + "]";
      auto spec = ParseLimit((*it)[i], f);
      if (!spec.ok()) return spec.status();
      if (!names.insert(spec->name).second) {
        return Status::BadRequest(f + ".name: duplicate limit name " +
                                  spec->name);
      }
      limits.push_back(LimitToJson(*spec));
      policy.limits.push_back(std::move(*spec));
    }
  }
  canonical["limits"] = std::move(limits);
  if (auto it = j.find("breaker"); it != j.end() && !it->is_null()) {
    auto spec = ParseBreaker(*it, prefix + "breaker");
    if (!spec.ok()) return spec.status();
    canonical["breaker"] = BreakerToJson(*spec);
    policy.breaker_json = canonical["breaker"].dump();
  }
  policy.json = canonical.dump();
  return policy;
}

Result<Policy> ParsePolicyText(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::BadRequest("policy: not valid JSON");
  return ParsePolicy(j, "policy");
}

namespace {

// Writes a lease's JSON into a buffer sized for the worst case (every
// string byte escaped as \u00XX), with a cursor: no capacity check, call or
// strlen per piece.
class LeaseWriter {
 public:
  // `buf` is reused across leases: grown to the worst case when short,
  // never shrunk or zero-filled again.
  LeaseWriter(const Lease& l, std::string* buf) : out_(*buf) {
    size_t strings = l.id.size() + l.user.size() + l.task.size() +
                     l.parent.size() + l.resource.size() + l.model.size() +
                     l.fingerprint.size();
    for (const std::string& s : l.scopes) strings += s.size() + 3;
    for (const LeaseCharge& c : l.charges) {
      strings += c.scope.size() + c.limit.size() + 40;
    }
    const size_t worst = 6 * strings + 512;  // 512: keys, punctuation, integers
    if (out_.size() < worst) out_.resize(worst);
    p_ = out_.data();
  }
  template <size_t N>
  void Literal(const char (&text)[N]) {
    std::memcpy(p_, text, N - 1);
    p_ += N - 1;
  }
  void Char(char c) { *p_++ = c; }
  void String(std::string_view v) {
    *p_++ = '"';
    if (IsPlainJsonText(v)) {  // the common case: copied whole
      std::memcpy(p_, v.data(), v.size());
      p_ += v.size();
      *p_++ = '"';
      return;
    }
    for (char ch : v) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != '"' && c != '\\') {
        *p_++ = ch;  // requests were parsed as UTF-8, so this is too
      } else if (c == '"' || c == '\\') {
        *p_++ = '\\';
        *p_++ = ch;
      } else {
        static const char kHex[] = "0123456789abcdef";
        std::memcpy(p_, "\\u00", 4);
        p_[4] = kHex[c >> 4];
        p_[5] = kHex[c & 15];
        p_ += 6;
      }
    }
    *p_++ = '"';
  }
  void Int(int64_t v) { p_ = std::to_chars(p_, p_ + 24, v).ptr; }
  // The lease written, in a string of its own size.
  std::string Take() const {
    return std::string(out_.data(), static_cast<size_t>(p_ - out_.data()));
  }

 private:
  std::string& out_;
  char* p_;
};

}  // namespace

// Written by hand: it runs for every granted acquire, on the loop thread
// (a nlohmann object per lease cost more than the whole decision).
std::string EncodeLease(const Lease& l) {
  thread_local std::string buffer;
  LeaseWriter w(l, &buffer);
  w.Literal("{\"id\":");
  w.String(l.id);
  w.Literal(",\"user\":");
  w.String(l.user);
  w.Literal(",\"task\":");
  w.String(l.task);
  w.Literal(",\"parent\":");
  w.String(l.parent);
  w.Literal(",\"resource\":");
  w.String(l.resource);
  w.Literal(",\"model\":");
  w.String(l.model);
  w.Literal(",\"fingerprint\":");
  w.String(l.fingerprint);
  w.Literal(",\"requests\":");
  w.Int(l.requests);
  w.Literal(",\"tokens\":");
  w.Int(l.tokens);
  w.Literal(",\"usd_nano\":");
  w.Int(l.usd_nano);
  w.Literal(",\"granted_at_us\":");
  w.Int(l.granted_at_us);
  w.Literal(",\"expires_at_us\":");
  w.Int(l.expires_at_us);
  w.Literal(",\"scopes\":[");
  for (size_t i = 0; i < l.scopes.size(); ++i) {
    if (i > 0) w.Char(',');
    w.String(l.scopes[i]);
  }
  w.Literal("],\"charges\":[");
  for (size_t i = 0; i < l.charges.size(); ++i) {
    const LeaseCharge& c = l.charges[i];
    if (i > 0) w.Char(',');
    w.Char('[');
    w.String(c.scope);
    w.Char(',');
    w.String(c.limit);
    w.Char(',');
    w.String(ResourceName(c.resource));
    w.Char(',');
    w.Int(c.amount);
    w.Char(']');
  }
  w.Literal("]}");
  return w.Take();
}

Result<Lease> DecodeLease(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [] { return Status::Unavailable("storage: malformed lease row"); };
  if (!j.is_object()) return bad();
  Lease l;
  // The stored form is ours; any mismatch means damage, not user error.
  // Integers only: a stored 1e19 must not reach get<int64_t>() (an
  // out-of-range float-to-integer conversion).
  auto integer = [](const json& v) -> int64_t {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() &&
         v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
      throw std::out_of_range("not an int64");
    }
    return v.get<int64_t>();
  };
  try {
    l.id = j.at("id").get<std::string>();
    l.user = j.at("user").get<std::string>();
    l.task = j.at("task").get<std::string>();
    l.parent = j.at("parent").get<std::string>();
    l.resource = j.at("resource").get<std::string>();
    l.model = j.at("model").get<std::string>();
    l.fingerprint = j.at("fingerprint").get<std::string>();
    l.requests = integer(j.at("requests"));
    l.tokens = integer(j.at("tokens"));
    l.usd_nano = integer(j.at("usd_nano"));
    l.granted_at_us = integer(j.at("granted_at_us"));
    l.expires_at_us = integer(j.at("expires_at_us"));
    l.scopes = j.at("scopes").get<std::vector<std::string>>();
    for (const json& c : j.at("charges")) {
      LeaseCharge charge;
      charge.scope = c.at(0).get<std::string>();
      charge.limit = c.at(1).get<std::string>();
      if (!ParseResource(c.at(2).get<std::string>(), &charge.resource)) {
        return bad();
      }
      charge.amount = integer(c.at(3));
      l.charges.push_back(std::move(charge));
    }
  } catch (const std::exception&) {  // json::exception or out_of_range
    return bad();
  }
  return l;
}

Status CheckPolicyScope(const std::string& scope, const Policy& policy,
                        const std::string& field) {
  if (policy.breaker_json.empty() || scope.rfind("task:", 0) == 0) {
    return Status::Ok();
  }
  json breaker = json::parse(policy.breaker_json, nullptr, false);
  if (breaker.is_object() && breaker.contains("loop")) {
    return Status::BadRequest(
        (field.empty() ? "" : field + ".") +
        "breaker.loop: only a task's breaker sees fingerprints; set it on "
        "task:* or task:NAME, not on " + scope);
  }
  return Status::Ok();
}

}  // namespace brake
