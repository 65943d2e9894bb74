#include "ctl/args.h"

#include <utility>

#include "ctl/format.h"

namespace brake::ctl {

using nlohmann::json;

namespace {

std::string NameOf(const ArgSpec& spec) {
  return std::string(spec.flag.empty() ? spec.metavar : spec.flag);
}

bool ValidScope(std::string_view scope) {
  if (scope == "global") return true;
  for (std::string_view kind : {"user:", "task:", "resource:"}) {
    if (scope.size() > kind.size() && scope.substr(0, kind.size()) == kind) {
      return true;
    }
  }
  return false;
}

}  // namespace

const std::string& ParsedArgs::Get(std::string_view flag) const {
  static const std::string kEmpty;
  auto it = flags.find(flag);
  return it == flags.end() ? kEmpty : it->second;
}

Status UsageError(std::string message) {
  return Status(ErrorCode::kBadRequest, std::move(message));
}

bool IsUsageError(const Status& status) {
  return status.code() == ErrorCode::kBadRequest;
}

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& words,
                             const std::vector<ArgSpec>& specs) {
  ParsedArgs args;
  bool options_done = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--" && !options_done) {
      options_done = true;
      continue;
    }
    if (options_done || word.size() < 2 || word[0] != '-') {
      args.positionals.push_back(word);
      continue;
    }
    std::string flag = word;
    std::string value;
    bool has_value = false;
    if (size_t eq = word.find('='); eq != std::string::npos) {
      flag = word.substr(0, eq);
      value = word.substr(eq + 1);
      has_value = true;
    }
    const ArgSpec* spec = nullptr;
    for (const ArgSpec& s : specs) {
      if (!s.flag.empty() && s.flag == flag) spec = &s;
    }
    if (spec == nullptr) return UsageError("unknown option " + flag);
    if (args.Has(flag)) return UsageError(flag + ": given more than once");
    if (!has_value) {
      if (i + 1 >= words.size()) {
        return UsageError(flag + ": missing value " +
                          std::string(spec->metavar));
      }
      value = words[++i];
    }
    args.flags.emplace(flag, std::move(value));
  }

  size_t positional = 0;
  for (const ArgSpec& s : specs) {
    if (!s.flag.empty()) {
      if (s.required && !args.Has(s.flag)) {
        return UsageError("missing " + std::string(s.flag) + " " +
                          std::string(s.metavar));
      }
      continue;
    }
    if (positional >= args.positionals.size()) {
      if (s.required) return UsageError("missing " + std::string(s.metavar));
    }
    ++positional;
  }
  if (args.positionals.size() > positional) {
    return UsageError("unexpected argument '" + args.positionals[positional] +
                      "'");
  }
  return args;
}

Result<json> ConvertArg(const ArgSpec& spec, const std::string& text) {
  switch (spec.type) {
    case ArgType::kString:
    case ArgType::kRaw:
      if (text.empty()) return UsageError("must not be empty");
      return json(text);
    case ArgType::kScope:
      if (!ValidScope(text)) {
        return UsageError(
            "must be global, user:NAME, task:NAME or resource:NAME");
      }
      return json(text);
    case ArgType::kCount: {
      Parsed<int64_t> n = ParseNonNegativeInt(text);
      if (!n.value) return UsageError(n.error);
      return json(*n.value);
    }
    case ArgType::kDecimal: {
      Parsed<double> d = ParseNonNegativeDecimal(text);
      if (!d.value) return UsageError(d.error);
      return json(*d.value);
    }
    case ArgType::kSince: {
      Parsed<int64_t> ms = ParseSinceMs(text);
      if (!ms.value) return UsageError(ms.error);
      return json(*ms.value);
    }
    case ArgType::kChoice: {
      std::string_view rest = spec.choices;
      while (!rest.empty()) {
        size_t bar = rest.find('|');
        std::string_view choice = rest.substr(0, bar);
        if (choice == text) return json(text);
        rest = bar == std::string_view::npos ? "" : rest.substr(bar + 1);
      }
      return UsageError("must be one of " + std::string(spec.choices));
    }
  }
  return UsageError("unsupported argument type");
}

Status ApplyArgs(const ParsedArgs& args, const std::vector<ArgSpec>& specs,
                 json* request) {
  size_t positional = 0;
  for (const ArgSpec& spec : specs) {
    const std::string* text = nullptr;
    if (spec.flag.empty()) {
      if (positional < args.positionals.size()) {
        text = &args.positionals[positional];
      }
      ++positional;
    } else if (args.Has(spec.flag)) {
      text = &args.Get(spec.flag);
    }
    if (text == nullptr) continue;
    Result<json> value = ConvertArg(spec, *text);
    if (!value.ok()) {
      return UsageError(NameOf(spec) + ": " + value.status().message());
    }
    if (!spec.field.empty()) (*request)[std::string(spec.field)] = *value;
  }
  return Status::Ok();
}

}  // namespace brake::ctl
