// `brakectl top`'s busiest users and tasks: rows from the `top` op, rates
// from two frames, the section in a frame and in --json, and a daemon that
// has no `top` op or refuses it.
#include "ctl/top_subjects.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/ctl/top_fakes.h"

namespace brake::ctl {
namespace {

using nlohmann::json;

std::string TopReply(const std::string& by, const std::vector<json>& rows) {
  return json{{"ok", true}, {"by", by}, {"rows", json(rows)}}.dump();
}

json Row(const std::string& subject, int grants, int denials, double usd = 0) {
  return {{"subject", subject}, {"grants", grants},
          {"denials", denials}, {"tokens", grants * 100},
          {"usd", usd},         {"uncounted_max", 0},
          {"waiters", 0}};
}

TEST_CASE("top subjects: rows parsed from a top reply", "[ctl][top]") {
  auto rows = ParseSubjects(json::parse(
      TopReply("user", {Row("alice", 3, 1, 0.25), Row("bob", 1, 0)})));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].subject == "alice");
  CHECK((*rows)[0].grants == 3);
  CHECK((*rows)[0].denials == 1);
  CHECK((*rows)[0].tokens == 300);
  CHECK((*rows)[0].usd == 0.25);
  CHECK_FALSE(ParseSubjects(json{{"ok", true}}).ok());
  CHECK_FALSE(ParseSubjects(json{{"rows", {{{"grants", 1}}}}}).ok());
}

TEST_CASE("top subjects: rates from the same subject in the previous frame",
          "[ctl][top]") {
  std::vector<SubjectRow> before = {{"alice", 10, 2, 0, 0},
                                    {"bob", 5, 0, 0, 0}};
  std::vector<SubjectRow> now = {
      {"alice", 30, 6, 0, 0}, {"carol", 9, 0, 0, 0}, {"bob", 1, 0, 0, 0}};
  auto rated = RateSubjects(&before, now, 2000);
  REQUIRE(rated.size() == 3);
  CHECK(rated[0].grants_per_s == 10.0);  // +20 in 2 s
  CHECK(rated[0].denials_per_s == 2.0);
  CHECK_FALSE(rated[1].grants_per_s);   // not listed before: no rate yet
  CHECK(rated[2].grants_per_s == 0.5);  // went down: braked restarted
  auto first = RateSubjects(nullptr, now, 0);
  CHECK_FALSE(first[0].grants_per_s);

  std::vector<std::string> lines;
  RenderSubjects("BUSIEST USERS", rated, &lines);
  REQUIRE(lines.size() == 5);  // header, 3 rows, a blank line
  CHECK(lines[0] ==
        "BUSIEST USERS  GRANTS/S  DENIALS/S  GRANTS  DENIALS  RESERVED_TOKENS  "
        "RESERVED_USD");
  CHECK(lines[1] ==
        "alice              10.0        2.0      30        6                0  "
        "           0");
  CHECK(lines[2] ==
        "carol                 -          -       9        0                0  "
        "           0");
  CHECK(lines[4].empty());
  lines.clear();
  RenderSubjects("BUSIEST USERS", {}, &lines);
  CHECK(lines.empty());

  json j = SubjectsJson(rated);
  CHECK(j[0]["subject"] == "alice");
  CHECK(j[0]["grants"]["per_s"] == 10);
  CHECK(j[0]["grants"]["total"] == 30);
  CHECK(j[1]["grants"]["per_s"].is_null());
}

const char* kMetrics =
    "brake_requests_total 10\n"
    "brake_acquires_total{result=\"granted\"} 4\n";

TEST_CASE("top shows the busiest users and tasks with rates", "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {kMetrics};
  daemon.top_replies["user"] = {
      TopReply("user", {Row("alice", 10, 2), Row("bob", 4, 0)}),
      TopReply("user", {Row("alice", 20, 2), Row("bob", 6, 1)})};
  daemon.top_replies["task"] = {TopReply("task", {Row("t-42", 10, 2)})};
  FakeTerminal terminal;

  SECTION("in text frames") {
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "2"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.top_asked ==
          std::vector<std::string>{"user", "task", "user", "task"});
    const size_t split = o.out.find("\n\nbrake top ");
    REQUIRE(split != std::string::npos);
    const std::string frame1 = o.out.substr(0, split);
    const std::string frame2 = o.out.substr(split + 2);
    CHECK_THAT(frame1, Catch::Contains("BUSIEST USERS  GRANTS/S"));
    CHECK_THAT(frame1, Catch::Contains("\nalice                 -          -"
                                       "      10        2"));
    CHECK_THAT(frame1, Catch::Contains("BUSIEST TASKS  GRANTS/S"));
    // +10 grants and +2 grants, 1 denial in the 1 s between frames.
    CHECK_THAT(frame2, Catch::Contains("\nalice              10.0          0"
                                       "      20        2"));
    CHECK_THAT(frame2, Catch::Contains("\nbob                 2.0        1.0"
                                       "       6        1"));
    CHECK_THAT(frame2, Catch::Contains("\nt-42                  0          0"));
  }
  SECTION("in --json frames") {
    Outcome o =
        RunTopCtl(&daemon, &terminal, {"--json", "top", "--iterations", "2"});
    CHECK(o.code == kExitOk);
    std::istringstream lines(o.out);
    std::vector<json> frames;
    for (std::string line; std::getline(lines, line);) {
      frames.push_back(json::parse(line));
    }
    REQUIRE(frames.size() == 2);
    CHECK(frames[0]["busiest_users"][0]["subject"] == "alice");
    CHECK(frames[0]["busiest_users"][0]["grants"]["per_s"].is_null());
    CHECK(frames[1]["busiest_users"][0]["grants"]["per_s"] == 10);
    CHECK(frames[1]["busiest_tasks"][0]["subject"] == "t-42");
  }
}

TEST_CASE("top without the top op shows the rest", "[ctl][top]") {
  FakeDaemon daemon;
  daemon.metrics = {kMetrics};
  FakeTerminal terminal;

  SECTION("an older braked is asked once per connection") {
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "3"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.top_asked == std::vector<std::string>{"user"});
    CHECK(o.out.find("BUSIEST") == std::string::npos);
    CHECK(o.out.find("busiest") == std::string::npos);
    CHECK_THAT(o.out, Catch::Contains("granted"));
    Outcome j =
        RunTopCtl(&daemon, &terminal, {"--json", "top", "--iterations", "1"});
    CHECK(json::parse(j.out)["busiest_users"].is_null());
  }
  SECTION("a refusal is shown and asked again next frame") {
    daemon.top_replies["user"] = {
        R"({"ok":false,"error":{"code":"forbidden","message":"no"}})"};
    Outcome o = RunTopCtl(&daemon, &terminal, {"top", "--iterations", "2"});
    CHECK(o.code == kExitOk);
    CHECK(daemon.top_asked == std::vector<std::string>{"user", "user"});
    CHECK_THAT(o.out, Catch::Contains("busiest: unavailable (forbidden: no)"));
  }
}

}  // namespace
}  // namespace brake::ctl
