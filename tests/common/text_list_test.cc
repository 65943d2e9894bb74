#include "common/text_list.h"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace brake {
namespace {

std::vector<std::string> All(const TextList& list) {
  std::vector<std::string> out;
  for (std::string_view t : list) out.emplace_back(t);
  return out;
}

TEST_CASE("text list: texts read back in order, empty ones too",
          "[text_list]") {
  TextList list;
  CHECK(list.empty());
  std::vector<std::string> want;
  for (const char* t : {"0123456789ab-100", "", "x", "", "a-much-longer-id-7"}) {
    list.push_back(t);
    want.emplace_back(t);
    REQUIRE(list.size() == want.size());
    CHECK(list[list.size() - 1] == want.back());
  }
  CHECK(All(list) == want);
  // A pushed text is copied: the source may go away.
  {
    std::string gone = "gone-but-kept";
    list.push_back(gone);
  }
  CHECK(list[5] == "gone-but-kept");
}

TEST_CASE("text list: Append keeps both sides' texts in order",
          "[text_list]") {
  TextList a{"a1", "a2"};
  TextList b{"b1", "", "b3"};
  a.Append(std::move(b));
  CHECK(b.empty());  // NOLINT: Append leaves its source empty
  CHECK(All(a) == std::vector<std::string>{"a1", "a2", "b1", "", "b3"});
  CHECK(a == TextList{"a1", "a2", "b1", "", "b3"});
  CHECK_FALSE(a == TextList{"a1", "a2b1", "", "b3"});  // same bytes, cut apart

  TextList empty;
  empty.Append(std::move(a));  // into nothing: the texts move whole
  CHECK(All(empty) == std::vector<std::string>{"a1", "a2", "b1", "", "b3"});
}

TEST_CASE("text list: Append into an empty list trades rooms",
          "[text_list]") {
  // A recycled batch's list (empty, with room) takes the texts, and the
  // source gets its room back: neither side has to grow again.
  TextList roomy;
  for (int i = 0; i < 100; ++i) roomy.push_back("a-text-past-a-short-string");
  const size_t room = roomy.capacity_bytes();
  roomy.clear();
  TextList full{"x", "yy"};
  const size_t full_room = full.capacity_bytes();
  roomy.Append(std::move(full));
  CHECK(All(roomy) == std::vector<std::string>{"x", "yy"});
  CHECK(roomy.capacity_bytes() == full_room);
  CHECK(full.empty());  // NOLINT: Append leaves its source empty
  CHECK(full.capacity_bytes() == room);
  // Appending to a list that has texts leaves the source its own room.
  TextList more;
  for (int i = 0; i < 100; ++i) more.push_back("another-text-past-a-short-one");
  const size_t more_room = more.capacity_bytes();
  roomy.Append(std::move(more));
  CHECK(roomy.size() == 102);
  CHECK(more.empty());  // NOLINT
  CHECK(more.capacity_bytes() == more_room);
}

}  // namespace
}  // namespace brake
