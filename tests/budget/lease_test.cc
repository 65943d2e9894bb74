// Lease's text fields share one string; each reads back exactly what was set.
#include "budget/lease.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace brake {
namespace {

TEST_CASE("lease: text fields read back what was set", "[lease]") {
  Lease l;
  for (int f = 0; f < Lease::kFields; ++f) {
    CHECK(l.Get(static_cast<Lease::Field>(f)).empty());
  }
  l.SetText({"id-1", "alice", "a-task-name-longer-than-fifteen", "", "openai",
             "gpt-4o", "9f2c"});
  CHECK(l.id() == "id-1");
  CHECK(l.user() == "alice");
  CHECK(l.task() == "a-task-name-longer-than-fifteen");
  CHECK(l.parent().empty());
  CHECK(l.resource() == "openai");
  CHECK(l.model() == "gpt-4o");
  CHECK(l.fingerprint() == "9f2c");

  SECTION("one field changes, the others stay") {
    l.Set(Lease::kParent, "p");
    l.Set(Lease::kUser, "bob");
    CHECK(l.user() == "bob");
    CHECK(l.parent() == "p");
    CHECK(l.task() == "a-task-name-longer-than-fifteen");
    CHECK(l.fingerprint() == "9f2c");
    CHECK(l.id() == "id-1");
  }
  SECTION("a field may be set from the lease's own text") {
    l.Set(Lease::kFingerprint, l.task());
    l.Set(Lease::kId, l.user());
    CHECK(l.fingerprint() == "a-task-name-longer-than-fifteen");
    CHECK(l.id() == "alice");
    CHECK(l.model() == "gpt-4o");
  }
  SECTION("a moved lease keeps its fields and its scopes") {
    l.OwnScopes({"global", "user:alice", "task:x"}, 2);
    Lease moved(std::move(l));
    CHECK(moved.user() == "alice");
    REQUIRE(moved.scopes.size() == 3);
    CHECK(*moved.scopes[2] == "task:x");
    CHECK(moved.reserved == 2);
  }
  SECTION("setting every field again forgets the old ones") {
    l.SetText({});
    for (int f = 0; f < Lease::kFields; ++f) {
      CHECK(l.Get(static_cast<Lease::Field>(f)).empty());
    }
  }
}

TEST_CASE("lease: keyed fields read from the keys of its scopes",
          "[lease]") {
  const std::string user = "user:alice";
  const std::string task = "task:a-task-named-at-length-0123456789";
  const std::string parent = "task:root";
  const std::string resource = "resource:open:ai";  // a ':' in the name
  Lease l;
  l.SetText({"", "", "", "", "", "gpt-4o", "9f2c"});
  l.scopes.push_back(&user);
  l.scopes.push_back(&task);
  l.scopes.push_back(&parent);
  l.scopes.push_back(&resource);
  l.KeyFields(0, 1, 2, 3);
  CHECK(l.user() == "alice");
  CHECK(l.task() == "a-task-named-at-length-0123456789");
  CHECK(l.parent() == "root");
  CHECK(l.resource() == "open:ai");
  CHECK(l.model() == "gpt-4o");
  CHECK(l.fingerprint() == "9f2c");
  CHECK(l.AllText() == "gpt-4o9f2c");  // nothing a scope names

  SECTION("a field in the text is read from there") {
    l.SetText({"", "", "", "p", "", "", ""});
    l.KeyFields(0, 1, Lease::kInText, Lease::kInText);
    CHECK(l.user() == "alice");
    CHECK(l.parent() == "p");
    CHECK(l.resource().empty());
  }
  SECTION("setting a field puts every field in the text") {
    l.Set(Lease::kModel, "m");
    CHECK(l.user() == "alice");
    CHECK(l.task() == "a-task-named-at-length-0123456789");
    CHECK(l.resource() == "open:ai");
    CHECK(l.AllText() == "alicea-task-named-at-length-0123456789rootopen:aim9f2c");
  }
  SECTION("owning new scopes keeps the fields the old ones named") {
    l.OwnScopes({"global", "user:bob", "task:other"}, 3);
    CHECK(l.user() == "alice");
    CHECK(l.task() == "a-task-named-at-length-0123456789");
    CHECK(l.resource() == "open:ai");
  }
  SECTION("a moved-from lease reads no scope it no longer has") {
    Lease moved(std::move(l));
    CHECK(moved.task() == "a-task-named-at-length-0123456789");
    CHECK(l.scopes.empty());  // NOLINT: the moved-from lease is read on purpose
    CHECK(l.user().empty());  // NOLINT
    CHECK(l.resource().empty());  // NOLINT
  }
  SECTION("setting the text again forgets the keys") {
    l.SetText({});
    CHECK(l.user().empty());
    CHECK(l.task().empty());
  }
}

TEST_CASE("lease: text past the inline bytes is in whole pool lines",
          "[lease]") {
  // A task named by a UUID: from malloc its text would start 16 bytes into
  // a line three times in four, so eight leases all starting a line say
  // LinePool made them (by chance: 1 in 65,536).
  std::vector<Lease> leases(8);
  for (Lease& l : leases) {
    l.SetText({"", "alice", "task-3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", "",
               "", "", ""});
    CHECK(reinterpret_cast<uintptr_t>(l.AllText().data()) % LinePool::kLine ==
          0);
  }
  SECTION("so is a charge's long limit name") {
    for (Lease& l : leases) {
      l.charges.resize(1);
      l.charges[0].limit.assign("tokens_per_minute_for_gpt4o");
      CHECK(reinterpret_cast<uintptr_t>(l.charges[0].limit.data()) %
                LinePool::kLine ==
            0);
    }
  }
  SECTION("longer text up to the line's end keeps the block") {
    Lease& l = leases[0];
    const char* block = l.AllText().data();
    l.SetText({"", "alice", "task-3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b",
               "parent", "openai", "gpt-4", ""});
    REQUIRE(l.AllText().size() == 63);
    CHECK(l.AllText().data() == block);
    CHECK(l.model() == "gpt-4");
  }
}

}  // namespace
}  // namespace brake
