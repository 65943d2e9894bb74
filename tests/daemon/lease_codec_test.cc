// The stored lease form: format 3 round trips exactly, reads back what
// format 1 (schema 3 and before) wrote, and damage of any kind is a
// storage error, never a crash or a half-read lease.
#include "daemon/lease_codec.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/daemon/lease_samples.h"

namespace brake {
namespace {

using nlohmann::json;
using lease_samples::ChargesOf;
using lease_samples::NamedCharge;
using lease_samples::ReservedOf;
using lease_samples::SampleLease;
using lease_samples::SetScopes;

void CheckSameLease(const Lease& a, const Lease& b) {
  CHECK(a.id() == b.id());
  CHECK(a.user() == b.user());
  CHECK(a.task() == b.task());
  CHECK(a.parent() == b.parent());
  CHECK(a.resource() == b.resource());
  CHECK(a.model() == b.model());
  CHECK(a.fingerprint() == b.fingerprint());
  CHECK(a.requests == b.requests);
  CHECK(a.tokens == b.tokens);
  CHECK(a.usd_nano == b.usd_nano);
  CHECK(a.granted_at_us == b.granted_at_us);
  CHECK(a.expires_at_us == b.expires_at_us);
  CHECK(ReservedOf(a) == ReservedOf(b));
  const auto ca = ChargesOf(a);
  const auto cb = ChargesOf(b);
  REQUIRE(ca.size() == cb.size());
  for (size_t i = 0; i < ca.size(); ++i) {
    CHECK(ca[i].scope == cb[i].scope);
    CHECK(ca[i].limit == cb[i].limit);
    CHECK(ca[i].resource == cb[i].resource);
    CHECK(ca[i].amount == cb[i].amount);
  }
}

Result<Lease> RoundTrip(const Lease& l) {
  return DecodeLease(l.id(), EncodeLease(l));
}

// What schema 3's braked wrote for `l`.
json FormatOne(const Lease& l) {
  json charges = json::array();
  for (const NamedCharge& c : ChargesOf(l)) {
    charges.push_back(json::array(
        {c.scope, c.limit, std::string(ResourceName(c.resource)), c.amount}));
  }
  return {{"id", l.id()},
          {"user", l.user()},
          {"task", l.task()},
          {"parent", l.parent()},
          {"resource", l.resource()},
          {"model", l.model()},
          {"fingerprint", l.fingerprint()},
          {"requests", l.requests},
          {"tokens", l.tokens},
          {"usd_nano", l.usd_nano},
          {"granted_at_us", l.granted_at_us},
          {"expires_at_us", l.expires_at_us},
          {"scopes", ReservedOf(l)},
          {"charges", charges}};
}

TEST_CASE("lease codec: leases round trip", "[codec][lease]") {
  Lease l = SampleLease();
  auto back = RoundTrip(l);
  REQUIRE(back.ok());
  CheckSameLease(l, *back);

  Lease empty;
  empty.Set(Lease::kId, "x");
  auto e = RoundTrip(empty);
  REQUIRE(e.ok());
  CheckSameLease(empty, *e);

  Lease extreme = SampleLease();
  extreme.tokens = INT64_MAX;
  extreme.expires_at_us = INT64_MAX;
  extreme.Set(Lease::kUser, "\xc3\xa9t\xc3\xa9");
  extreme.Set(Lease::kTask, "quote\" backslash\\ slash/ del\x7f");
  extreme.Set(Lease::kFingerprint,
              std::string("ctl\x01\x1f\n\t", 7) + "\xe2\x80\xa8");
  extreme.requests = INT64_MIN;
  auto scopes = ReservedOf(extreme);
  auto charges = ChargesOf(extreme);
  scopes.push_back("task:quote\" backslash\\");
  charges.push_back({"task:\"\\", "n\"", Resource::kUsd, -1});
  SetScopes(&extreme, scopes, charges);
  auto x = RoundTrip(extreme);
  REQUIRE(x.ok());
  CheckSameLease(extreme, *x);
}

TEST_CASE("lease codec: the compact form", "[codec][lease]") {
  const std::string text = EncodeLease(SampleLease());
  // The id is the row's, charges name their scope by index.
  // Its own scopes are codes: each is spelled by its text fields.
  CHECK(text ==
        R"([3,"alice","t-42","t-7","openai","gpt-4o","9f2c",1,1200,12000000,)"
        R"(1700000000000000,1700000600000000,[0,1,2,3,4],)"
        R"([[1,"daily",2,12000000],[2,"inflight",0,1],[4,"tpm",1,1200]]])");
  CHECK(text.size() * 2 < FormatOne(SampleLease()).dump().size() + 120);
  // A charge on a scope the lease does not list keeps its name.
  Lease odd = SampleLease();
  auto charges = ChargesOf(odd);
  charges.push_back({"task:elsewhere", "n", Resource::kTokens, 3});
  SetScopes(&odd, ReservedOf(odd), charges);
  auto back = RoundTrip(odd);
  REQUIRE(back.ok());
  CheckSameLease(odd, *back);
  CHECK(EncodeLease(odd).find(R"(["task:elsewhere","n",1,3])") !=
        std::string::npos);
}

TEST_CASE("lease codec: a scope its fields do not spell is written whole",
          "[codec][lease]") {
  Lease l = SampleLease();
  // Another user's scope, a name that only starts like the task's, and
  // "task:" with no parent.
  l.SetText({"", "alice", "t-42", "", "openai", "", ""});
  SetScopes(&l, {"global", "user:bob", "task:t-4", "task:", "resource:openai"},
            {{"resource:openai", "tpm", Resource::kTokens, 1}});
  const std::string text = EncodeLease(l);
  CHECK(text.find(R"([0,"user:bob","task:t-4","task:",4])") !=
        std::string::npos);
  auto back = RoundTrip(l);
  REQUIRE(back.ok());
  CheckSameLease(l, *back);
}

TEST_CASE("lease codec: rows of schemas 4 to 6 still read", "[codec][lease]") {
  // Format 2, as those schemas' braked wrote it: every scope a string.
  auto two = DecodeLease(
      "abc-17",
      R"([2,"alice","t-42","t-7","openai","gpt-4o","9f2c",1,1200,12000000,)"
      R"(1700000000000000,1700000600000000,["global","user:alice","task:t-42",)"
      R"("task:t-7","resource:openai"],[[1,"daily",2,12000000],)"
      R"([2,"inflight",0,1],[4,"tpm",1,1200]]])");
  REQUIRE(two.ok());
  CheckSameLease(SampleLease(), *two);
}

TEST_CASE("lease codec: rows of schema 3 still read", "[codec][lease]") {
  Lease l = SampleLease();
  // Format 1 carries its own id; the row's is not needed.
  auto back = DecodeLease("", FormatOne(l).dump());
  REQUIRE(back.ok());
  CheckSameLease(l, *back);
  // Written again, it takes the compact form and reads back the same.
  auto again = RoundTrip(*back);
  REQUIRE(again.ok());
  CheckSameLease(l, *again);
}

TEST_CASE("lease codec: a lease of escapes only still fits its buffer",
          "[codec][lease]") {
  // Every byte of every string is a control character (6 bytes escaped)
  // and every integer has its longest form: the writer's worst case.
  const std::string ctl(300, '\x01');
  Lease l;
  l.SetText({ctl, ctl, ctl, ctl, ctl, ctl, ctl});
  l.requests = l.tokens = l.usd_nano = INT64_MIN;
  l.granted_at_us = l.expires_at_us = INT64_MIN;
  std::vector<std::string> scopes;
  std::vector<NamedCharge> charges;
  for (int i = 0; i < 40; ++i) {
    scopes.push_back(ctl + std::to_string(i));
    charges.push_back({ctl, ctl, Resource::kTokens, INT64_MIN});
    charges.push_back({"", "", Resource::kUsd, INT64_MIN});
    charges.push_back({std::string(300, '"'), ctl, Resource::kUsd,
                       INT64_MIN});
  }
  scopes.push_back("");
  SetScopes(&l, scopes, charges);
  const std::string text = EncodeLease(l);
  CHECK(json::accept(text));
  auto back = DecodeLease(l.id(), text);
  REQUIRE(back.ok());
  CheckSameLease(l, *back);
}

TEST_CASE("lease codec: malformed lease rows", "[codec][lease]") {
  const json one = FormatOne(SampleLease());
  const json two = json::parse(EncodeLease(SampleLease()));
  auto with = [](json j, const std::string& key, const json& value) {
    j[key] = value;
    return j.dump();
  };
  auto without = [](json j, const std::string& key) {
    j.erase(key);
    return j.dump();
  };
  auto at = [&](size_t i, const json& value) {
    json j = two;
    j[i] = value;
    return j.dump();
  };
  std::vector<std::string> rows = {
      "",
      "{",
      "[]",
      "null",
      "{}",
      "7",
      "\"lease\"",
      // Format 1.
      without(one, "id"),
      without(one, "charges"),
      without(one, "scopes"),
      without(one, "expires_at_us"),
      with(one, "tokens", "12"),
      with(one, "user", 5),
      with(one, "scopes", "global"),
      with(one, "charges", json::array({"x"})),
      with(one, "charges", json::array({json::array({"s", "n"})})),
      with(one, "charges", json::array({json::array({"s", "n", "bytes", 1})})),
      with(one, "charges",
           json::array({json::array({"s", "n", "tokens", "1"})})),
      with(one, "charges", 7),
      // Formats 2 and 3.
      at(0, 1),
      at(0, 4),
      at(0, "3"),
      at(1, 5),
      at(8, "12"),
      at(8, 1e19),
      at(8, 18446744073709551615ull),
      at(11, 1.5),
      at(12, "global"),
      at(12, json::array({5})),
      at(12, json::array({-1})),
      at(12, json::array({1.5})),
      at(12, json::array({json::array({0})})),
      // A code in format 2, and one naming an empty field (no parent).
      [&] { json j = two; j[0] = 2; j[12] = json::array({1}); return j.dump(); }(),
      [&] { json j = two; j[3] = ""; j[12] = json::array({3}); return j.dump(); }(),
      at(13, 7),
      at(13, json::array({"x"})),
      at(13, json::array({json::array({0, "n", 1})})),
      at(13, json::array({json::array({0, "n", 1, 2, 3})})),
      at(13, json::array({json::array({5, "n", 1, 2})})),
      at(13, json::array({json::array({-1, "n", 1, 2})})),
      at(13, json::array({json::array({0, "n", 3, 2})})),
      at(13, json::array({json::array({0, "n", "tokens", 2})})),
      at(13, json::array({json::array({0, 4, 1, 2})})),
      at(13, json::array({json::array({0.5, "n", 1, 2})})),
      [&] { json j = two; j.push_back(1); return j.dump(); }(),
      [&] { json j = two; j.erase(13); return j.dump(); }(),
  };
  for (const std::string& row : rows) {
    CAPTURE(row);
    auto l = DecodeLease("id-1", row);
    REQUIRE_FALSE(l.ok());
    CHECK(l.status().code() == ErrorCode::kUnavailable);
    CHECK(l.status().message().rfind("storage:", 0) == 0);
  }
}

}  // namespace
}  // namespace brake
