// Command-line words of one brakectl command, checked against its declared
// positionals and flags.
//
// Every command flag takes a value ("--tokens 5" or "--tokens=5"); a flag may
// appear once. ParseArgs() checks only the shape (known flags, values
// present, required ones given, positional count); ApplyArgs() converts the
// values by their declared type and stores them in the request under the
// declared wire field. Failures are usage errors: a Status with code
// kBadRequest whose message names the flag, e.g. "--tokens: must be an
// integer >= 0". Pure; any thread.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace brake::ctl {

enum class ArgType {
  kString,   // any non-empty string
  kScope,    // global | user:NAME | task:NAME | resource:NAME (and NAME = *)
  kCount,    // integer >= 0
  kDecimal,  // number >= 0
  kChoice,   // one of ArgSpec::choices ("ok|error")
  kSince,    // YYYY-MM-DD or ms since the epoch -> integer ms
  kRaw,      // kept as text for the command's own builder
};

// One positional or flag. Positionals have an empty `flag`.
struct ArgSpec {
  std::string_view flag;     // "--tokens"; empty for a positional
  std::string_view metavar;  // "N", "SCOPE"
  std::string_view field;    // wire field; empty: the builder handles it
  ArgType type = ArgType::kString;
  bool required = false;
  std::string_view help;
  std::string_view choices = {};  // for kChoice: "task|model|day"
};

// What the words said, before conversion.
struct ParsedArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> flags;  // "--tokens" -> "5"

  bool Has(std::string_view flag) const { return flags.count(flag) > 0; }
  // The value of `flag`, or "" when absent.
  const std::string& Get(std::string_view flag) const;
};

// A usage error (exit code 2) with `message`.
Status UsageError(std::string message);
bool IsUsageError(const Status& status);

// Splits `words` by `specs`. Positionals are matched in order; required ones
// must be present, optional ones may be missing; extra ones are an error.
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& words,
                             const std::vector<ArgSpec>& specs);

// Converts each given argument that has a wire field and stores it in
// `request` (an object).
Status ApplyArgs(const ParsedArgs& args, const std::vector<ArgSpec>& specs,
                 nlohmann::json* request);

// Checks one value by type; on failure returns the message without the flag
// name ("must be an integer >= 0").
Result<nlohmann::json> ConvertArg(const ArgSpec& spec, const std::string& text);

}  // namespace brake::ctl
