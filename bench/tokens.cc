// brake-tokens: counts tokens as braked's front does (front/tokenizer.h).
//
//   brake-tokens RANKS.js              each stdin line a JSON string: its count
//   brake-tokens RANKS.js --bench [KB] the time to count a KB-sized prompt of
//                                      English-like text (default 100 KB):
//                                      median and slowest of 20 counts
//
// RANKS.js is a js-tiktoken rank module, e.g.
// tokenizers/node_modules/js-tiktoken/dist/ranks/o200k_base.js.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "front/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: brake-tokens RANKS.js [--bench [KB]]\n");
    return 2;
  }
  auto tokenizer = brake::front::Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().message().c_str());
    return 1;
  }
  const brake::front::Tokenizer& t = **tokenizer;
  if (argc >= 3 && std::string(argv[2]) == "--bench") {
    const size_t kb = argc >= 4 ? std::stoul(argv[3]) : 100;
    const char* words[] = {"the", "agent", "calls", "a", "tool,", "reads",
                           "its", "answer", "and", "plans:", "42", "steps.\n"};
    std::string text;
    for (size_t i = 0; text.size() < kb * 1024; ++i) {
      text += words[(i * 7 + i / 5) % 12];
      text += ' ';
    }
    std::vector<double> ms;
    int64_t tokens = 0;
    for (int i = 0; i < 20; ++i) {
      const auto start = std::chrono::steady_clock::now();
      tokens = t.Count(text).value_or(-1);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%zu KB, %lld tokens: median %.2f ms, slowest %.2f ms\n", kb,
                static_cast<long long>(tokens), ms[ms.size() / 2], ms.back());
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json text = nlohmann::json::parse(line, nullptr, false);
    if (!text.is_string()) {
      std::fprintf(stderr, "not a JSON string: %s\n", line.c_str());
      return 1;
    }
    auto n = t.Count(text.get<std::string>());
    std::printf("%lld\n", n ? static_cast<long long>(*n) : -1LL);
  }
  return 0;
}
