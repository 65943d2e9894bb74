#include "ctl/commands.h"

#include <utility>

#include "common/json_error.h"
#include "ctl/render.h"
#include "ctl/top.h"

namespace brake::ctl {

using nlohmann::json;

namespace {

// Shorthands for the table below.
ArgSpec Positional(std::string_view metavar, std::string_view field,
                   ArgType type, std::string_view help, bool required = true) {
  return ArgSpec{"", metavar, field, type, required, help};
}
ArgSpec Flag(std::string_view flag, std::string_view metavar,
             std::string_view field, ArgType type, std::string_view help,
             bool required = false) {
  return ArgSpec{flag, metavar, field, type, required, help};
}
ArgSpec Choice(std::string_view flag, std::string_view field,
               std::string_view choices, std::string_view help) {
  return ArgSpec{flag, choices, field, ArgType::kChoice, false, help, choices};
}

Status BuildStatus(const ParsedArgs& args, const BuildContext&, json*) {
  int given = args.Has("--user") + args.Has("--task") + args.Has("--resource");
  if (given != 1) {
    return UsageError("give exactly one of --user, --task, --resource");
  }
  return Status::Ok();
}

Status BuildBusiest(const ParsedArgs&, const BuildContext&, json* request) {
  if (!request->contains("by")) (*request)["by"] = "user";
  return Status::Ok();
}

Status BuildCommit(const ParsedArgs& args, const BuildContext&, json*) {
  if (args.Has("--retry-after-ms") && args.Get("--outcome") != "throttled") {
    return UsageError("--retry-after-ms: only with --outcome throttled");
  }
  return Status::Ok();
}

// Parses the JSON text of argument `name`.
Result<json> ParseJsonArg(std::string_view name, const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return UsageError(std::string(name) + ": is not valid JSON" +
                      WhereJsonFails<json>(text));
  }
  return value;
}

// Adds the members of policy object `policy` to `request`.
Status MergePolicy(std::string_view name, const json& policy, json* request) {
  if (policy.is_array()) {
    (*request)["limits"] = policy;  // a bare list of limits
    return Status::Ok();
  }
  if (!policy.is_object()) {
    return UsageError(std::string(name) +
                      ": must be a policy object {\"limits\":[...],"
                      "\"breaker\":{...}} or an array of limits");
  }
  for (auto it = policy.begin(); it != policy.end(); ++it) {
    if (it.key() == "op" || it.key() == "id" || it.key() == "scope") {
      return UsageError(std::string(name) + ": must not contain \"" + it.key() +
                        "\" (the scope is an argument)");
    }
    (*request)[it.key()] = it.value();
  }
  return Status::Ok();
}

Status BuildPolicySet(const ParsedArgs& args, const BuildContext& context,
                      json* request) {
  const bool inline_policy = args.positionals.size() > 1;
  if (inline_policy && args.Has("--file")) {
    return UsageError("give either POLICY or --file, not both");
  }
  if (!inline_policy && !args.Has("--file") && !args.Has("--limits") &&
      !args.Has("--breaker")) {
    return UsageError(
        "missing policy: give --limits, --breaker, --file or "
        "POLICY");
  }
  if (inline_policy) {
    Result<json> policy = ParseJsonArg("POLICY", args.positionals[1]);
    if (!policy.ok()) return policy.status();
    if (Status s = MergePolicy("POLICY", *policy, request); !s.ok()) return s;
  }
  if (args.Has("--file")) {
    const std::string& path = args.Get("--file");
    if (!context.read_file) return Status::Internal("cannot read files");
    Result<std::string> text = context.read_file(path);
    if (!text.ok()) return text.status();
    json policy = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (policy.is_discarded()) {
      return UsageError("--file: " + path + " is not valid JSON" +
                        WhereJsonFails<json>(*text));
    }
    if (Status s = MergePolicy("--file", policy, request); !s.ok()) return s;
  }
  // Explicit flags override what a file or POLICY said.
  if (args.Has("--limits")) {
    Result<json> limits = ParseJsonArg("--limits", args.Get("--limits"));
    if (!limits.ok()) return limits.status();
    if (!limits->is_array()) {
      return UsageError("--limits: must be a JSON array of limits");
    }
    (*request)["limits"] = *limits;
  }
  if (args.Has("--breaker")) {
    Result<json> breaker = ParseJsonArg("--breaker", args.Get("--breaker"));
    if (!breaker.ok()) return breaker.status();
    if (!breaker->is_object()) {
      return UsageError("--breaker: must be a JSON object");
    }
    (*request)["breaker"] = *breaker;
  }
  return Status::Ok();
}

constexpr std::string_view kScopeHelp =
    "global, user:NAME, task:NAME, resource:NAME, or a default user:*, "
    "task:*, resource:*";

std::vector<CommandSpec> MakeCommands() {
  const ArgType kStr = ArgType::kString;
  const ArgType kCount = ArgType::kCount;
  const ArgType kDec = ArgType::kDecimal;
  const ArgType kRaw = ArgType::kRaw;
  const ArgSpec scope =
      Positional("SCOPE", "scope", ArgType::kScope, kScopeHelp);
  std::vector<CommandSpec> c;
  c.push_back({"ping",
               "ping",
               "check that braked answers; prints its version",
               false,
               {},
               nullptr,
               RenderPing});
  c.push_back(
      {"status",
       "status",
       "limits, spend, reservations and breakers of a user, task or resource",
       false,
       {Flag("--user", "U", "user", kStr, "a user"),
        Flag("--task", "T", "task", kStr, "a task"),
        Flag("--resource", "R", "resource", kStr, "a resource")},
       BuildStatus,
       RenderStatus,
       "--user U | --task T | --resource R"});
  c.push_back(
      {"acquire",
       "acquire",
       "ask for permission for one call; prints \"lease <id>\" or why not "
       "(exit 3)",
       false,
       {Flag("--user", "U", "user", kStr, "the user making the call", true),
        Flag("--task", "T", "task", kStr, "the task making the call", true),
        Flag("--tokens", "N", "tokens", kCount, "estimated tokens to reserve"),
        Flag("--requests", "N", "requests", kCount, "requests (default 1)"),
        Flag("--model", "M", "model", kStr, "model, priced by the price table"),
        Flag("--resource", "R", "resource", kStr, "downstream being called"),
        Flag("--fingerprint", "F", "fingerprint", kStr,
             "call fingerprint; repeats in a task are a loop"),
        Flag("--parent", "P", "parent", kStr,
             "parent task, on a task's first acquire"),
        Flag("--wait-ms", "N", "wait_ms", kCount,
             "wait up to N ms for a grant (default 0: answer now)")},
       nullptr,
       RenderAcquire});
  c.push_back(
      {"commit",
       "commit",
       "settle a lease with what the call actually used",
       false,
       {Positional("LEASE", "lease", kStr, "the lease from acquire"),
        Flag("--tokens", "N", "tokens", kCount, "actual total tokens"),
        Flag("--input-tokens", "N", "input_tokens", kCount, "input tokens"),
        Flag("--output-tokens", "N", "output_tokens", kCount, "output tokens"),
        Flag("--latency-ms", "N", "latency_ms", kCount, "call latency"),
        Choice("--outcome", "outcome", "ok|error|timeout|throttled",
               "how the call ended"),
        Flag("--retry-after-ms", "N", "retry_after_ms", kCount,
             "with --outcome throttled: the downstream's wait")},
       BuildCommit,
       RenderCommit});
  c.push_back({"cancel",
               "cancel",
               "release a lease as if the call never happened",
               false,
               {Positional("LEASE", "lease", kStr, "the lease from acquire")},
               nullptr,
               RenderOk});
  c.push_back(
      {"usage",
       "usage",
       "settled usage of a user, grouped by task, model or day",
       false,
       {Flag("--user", "U", "user", kStr, "the user", true),
        Flag("--task", "T", "task", kStr, "only this task (and its subtasks)"),
        Flag("--since", "DATE", "since_ms", ArgType::kSince,
             "from YYYY-MM-DD (UTC) or ms since the epoch"),
        Choice("--by", "by", "task|model|day", "grouping (default task)")},
       nullptr,
       RenderUsage});
  c.push_back(
      {"policy set",
       "policy.set",
       "set the limits and breaker of a scope (replaces its policy)",
       true,
       {scope,
        Positional("POLICY", "", kRaw,
                   "policy JSON {\"limits\":[...],\"breaker\":{...}}", false),
        Flag("--limits", "JSON", "", kRaw, "JSON array of limits"),
        Flag("--breaker", "JSON", "", kRaw, "JSON breaker settings"),
        Flag("--file", "FILE", "", kRaw,
             "read the policy JSON from FILE (- for "
             "stdin)")},
       BuildPolicySet,
       RenderOk,
       "SCOPE (POLICY | --file FILE | --limits JSON [--breaker JSON])"});
  c.push_back({"policy get",
               "policy.get",
               "show the policy of a scope",
               true,
               {scope},
               nullptr,
               RenderPolicyGet});
  c.push_back({"policy list",
               "policy.list",
               "list scopes that have a policy",
               true,
               {},
               nullptr,
               RenderPolicyList});
  c.push_back({"policy delete",
               "policy.delete",
               "remove the policy of a scope",
               true,
               {scope},
               nullptr,
               RenderDeleted});
  c.push_back({"reset",
               "reset",
               "clear the counters and spend of a scope",
               true,
               {scope},
               nullptr,
               RenderOk});
  c.push_back({"breaker list",
               "breaker.list",
               "list breakers that are not closed",
               false,
               {},
               nullptr,
               RenderBreakers});
  c.push_back({"breaker trip",
               "breaker.trip",
               "open a scope's breaker by hand",
               true,
               {scope, Flag("--open-ms", "N", "open_ms", kCount,
                            "keep it open N ms (default: the policy's)")},
               nullptr,
               RenderOk});
  c.push_back({"breaker reset",
               "breaker.reset",
               "close a scope's breaker",
               true,
               {scope},
               nullptr,
               RenderOk});
  c.push_back({"prices set",
               "prices.set",
               "set a model's price per million tokens",
               true,
               {Positional("MODEL", "model", kStr,
                           "model name, or * for calls that name none"),
                Flag("--input", "USD", "input_usd_per_mtok", kDec,
                     "usd per million input tokens", true),
                Flag("--output", "USD", "output_usd_per_mtok", kDec,
                     "usd per million output tokens", true)},
               nullptr,
               RenderOk});
  c.push_back({"cluster",
               "cluster.status",
               "cluster mode: this node, its link to Redis, every node and "
               "the slices of shared limits they hold",
               true,
               {},
               nullptr,
               RenderCluster});
  c.push_back({"metrics",
               "metrics",
               "print the Prometheus metrics text",
               false,
               {},
               nullptr,
               RenderMetrics});
  c.push_back({"busiest",
               "top",
               "the busiest users, tasks or resources since braked started",
               false,
               {Choice("--by", "by", "user|task|resource",
                       "count by (default user)"),
                Flag("--limit", "N", "limit", kCount,
                     "at most N rows (default 20, at most 1000)")},
               BuildBusiest,
               RenderTopRows});
  c.push_back({"top",
               "metrics",
               "live view: acquire rates by reason, leases, waiters, spend, "
               "storage latency, open breakers (q quits)",
               false,
               {Flag("--interval-ms", "N", "interval_ms", kCount,
                     "redraw every N ms (default 1000, 100 to 3600000)"),
                Flag("--iterations", "N", "iterations", kCount,
                     "draw N frames, then exit (default: until q or Ctrl-C)")},
               BuildTop,
               nullptr,
               {},
               RunTop});
  return c;
}

}  // namespace

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec>* commands =
      new std::vector<CommandSpec>(MakeCommands());
  return *commands;
}

const CommandSpec* FindCommand(const std::vector<std::string>& words,
                               size_t* consumed) {
  if (words.empty()) return nullptr;
  if (words.size() >= 2) {
    const std::string two = words[0] + " " + words[1];
    for (const CommandSpec& c : Commands()) {
      if (c.name == two) {
        *consumed = 2;
        return &c;
      }
    }
  }
  for (const CommandSpec& c : Commands()) {
    if (c.name == words[0]) {
      *consumed = 1;
      return &c;
    }
  }
  return nullptr;
}

bool IsCommandGroup(std::string_view word) {
  for (const CommandSpec& c : Commands()) {
    size_t space = c.name.find(' ');
    if (space != std::string_view::npos && c.name.substr(0, space) == word) {
      return true;
    }
  }
  return false;
}

Result<json> BuildRequest(const CommandSpec& command,
                          const std::vector<std::string>& words,
                          const BuildContext& context) {
  Result<ParsedArgs> args = ParseArgs(words, command.args);
  if (!args.ok()) return args.status();
  json request = json::object();
  request["op"] = std::string(command.op);
  if (Status s = ApplyArgs(*args, command.args, &request); !s.ok()) return s;
  if (command.build != nullptr) {
    if (Status s = command.build(*args, context, &request); !s.ok()) return s;
  }
  return request;
}

std::string Synopsis(const CommandSpec& command) {
  std::string s(command.name);
  if (!command.synopsis.empty()) return s + " " + std::string(command.synopsis);
  for (const ArgSpec& a : command.args) {
    std::string word = a.flag.empty()
                           ? std::string(a.metavar)
                           : std::string(a.flag) + " " + std::string(a.metavar);
    s += a.required ? " " + word : " [" + word + "]";
  }
  return s;
}

}  // namespace brake::ctl
