// A usd cap cannot be bypassed by leaving the model out: an acquire that
// names no model under a usd limit is priced as the unnamed model
// (prices["*"]) when that has a price, and refused naming `model` and the
// capped scope when it has none; over a user's cap, a parent task's cap
// (the task tree) and the global cap, through a real braked.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/expect.h"
#include "tests/integration/harness.h"
#include "tests/integration/money.h"

namespace brake::integration {
namespace {

// Where the usd cap sits, and the subjects an acquire under it names.
struct CapCase {
  const char* name;
  std::string scope;   // the capped scope
  std::string user;
  std::string task;
  std::string parent;  // "" for none
};

CapCase CaseOf(int i) {
  switch (i) {
    case 0: return {"user", "user:erin", "erin", "t-1", ""};
    case 1: return {"task tree", "task:plan", "erin", "step-1", "plan"};
    default: return {"global", "global", "erin", "t-1", ""};
  }
}

// The parent task exists before a child names it.
void MakeParent(Client& admin, const CapCase& c) {
  if (c.parent.empty()) return;
  std::string open = AcquireLease(admin, c.user, c.parent, {{"tokens", 0}});
  CallOk(admin, {{"op", "commit"}, {"lease", open}, {"tokens", 0}});
}

// Runs `body` once for each capped scope (a section each), on a fresh
// daemon whose scope has a 5 usd cap over all time.
template <class Body>
void ForEachCap(Body body) {
  for (int i = 0; i < 3; ++i) {
    const CapCase c = CaseOf(i);
    DYNAMIC_SECTION(c.name) {
      RunningDaemon d;
      Client admin = d.daemon.Connect();
      MakeParent(admin, c);
      SetUsdCap(admin, c.scope, 5.0);
      body(admin, c);
    }
  }
}

// An acquire of `c`'s task (under its parent), naming `model` unless empty.
json AcquireFor(Client& client, const CapCase& c, int64_t tokens,
                const std::string& model = "") {
  json request = {{"op", "acquire"},
                  {"user", c.user},
                  {"task", c.task},
                  {"tokens", tokens}};
  if (!c.parent.empty()) request["parent"] = c.parent;
  if (!model.empty()) request["model"] = model;
  return client.Call(request);
}

TEST_CASE("an acquire with no model under a usd cap and no price for * is "
          "refused, naming model and the capped scope",
          "[integration][money]") {
  ForEachCap([](Client& admin, const CapCase& c) {
    const json reply = AcquireFor(admin, c, 150'000);
    RequireError(reply, "bad_request", "model: ");
    CHECK_THAT(ErrorMessageOf(reply), Catch::Matchers::Contains(c.scope));
    // Refused whole: nothing was reserved or spent.
    const json status = CallOk(admin, {{"op", "status"}, {"user", c.user}});
    CHECK(status["reserved"]["usd"] == 0);
    CHECK(status["spend"]["usd"] == 0);
    // Naming a priced model still works; so does a call under no usd cap.
    SetPrice(admin, "m", 1.0, 1.0);
    CHECK(AcquireFor(admin, c, 1'000, "m")["granted"] == true);
    CallOk(admin, {{"op", "policy.delete"}, {"scope", c.scope}});
    CHECK(AcquireFor(admin, c, 1'000)["granted"] == true);
  });
}

TEST_CASE("an acquire with no model is priced at prices[\"*\"] against a usd "
          "cap, and so is its commit",
          "[integration][money]") {
  ForEachCap([](Client& admin, const CapCase& c) {
    // 1 usd per million tokens: 1,000 nano-usd a token. A cap of 5 usd
    // with 0.25 usd left fits 250,000 tokens, not 300,000.
    SetPrice(admin, "*", 1.0, 1.0);
    const json first = AcquireFor(admin, c, 4'750'000);
    INFO("reply: " << first.dump());
    REQUIRE(first["granted"] == true);
    const json settled = CallOk(admin, {{"op", "commit"},
                                        {"lease", first["lease"]},
                                        {"tokens", 4'750'000}});
    CHECK(Nano(settled["charged_usd"]) == 4'750'000'000);

    const json over = AcquireFor(admin, c, 300'000);
    INFO("reply: " << over.dump());
    REQUIRE(over["ok"] == true);
    CHECK(over["granted"] == false);
    CHECK(over["reason"] == "cost_cap");
    CHECK(over["scope"] == c.scope);

    const json fits = AcquireFor(admin, c, 250'000);
    INFO("reply: " << fits.dump());
    REQUIRE(fits["granted"] == true);
    CHECK(Nano(fits["remaining"]["usd"]) == 0);
    const json held = CallOk(admin, {{"op", "status"}, {"user", c.user}});
    CHECK(Nano(held["reserved"]["usd"]) == 250'000'000);
    // Its commit is priced as "*" too: 100,000 tokens, 0.1 usd.
    const json commit = CallOk(admin, {{"op", "commit"},
                                       {"lease", fits["lease"]},
                                       {"tokens", 100'000}});
    CHECK(Nano(commit["charged_usd"]) == 100'000'000);
    const json status = CallOk(admin, {{"op", "status"}, {"user", c.user}});
    CHECK(Nano(status["spend"]["usd"]) == 4'850'000'000);
    // The ledger names the price they settled at (the parent's free call
    // before the cap named no model and is its own row).
    const json usage = CallOk(
        admin, {{"op", "usage"}, {"user", c.user}, {"by", "model"}});
    INFO("usage: " << usage.dump());
    json unnamed;
    for (const json& row : usage["rows"]) {
      if (row["key"] == "*") unnamed = row;
    }
    REQUIRE(unnamed.is_object());
    CHECK(unnamed["calls"] == 2);
    CHECK(Nano(unnamed["usd"]) == 4'850'000'000);
  });
}

TEST_CASE("a call of no tokens needs no model under a usd cap, but its "
          "commit of tokens does",
          "[integration][money]") {
  ForEachCap([](Client& admin, const CapCase& c) {
    // A tool call reserves no tokens: nothing to price.
    const json tool = AcquireFor(admin, c, 0);
    INFO("reply: " << tool.dump());
    REQUIRE(tool["granted"] == true);
    const json refused = admin.Call(
        {{"op", "commit"}, {"lease", tool["lease"]}, {"tokens", 5'000}});
    RequireError(refused, "bad_request", "model: ");
    // Refused whole: the lease is still open, and settles at no tokens.
    const json open = CallOk(admin, {{"op", "status"}, {"user", c.user}});
    CHECK(open["reserved"]["requests"] == 1);
    CallOk(admin,
           {{"op", "commit"}, {"lease", tool["lease"]}, {"tokens", 0}});
    // With a price for "*", the tokens are charged at it.
    SetPrice(admin, "*", 1.0, 1.0);
    const json priced = AcquireFor(admin, c, 0);
    REQUIRE(priced["granted"] == true);
    const json charged = CallOk(admin, {{"op", "commit"},
                                        {"lease", priced["lease"]},
                                        {"tokens", 5'000}});
    CHECK(Nano(charged["charged_usd"]) == 5'000'000);
    const json status = CallOk(admin, {{"op", "status"}, {"user", c.user}});
    CHECK(Nano(status["spend"]["usd"]) == 5'000'000);
  });
}

TEST_CASE("a model named * by an acquire is refused, and prices.set takes *",
          "[integration][money]") {
  RunningDaemon d;
  Client admin = d.daemon.Connect();
  SetPrice(admin, "*", 2.0, 4.0);
  RequireError(admin.Call({{"op", "acquire"},
                           {"user", "u"},
                           {"task", "t"},
                           {"model", "*"}}),
               "bad_request", "model: ");
  RequireError(admin.Call({{"op", "prices.set"},
                           {"model", ""},
                           {"input_usd_per_mtok", 1},
                           {"output_usd_per_mtok", 1}}),
               "bad_request", "model: ");
}

}  // namespace
}  // namespace brake::integration
