#include "front/front_metrics.h"

#include <cstdio>

namespace brake::front {
namespace {

std::string Labels(std::initializer_list<std::pair<const char*, std::string>> kv) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : kv) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    for (char ch : v) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch == '\n' ? ' ' : ch;
    }
    out += '"';
  }
  return out + "}";
}

void Head(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

}  // namespace

void FrontMetrics::Request(const std::string& route, const std::string& upstream) {
  ++requests_[{route, upstream}];
}
void FrontMetrics::Denial(const std::string& route, const std::string& reason) {
  ++denials_[{route, reason}];
}
void FrontMetrics::Error(const std::string& route, int status) {
  ++errors_[{route, std::to_string(status)}];
}
void FrontMetrics::Upstream(const std::string& upstream, int status, double seconds) {
  ++answers_[{upstream, status == 0 ? "none" : std::to_string(status / 100) + "xx"}];
  auto& l = latency_[upstream];
  l.first += seconds;
  ++l.second;
}
void FrontMetrics::Settled(const std::string& upstream, int64_t input,
                           int64_t output, bool reported) {
  const char* source = reported ? "reported" : "estimated";
  tokens_[{upstream, "input", source}] += input;
  tokens_[{upstream, "output", source}] += output;
}
void FrontMetrics::StreamCut(const std::string& upstream, const std::string& by) {
  ++cut_[{upstream, by}];
}

std::string FrontMetrics::Text() const {
  std::string out;
  Head(&out, "brake_front_requests_total", "counter", "HTTP calls received, by route and upstream");
  for (const auto& [k, v] : requests_)
    out += "brake_front_requests_total" + Labels({{"route", k.first}, {"upstream", k.second}}) + " " + std::to_string(v) + "\n";
  Head(&out, "brake_front_denials_total", "counter", "calls brake denied (429), by route and reason");
  for (const auto& [k, v] : denials_)
    out += "brake_front_denials_total" + Labels({{"route", k.first}, {"reason", k.second}}) + " " + std::to_string(v) + "\n";
  Head(&out, "brake_front_errors_total", "counter", "calls the front answered with an error of its own, by route and status");
  for (const auto& [k, v] : errors_)
    out += "brake_front_errors_total" + Labels({{"route", k.first}, {"status", k.second}}) + " " + std::to_string(v) + "\n";
  Head(&out, "brake_front_upstream_answers_total", "counter", "upstream answers by status class (none: no answer)");
  for (const auto& [k, v] : answers_)
    out += "brake_front_upstream_answers_total" + Labels({{"upstream", k.first}, {"status", k.second}}) + " " + std::to_string(v) + "\n";
  Head(&out, "brake_front_upstream_seconds", "summary", "upstream call latency");
  for (const auto& [k, v] : latency_) {
    char sum[32];
    std::snprintf(sum, sizeof(sum), "%.6f", v.first);
    out += "brake_front_upstream_seconds_sum" + Labels({{"upstream", k}}) + " " + sum + "\n";
    out += "brake_front_upstream_seconds_count" + Labels({{"upstream", k}}) + " " + std::to_string(v.second) + "\n";
  }
  Head(&out, "brake_front_tokens_settled_total", "counter", "tokens settled, by kind and whether the provider reported them");
  for (const auto& [k, v] : tokens_)
    out += "brake_front_tokens_settled_total" +
           Labels({{"upstream", std::get<0>(k)}, {"kind", std::get<1>(k)}, {"source", std::get<2>(k)}}) +
           " " + std::to_string(v) + "\n";
  Head(&out, "brake_front_streams_cut_total", "counter", "streams cut short, by the client or the upstream");
  for (const auto& [k, v] : cut_)
    out += "brake_front_streams_cut_total" + Labels({{"upstream", k.first}, {"by", k.second}}) + " " + std::to_string(v) + "\n";
  return out;
}

}  // namespace brake::front
