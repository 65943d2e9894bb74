// HeldReplies: runs of replies gated by batches, released in order and
// never before their batch.
#include "daemon/held_replies.h"

#include <catch2/catch.hpp>
#include <string>

namespace brake {
namespace {

TEST_CASE("held replies: a reply is released only once its batch is",
          "[held_replies]") {
  HeldReplies held;
  held.Add(1, true, "a\n");
  held.Add(2, true, "b\n");
  held.Add(3, false, "c\n");
  CHECK(held.bytes() == 6);
  CHECK_FALSE(held.Releasable(0));
  std::string out;
  held.MoveReleased(0, &out);
  CHECK(out.empty());
  CHECK(held.Releasable(1));
  held.MoveReleased(1, &out);
  CHECK(out == "a\n");
  CHECK(held.bytes() == 4);
  // A later run is cut where it ends, not where it ended before.
  held.Add(4, true, "d\n");
  held.MoveReleased(2, &out);
  CHECK(out == "a\nb\n");
  held.MoveReleased(3, &out);
  CHECK(out == "a\nb\nc\n");
  CHECK_FALSE(held.empty());
  held.MoveReleased(4, &out);
  CHECK(out == "a\nb\nc\nd\n");
  CHECK(held.empty());
  CHECK(held.bytes() == 0);
}

TEST_CASE("held replies: releasing every run at once keeps their order",
          "[held_replies]") {
  HeldReplies held;
  std::string expected;
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    for (int i = 0; i < 3; ++i) {
      std::string line = std::to_string(seq) + "." + std::to_string(i) + "\n";
      held.Add(seq, i % 2 == 0, line);
      expected += line;
    }
  }
  std::string out;
  held.MoveReleased(50, &out);
  CHECK(out == expected);
  CHECK(held.empty());
  // Held again after all was handed over: the buffer is usable.
  held.Add(51, true, "x\n");
  std::string more = "earlier\n";
  held.MoveReleased(51, &more);
  CHECK(more == "earlier\nx\n");
}

TEST_CASE("held replies: a failed batch rewrites only the runs that must "
          "commit and releases them",
          "[held_replies]") {
  HeldReplies held;
  held.Add(1, true, "grant1\n");
  held.Add(1, false, "ping1\n");
  held.Add(2, true, "grant2\n");
  held.Add(3, true, "grant3\n");
  held.Fail(2, [](const std::string& lines) { return "[" + lines + "]"; });
  CHECK(held.bytes() == std::string("[grant1\n]ping1\n[grant2\n]grant3\n").size());
  // The failed runs wait for batch 0 now; the later one still waits for 3.
  std::string out;
  held.MoveReleased(0, &out);
  CHECK(out == "[grant1\n]ping1\n[grant2\n]");
  CHECK_FALSE(held.Releasable(2));
  held.MoveReleased(3, &out);
  CHECK(out == "[grant1\n]ping1\n[grant2\n]grant3\n");
}

TEST_CASE("held replies: clear drops every run", "[held_replies]") {
  HeldReplies held;
  held.Add(7, true, "a\n");
  held.Clear();
  CHECK(held.empty());
  CHECK(held.bytes() == 0);
  CHECK_FALSE(held.Releasable(100));
}

}  // namespace
}  // namespace brake
