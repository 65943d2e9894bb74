#include "front/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <openssl/evp.h>

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace brake::front {
namespace tokenizer_detail {

using Rank = uint32_t;
constexpr Rank kNoRank = std::numeric_limits<Rank>::max();

// Lookups by string_view, without a std::string per lookup.
struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};
using Ranks = std::unordered_map<std::string, Rank, Hash, std::equal_to<>>;

}  // namespace tokenizer_detail

namespace {

using tokenizer_detail::kNoRank;
using tokenizer_detail::Rank;
using tokenizer_detail::Ranks;

// Decodes one base64 token; false when it is not base64.
bool Decode(std::string_view b64, std::string* out) {
  if (b64.empty() || b64.size() % 4 != 0) return false;
  out->resize(b64.size() / 4 * 3);
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out->data()),
                                reinterpret_cast<const unsigned char*>(b64.data()),
                                static_cast<int>(b64.size()));
  if (n < 0) return false;
  size_t pad = 0;
  while (pad < 2 && b64[b64.size() - 1 - pad] == '=') ++pad;
  out->resize(static_cast<size_t>(n) - pad);
  return true;
}

}  // namespace

struct Tokenizer::Impl {
  Ranks ranks;
  pcre2_code* pattern = nullptr;
  ~Impl() {
    if (pattern != nullptr) pcre2_code_free(pattern);
  }

  Rank RankOf(std::string_view bytes) const {
    auto it = ranks.find(bytes);
    return it == ranks.end() ? kNoRank : it->second;
  }

  // Tokens of one piece of the split: byte pairs merged lowest rank first
  // (tiktoken's _byte_pair_merge).
  int64_t Merge(std::string_view piece) const {
    if (piece.size() <= 1 || RankOf(piece) != kNoRank) return 1;
    struct Part {
      size_t start;
      Rank rank;
    };
    std::vector<Part> parts;
    parts.reserve(piece.size() + 1);
    for (size_t i = 0; i <= piece.size(); ++i) parts.push_back({i, kNoRank});
    // The rank of the pair parts[i], parts[i + 1] merged with the next part.
    auto pair_rank = [&](size_t i) {
      if (i + 3 >= parts.size()) return kNoRank;
      return RankOf(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start));
    };
    for (size_t i = 0; i + 2 < parts.size(); ++i) {
      parts[i].rank = RankOf(piece.substr(parts[i].start, parts[i + 2].start - parts[i].start));
    }
    while (true) {
      Rank best = kNoRank;
      size_t at = 0;
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        if (parts[i].rank < best) {
          best = parts[i].rank;
          at = i;
        }
      }
      if (best == kNoRank) break;
      if (at > 0) parts[at - 1].rank = pair_rank(at - 1);
      parts[at].rank = pair_rank(at);
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    return static_cast<int64_t>(parts.size()) - 1;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

size_t Tokenizer::ranks() const { return impl_->ranks.size(); }

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::BadRequest("tokenizer: cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string module = text.str();
  // "export default {...};": the object is JSON.
  const size_t open = module.find('{');
  const size_t close = module.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return Status::BadRequest("tokenizer: " + path + " holds no rank object");
  }
  nlohmann::json object = nlohmann::json::parse(
      module.begin() + static_cast<std::ptrdiff_t>(open),
      module.begin() + static_cast<std::ptrdiff_t>(close) + 1, nullptr, false);
  if (!object.is_object() || !object.contains("pat_str") ||
      !object["pat_str"].is_string() || !object.contains("bpe_ranks") ||
      !object["bpe_ranks"].is_string()) {
    return Status::BadRequest("tokenizer: " + path +
                              ": pat_str and bpe_ranks must be strings");
  }
  auto impl = std::make_unique<Impl>();
  const std::string pattern = object["pat_str"].get<std::string>();
  int error = 0;
  PCRE2_SIZE error_at = 0;
  impl->pattern = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                                pattern.size(), PCRE2_UTF | PCRE2_UCP, &error,
                                &error_at, nullptr);
  if (impl->pattern == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return Status::BadRequest("tokenizer: " + path + ": pat_str at " +
                              std::to_string(error_at) + ": " +
                              reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(impl->pattern, PCRE2_JIT_COMPLETE);  // slower without
  // Lines "! OFFSET TOKEN TOKEN ...": the tokens' ranks are OFFSET, OFFSET+1...
  std::istringstream lines(object["bpe_ranks"].get<std::string>());
  std::string line, word, bytes;
  size_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::istringstream words(line);
    int64_t offset = -1;
    if (!(words >> word) || !(words >> offset) || offset < 0) {
      return Status::BadRequest("tokenizer: " + path + ": rank line " +
                                std::to_string(line_no) + " has no offset");
    }
    Rank rank = static_cast<Rank>(offset);
    while (words >> word) {
      if (!Decode(word, &bytes)) {
        return Status::BadRequest("tokenizer: " + path + ": rank line " +
                                  std::to_string(line_no) + ": bad token " + word);
      }
      impl->ranks.emplace(bytes, rank++);
    }
  }
  if (impl->ranks.size() < 256) {
    return Status::BadRequest("tokenizer: " + path + ": too few ranks");
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::optional<int64_t> Tokenizer::Count(std::string_view text) const {
  pcre2_match_data* match =
      pcre2_match_data_create_from_pattern(impl_->pattern, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int64_t tokens = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = 0;  // the UTF check once, on the first match
  std::optional<int64_t> result;
  while (offset < text.size()) {
    const int rc = pcre2_match(impl_->pattern, subject, text.size(), offset,
                               options, match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {  // not UTF-8, or a limit of PCRE2's
      pcre2_match_data_free(match);
      return std::nullopt;
    }
    options = PCRE2_NO_UTF_CHECK;
    const PCRE2_SIZE* at = pcre2_get_ovector_pointer(match);
    if (at[1] <= at[0]) {  // the pattern matches no empty piece; be safe
      offset = at[0] + 1;
      continue;
    }
    tokens += impl_->Merge(text.substr(at[0], at[1] - at[0]));
    offset = at[1];
  }
  pcre2_match_data_free(match);
  result = tokens;
  return result;
}

}  // namespace brake::front
