// The drain's copy of an open lease (daemon/lease_snapshot.h): turned into
// the stored form on the storage thread, it is exactly what EncodeLease
// writes from the lease itself; a copy that does not read back is an
// error naming the lease, never a crash.
#include "daemon/lease_snapshot.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/lease_codec.h"
#include "tests/daemon/lease_samples.h"

namespace brake {
namespace {

using lease_samples::ChargesOf;
using lease_samples::ReservedOf;
using lease_samples::SampleLease;
using lease_samples::SetScopes;

// The stored form of one snapshot, or EncodeSnapshots' error.
Result<std::string> EncodeSnapshot(std::string_view snapshot) {
  LeasePuts in;
  in.Add("", snapshot);
  LeasePuts out;
  if (Status s = EncodeSnapshots(in, &out); !s.ok()) return s;
  return std::string(out[0].json);
}

std::string SnapshotOf(const Lease& l) {
  std::string out = "prefix";  // appended, not assigned
  AppendLeaseSnapshot(l, &out);
  REQUIRE(out.rfind("prefix", 0) == 0);
  return out.substr(6);
}

void CheckStoredFormOfSnapshot(const Lease& l) {
  auto stored = EncodeSnapshot(SnapshotOf(l));
  INFO(stored.status().ToString());
  REQUIRE(stored.ok());
  CHECK(*stored == EncodeLease(l));
}

TEST_CASE("lease snapshot: its stored form is the lease's", "[lease]") {
  CheckStoredFormOfSnapshot(Lease());
  CheckStoredFormOfSnapshot(SampleLease());
  // A charge on a scope the lease does not reserve.
  Lease odd = SampleLease();
  auto charges = ChargesOf(odd);
  charges.push_back({"task:elsewhere", "n", Resource::kTokens, -3});
  SetScopes(&odd, ReservedOf(odd), charges);
  odd.requests = INT64_MIN;
  odd.expires_at_us = INT64_MAX;
  CheckStoredFormOfSnapshot(odd);
  // Text that must be escaped.
  Lease escaped = SampleLease();
  escaped.SetText({"", "a\"b", std::string("c\0d", 3), "\x01", "\\", "", ""});
  CheckStoredFormOfSnapshot(escaped);
  // User, task, parent and resource read from its scopes' keys, as a
  // grant's are: the copy carries them, and they read back.
  Lease keyed = SampleLease();
  keyed.SetText({"abc-17", "", "", "", "", "gpt-4o", "9f2c"});
  keyed.KeyFields(1, 2, 3, 4);
  CheckStoredFormOfSnapshot(keyed);
  auto stored = EncodeSnapshot(SnapshotOf(keyed));
  REQUIRE(stored.ok());
  CHECK(*stored == EncodeLease(SampleLease()));
}

TEST_CASE("lease snapshot: rows keep their ids and freshness", "[lease]") {
  LeasePuts drained;
  drained.AddEncoded("L1", true, [](std::string* text) {
    AppendLeaseSnapshot(SampleLease(), text);
  });
  drained.AddEncoded("L2", false, [](std::string* text) {
    AppendLeaseSnapshot(Lease(), text);
  });
  LeasePuts stored;
  REQUIRE(EncodeSnapshots(drained, &stored).ok());
  REQUIRE(stored.size() == 2);
  CHECK(stored[0].id == "L1");
  CHECK(stored[0].fresh);
  CHECK(stored[0].json == EncodeLease(SampleLease()));
  CHECK(stored[1].id == "L2");
  CHECK_FALSE(stored[1].fresh);
  CHECK(stored[1].json == EncodeLease(Lease()));
}

TEST_CASE("lease snapshot: a damaged copy is an error, not a crash",
          "[lease]") {
  const std::string whole = SnapshotOf(SampleLease());
  // Every truncation, and every byte set to 0xff in turn (lengths and
  // counts become huge, codes invalid, text longer than what is there).
  std::vector<std::string> damaged;
  for (size_t n = 0; n < whole.size(); ++n) damaged.push_back(whole.substr(0, n));
  for (size_t i = 0; i < whole.size(); ++i) {
    std::string d = whole;
    d[i] = '\xff';
    damaged.push_back(d);
  }
  damaged.push_back(whole + "x");
  size_t refused = 0;
  for (const std::string& d : damaged) {
    auto stored = EncodeSnapshot(d);
    if (stored.ok()) continue;  // a byte of text or an amount: still whole
    ++refused;
    CHECK(stored.status().code() == ErrorCode::kUnavailable);
  }
  // Every truncation and the trailing byte at least.
  CHECK(refused >= whole.size() + 1);
  LeasePuts drained;
  drained.Add("L9", whole.substr(0, 10));
  LeasePuts stored;
  const Status s = EncodeSnapshots(drained, &stored);
  CHECK(s.code() == ErrorCode::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("lease L9"));
}

}  // namespace
}  // namespace brake
