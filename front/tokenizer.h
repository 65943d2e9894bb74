// Tokenizer: counts the tokens of a text as OpenAI's BPE encodings do
// (o200k_base, cl100k_base), so that a prompt reserves what it will be
// charged rather than a byte ceiling.
//
// An encoding is read once from the rank module of the js-tiktoken npm
// package (ranks/NAME.js: its pre-tokenizer pattern and its ranks, each a
// base64 token and its rank), installed by scripts/setup-debian from
// tokenizers/package-lock.json: nothing is downloaded at run time. The text
// is split by the pattern (PCRE2, UTF and Unicode properties) and each
// piece merged byte pair by byte pair, lowest rank first, as tiktoken does;
// special tokens are counted as ordinary text.
//
// Pure: no IO after Load, no clock. A loaded Tokenizer is read-only, so
// Count may run on any thread (the front counts on libuv's threadpool).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace brake::front {

class Tokenizer {
 public:
  // Reads a js-tiktoken rank module. Errors name the file and what is
  // wrong with it (not found, not JSON, a bad pattern or rank line).
  static Result<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // The tokens of `text`; nullopt when it is not valid UTF-8 (the caller
  // keeps its byte ceiling).
  std::optional<int64_t> Count(std::string_view text) const;
  size_t ranks() const;  // how many tokens the encoding has

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brake::front
