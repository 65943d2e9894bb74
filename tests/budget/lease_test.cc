// Lease's text fields share one string; each reads back exactly what was set.
#include "budget/lease.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>

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

}  // namespace
}  // namespace brake
