// Fingerprint hashing: the stable 64-bit key of a call fingerprint.
//
// An acquire may carry a `fingerprint` (say, a hash of tool name and
// arguments); the loop rule compares fingerprints by this hash. It is 64-bit
// FNV-1a over the bytes, so it is the same on every run and platform, which
// matters because the hashes of a task's recent calls are persisted with its
// breaker. Pure; any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace brake::breaker {

inline constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
inline constexpr uint64_t kFnvPrime = 1099511628211ULL;

// FNV-1a 64 of `fingerprint`'s bytes. HashFingerprint("") is the offset
// basis; HashFingerprint("a") is 0xaf63dc4c8601ec8c.
constexpr uint64_t HashFingerprint(std::string_view fingerprint) {
  uint64_t h = kFnvOffsetBasis;
  for (char c : fingerprint) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace brake::breaker
