// The `http` object of the config file: the OpenAI-compatible front
// (front/front_config.h, docs/FRONT.md).
#include <string>

#include "daemon/config.h"
#include "daemon/json_fields.h"

namespace brake {
namespace {

// Refuses keys of `obj` not in `known` ('|'-separated), naming the first.
Status OnlyKnown(const json& obj, const std::string& field,
                 const std::string& known) {
  for (const auto& [key, value] : obj.items()) {
    if (("|" + known + "|").find("|" + key + "|") == std::string::npos) {
      std::string list = known;
      for (char& ch : list) ch = ch == '|' ? ',' : ch;
      return Status::BadRequest(field + "." + key + ": unknown setting (" +
                                list + ")");
    }
  }
  return Status::Ok();
}

Status ReadListen(const json& http, front::FrontConfig* f) {
  auto listen = ReadString(http, "listen", std::nullopt, "http");
  if (!listen.ok()) return listen.status();
  const size_t colon = listen->rfind(':');
  const char* error = "http.listen: must be HOST:PORT, as 127.0.0.1:8787";
  if (colon == std::string::npos || colon == 0) return Status::BadRequest(error);
  std::string host = listen->substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = listen->substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return Status::BadRequest("http.listen: the port must be 1..65535");
  }
  f->listen = *listen;
  f->host = host;
  f->port = std::stoi(port);
  return Status::Ok();
}

Status ReadUpstreams(const json& http, front::FrontConfig* f) {
  auto it = http.find("upstreams");
  if (it == http.end() || it->is_null()) {
    return Status::BadRequest("http.upstreams: is required (openai, anthropic)");
  }
  if (!it->is_object()) {
    return Status::BadRequest("http.upstreams: must be an object");
  }
  for (const auto& [name, value] : it->items()) {
    const std::string field = "http.upstreams." + name;
    if (name != "openai" && name != "anthropic") {
      return Status::BadRequest(field +
                                ": unknown upstream (openai, anthropic)");
    }
    if (!value.is_object()) return Status::BadRequest(field + ": must be an object");
    if (Status s = OnlyKnown(value, field, "base_url|api_key_env"); !s.ok())
      return s;
    front::Upstream u;
    auto base = ReadString(value, "base_url", std::nullopt, field);
    if (!base.ok()) return base.status();
    if (!(base->starts_with("http://") || base->starts_with("https://")) ||
        base->size() > 1024 ||
        base->find_first_of(" \t\r\n") != std::string::npos) {
      return Status::BadRequest(field +
                                ".base_url: must be an http:// or https:// URL");
    }
    u.base_url = *base;
    while (u.base_url.size() > 8 && u.base_url.back() == '/')
      u.base_url.pop_back();
    auto env = ReadString(value, "api_key_env", std::string(), field);
    if (!env.ok()) return env.status();
    if (env->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      return Status::BadRequest(field +
                                ".api_key_env: must be an environment "
                                "variable's name");
    }
    u.api_key_env = *env;
    f->upstreams[name] = std::move(u);
  }
  if (f->upstreams.empty()) {
    return Status::BadRequest("http.upstreams: names none (openai, anthropic)");
  }
  return Status::Ok();
}

Status ReadKeys(const json& http, front::FrontConfig* f) {
  auto it = http.find("keys");
  if (it == http.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Status::BadRequest("http.keys: must be an object");
  for (const auto& [key, value] : it->items()) {
    // Keys are secrets: messages name them by position, not by value.
    const std::string field =
        "http.keys[" + std::to_string(f->keys.size()) + "]";
    if (key.size() < 8 || key.size() > 256 ||
        key.find_first_of(" \t\r\n,") != std::string::npos) {
      return Status::BadRequest(field +
                                ": a key must be 8 to 256 bytes, no spaces");
    }
    if (!value.is_object()) return Status::BadRequest(field + ": must be an object");
    if (Status s = OnlyKnown(value, field, "user"); !s.ok()) return s;
    auto user = ReadName(value, "user", true, field);
    if (!user.ok()) return user.status();
    f->keys[key] = front::KeyIdentity{*user};
  }
  return Status::Ok();
}

}  // namespace

Status ReadFront(const json& file, Config* c) {
  auto it = file.find("http");
  if (it == file.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Status::BadRequest("http: must be an object");
  const json& http = *it;
  if (Status s = OnlyKnown(
          http, "http",
          "listen|upstreams|keys|default_max_tokens|wait_ms|max_header_bytes|"
          "max_body_bytes|header_timeout_ms|idle_timeout_ms|"
          "upstream_connect_timeout_ms|upstream_timeout_ms|max_connections");
      !s.ok()) {
    return s;
  }
  front::FrontConfig f;
  if (Status s = ReadListen(http, &f); !s.ok()) return s;
  if (Status s = ReadUpstreams(http, &f); !s.ok()) return s;
  if (Status s = ReadKeys(http, &f); !s.ok()) return s;
  struct IntField {
    const char* name;
    int64_t min, max;
    int64_t* value;
  };
  const IntField ints[] = {
      {"default_max_tokens", 1, 10'000'000, &f.default_max_tokens},
      {"wait_ms", 0, front::kMaxWaitMs, &f.wait_ms},
      {"max_header_bytes", 1024, 1 << 20, &f.max_header_bytes},
      {"max_body_bytes", 1024, 1 << 30, &f.max_body_bytes},
      {"header_timeout_ms", 100, 3'600'000, &f.header_timeout_ms},
      {"idle_timeout_ms", 100, 86'400'000, &f.idle_timeout_ms},
      {"upstream_connect_timeout_ms", 100, 600'000,
       &f.upstream_connect_timeout_ms},
      {"upstream_timeout_ms", 100, 86'400'000, &f.upstream_timeout_ms},
      {"max_connections", 1, 1'000'000, &f.max_connections},
  };
  for (const IntField& i : ints) {
    auto v = ReadInt(http, i.name, i.min, i.max, *i.value, "http");
    if (!v.ok()) return v.status();
    *i.value = *v;
  }
  c->http = std::move(f);
  return Status::Ok();
}

}  // namespace brake
