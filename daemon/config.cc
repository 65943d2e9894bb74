#include "daemon/config.h"

#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "common/json_error.h"
#include "daemon/json_fields.h"
#include "daemon/policy_codec.h"

namespace brake {

// The `http` object (config_front.cc).
Status ReadFront(const nlohmann::json& file, Config* c);

namespace {

// One setting: how to read it from the file into a Config, and its contract.
struct Setting {
  const char* name;
  const char* type;
  const char* default_text;
  bool reloadable;
  const char* doc;
  std::function<Status(const json& file, Config* c)> read;
  std::function<bool(const Config& a, const Config& b)> same;
};

Status ReadIntInto(const json& file, const char* key, int64_t min, int64_t max,
                   int64_t* out) {
  auto v = ReadInt(file, key, min, max, *out);
  if (!v.ok()) return v.status();
  *out = *v;
  return Status::Ok();
}

#define INT_SETTING(field, min, max, def, reload, doc)                       \
  Setting {                                                                  \
    #field, "integer [" #min ", " #max "]", #def, reload, doc,               \
        [](const json& f, Config* c) {                                       \
          return ReadIntInto(f, #field, min, max, &c->field);                \
        },                                                                   \
        [](const Config& a, const Config& b) { return a.field == b.field; } \
  }

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> kSettings = {
      Setting{"admin_uids", "array of uids", "[]", true,
              "peers allowed the admin ops; the daemon's own uid always is",
              [](const json& f, Config* c) {
                auto it = f.find("admin_uids");
                if (it == f.end()) return Status::Ok();
                if (!it->is_array())
                  return Status::BadRequest("admin_uids: must be an array");
                c->admin_uids.clear();
                for (size_t i = 0; i < it->size(); ++i) {
                  const json& u = (*it)[i];
                  if (!u.is_number_integer() || u.get<int64_t>() < 0 ||
                      u.get<int64_t>() > 4294967294) {
                    return Status::BadRequest("admin_uids[" +
                                              std::to_string(i) +
                                              "]: must be a uid");
                  }
                  c->admin_uids.push_back(u.get<int64_t>());
                }
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.admin_uids == b.admin_uids;
              }},
      Setting{"socket_mode", "octal string", "\"0660\"", false,
              "permissions of the socket file",
              [](const json& f, Config* c) {
                auto s = ReadString(f, "socket_mode", "0660");
                if (!s.ok()) return s.status();
                char* end = nullptr;
                long mode = std::strtol(s->c_str(), &end, 8);
                if (s->empty() || *end != '\0' || mode < 0 || mode > 0777)
                  return Status::BadRequest(
                      "socket_mode: must be an octal mode like \"0660\"");
                c->socket_mode = mode;
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.socket_mode == b.socket_mode;
              }},
      Setting{"durability", "strict | batched", "\"strict\"", false,
              "strict: answered only once committed to disk; batched: "
              "flushed every flush_interval_ms",
              [](const json& f, Config* c) {
                auto s = ReadString(f, "durability", "strict");
                if (!s.ok()) return s.status();
                if (*s == "strict") {
                  c->durability = Durability::kStrict;
                } else if (*s == "batched") {
                  c->durability = Durability::kBatched;
                } else {
                  return Status::BadRequest(
                      "durability: must be strict or batched");
                }
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.durability == b.durability;
              }},
      INT_SETTING(flush_interval_ms, 1, 10000, 10, false,
                  "batched durability: the most a crash can lose, in ms"),
      INT_SETTING(lease_ttl_ms, 1000, 604800000, 600000, true,
                  "a lease not settled within this is settled at its "
                  "estimate"),
      INT_SETTING(max_line_bytes, 1024, 16777216, 65536, true,
                  "longest request line; longer gets line_too_long and the "
                  "connection is closed"),
      INT_SETTING(max_connections, 1, 1000000, 4096, true,
                  "connections beyond this get too_many_connections"),
      INT_SETTING(max_waiters_per_scope, 1, 1000000, 1000, false,
                  "waiting acquires bound by one scope (and held by one "
                  "user); beyond that queue_full"),
      INT_SETTING(partial_line_timeout_ms, 100, 3600000, 10000, true,
                  "a connection holding an incomplete request line longer "
                  "than this is closed (slowloris); a closed one whose "
                  "client has not read its last replies by then is dropped"),
      INT_SETTING(subject_idle_ms, 0, 2592000000, 3600000, true,
                  "a subject unused this long leaves memory (its state "
                  "stays stored and is loaded on its next use); 0 keeps "
                  "every subject in memory"),
      INT_SETTING(max_subjects, 1000, 1000000000, 2000000, true,
                  "subjects held in memory at most: above 90% idle ones "
                  "are evicted early; at the cap an acquire for a new "
                  "subject is refused unavailable"),
      INT_SETTING(max_open_leases, 1000, 1000000000, 1000000, true,
                  "leases open at once at most (each holds its reservation "
                  "and about 700 bytes until settled or expired); at the "
                  "cap an acquire that would be granted is refused "
                  "unavailable"),
      INT_SETTING(top_max_subjects, 1, 1000000, 10000, false,
                  "users, tasks and resources each tracked for the top op; "
                  "when full the least active makes room"),
      INT_SETTING(metrics_top_users, 0, 1000, 10, true,
                  "the busiest users get per-user series in metrics "
                  "(brake_user_*); 0: none"),
      Setting{"uid_users", "object uid -> [user...]", "{}", true,
              "restricts a peer uid to acting as the listed users; uids "
              "not listed may act as nobody (admins are unrestricted)",
              [](const json& f, Config* c) {
                auto it = f.find("uid_users");
                if (it == f.end()) return Status::Ok();
                if (!it->is_object())
                  return Status::BadRequest("uid_users: must be an object");
                c->uid_users.clear();
                for (const auto& [uid_text, users] : it->items()) {
                  std::string field = "uid_users." + uid_text;
                  char* end = nullptr;
                  long long uid = std::strtoll(uid_text.c_str(), &end, 10);
                  if (uid_text.empty() || *end != '\0' || uid < 0 ||
                      uid > 4294967294LL)
                    return Status::BadRequest(field + ": key must be a uid");
                  if (!users.is_array())
                    return Status::BadRequest(field +
                                              ": must be an array of users");
                  std::set<std::string>& allowed = c->uid_users[uid];
                  for (const json& u : users) {
                    if (!u.is_string())
                      return Status::BadRequest(field +
                                                ": users must be strings");
                    if (Status s = ValidateName(u.get<std::string>(), field);
                        !s.ok())
                      return s;
                    allowed.insert(u.get<std::string>());
                  }
                }
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.uid_users == b.uid_users;
              }},
      INT_SETTING(max_output_bytes, 65536, 1073741824, 16777216, true,
                  "replies a connection may hold (unsent or unread) before "
                  "it is closed at once, discarding them"),
      Setting{"on_storage_error", "closed | open", "\"closed\"", true,
              "closed: acquires answer unavailable while storage fails; "
              "open: they are let through and logged",
              [](const json& f, Config* c) {
                auto s = ReadString(f, "on_storage_error", "closed");
                if (!s.ok()) return s.status();
                if (*s != "closed" && *s != "open")
                  return Status::BadRequest(
                      "on_storage_error: must be closed or open");
                c->fail_open = *s == "open";
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.fail_open == b.fail_open;
              }},
      Setting{"metrics_listen", "host:port", "none", false,
              "serve GET /metrics (Prometheus text) over HTTP on HOST:PORT",
              [](const json& f, Config* c) {
                auto s = ReadString(f, "metrics_listen", "");
                if (!s.ok()) return s.status();
                c->metrics_listen = *s;
                return Status::Ok();
              },
              [](const Config& a, const Config& b) {
                return a.metrics_listen == b.metrics_listen;
              }},
  };
  return kSettings;
}

// The `cluster` object: where Redis is, this node's name, the key prefix and
// what to do while Redis is away.
Status ReadCluster(const json& file, Config* c) {
  auto it = file.find("cluster");
  if (it == file.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Status::BadRequest("cluster: must be an object");
  for (const auto& [key, value] : it->items()) {
    if (key != "redis" && key != "node" && key != "prefix" &&
        key != "on_unavailable") {
      return Status::BadRequest("cluster." + key +
                                ": unknown setting (redis, node, prefix, "
                                "on_unavailable)");
    }
  }
  cluster::ClusterConfig cc;
  auto redis = ReadString(*it, "redis", std::nullopt, "cluster");
  if (!redis.ok()) return redis.status();
  auto target = cluster::ParseRedisTarget(*redis, "cluster.redis");
  if (!target.ok()) return target.status();
  cc.redis = std::move(*target);
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "node");
  }
  auto node = ReadString(*it, "node", std::string(host), "cluster");
  if (!node.ok()) return node.status();
  if (Status s = ValidateName(*node, "cluster.node"); !s.ok()) return s;
  cc.node = *node;
  auto prefix = ReadString(*it, "prefix", std::string("brake:"), "cluster");
  if (!prefix.ok()) return prefix.status();
  if (prefix->empty() || prefix->size() > 64 ||
      prefix->find_first_of(" \t\r\n|") != std::string::npos) {
    return Status::BadRequest(
        "cluster.prefix: must be 1 to 64 bytes without spaces or '|'");
  }
  cc.prefix = *prefix;
  auto mode = ReadString(*it, "on_unavailable", std::string("closed"), "cluster");
  if (!mode.ok()) return mode.status();
  if (*mode == "closed") {
    cc.on_unavailable = cluster::OnUnavailable::kClosed;
  } else if (*mode == "local") {
    cc.on_unavailable = cluster::OnUnavailable::kLocal;
  } else {
    return Status::BadRequest("cluster.on_unavailable: must be closed or local");
  }
  c->cluster = std::move(cc);
  return Status::Ok();
}

Status ReadPolicies(const json& file, Config* c) {
  auto it = file.find("policies");
  if (it == file.end()) return Status::Ok();
  if (!it->is_object()) {
    return Status::BadRequest("policies: must be an object");
  }
  for (const auto& [scope, value] : it->items()) {
    std::string field = "policies." + scope;
    if (Status s = ValidateScope(scope, field); !s.ok()) return s;
    auto policy = ParsePolicy(value, field);
    if (!policy.ok()) return policy.status();
    if (Status s = CheckPolicyScope(scope, *policy, field); !s.ok()) return s;
    if (c->cluster) {
      if (Status s = CheckClusterPolicy(*policy, field); !s.ok()) return s;
    }
    c->policies[scope] = std::move(*policy);
  }
  return Status::Ok();
}

Status ReadPrices(const json& file, Config* c) {
  auto it = file.find("prices");
  if (it == file.end()) return Status::Ok();
  if (!it->is_object()) return Status::BadRequest("prices: must be an object");
  for (const auto& [model, value] : it->items()) {
    std::string field = "prices." + model;
    if (Status s = ValidateModel(model, field); !s.ok()) return s;
    if (!value.is_object()) {
      return Status::BadRequest(field + ": must be an object");
    }
    auto in = ReadNumber(value, "input_usd_per_mtok", 0, 1e6, std::nullopt,
                         field);
    if (!in.ok()) return in.status();
    auto out = ReadNumber(value, "output_usd_per_mtok", 0, 1e6, std::nullopt,
                          field);
    if (!out.ok()) return out.status();
    c->prices[model] = Price{UsdToNano(*in), UsdToNano(*out)};
  }
  return Status::Ok();
}

}  // namespace

Result<Config> ParseConfig(const std::string& text) {
  json file = json::parse(text, nullptr, /*allow_exceptions=*/false,
                          /*ignore_comments=*/true);
  if (file.is_discarded()) {
    return Status(ErrorCode::kBadJson,
                  "config: not valid JSON" +
                      WhereJsonFails<json>(text, /*ignore_comments=*/true));
  }
  if (!file.is_object()) {
    return Status::BadRequest("config: must be a JSON object");
  }
  Config config;
  for (const auto& [key, value] : file.items()) {
    bool known = key == "policies" || key == "prices" || key == "cluster" ||
                 key == "http";
    for (const Setting& s : Settings()) known = known || key == s.name;
    if (!known) return Status::BadRequest(key + ": unknown setting");
  }
  for (const Setting& s : Settings()) {
    if (Status st = s.read(file, &config); !st.ok()) return st;
  }
  if (Status s = ReadCluster(file, &config); !s.ok()) return s;
  if (Status s = ReadFront(file, &config); !s.ok()) return s;
  if (Status s = ReadPolicies(file, &config); !s.ok()) return s;
  if (Status s = ReadPrices(file, &config); !s.ok()) return s;
  return config;
}

Result<Config> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::BadRequest("config: cannot read " + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto config = ParseConfig(ss.str());
  if (!config.ok()) {
    return Status(config.status().code(),
                  path + ": " + config.status().message());
  }
  return config;
}

std::vector<std::string> FixedSettingsChanged(const Config& a,
                                              const Config& b) {
  std::vector<std::string> changed;
  for (const Setting& s : Settings()) {
    if (!s.reloadable && !s.same(a, b)) changed.push_back(s.name);
  }
  if (a.cluster != b.cluster) changed.push_back("cluster");
  if (a.http.has_value() != b.http.has_value() ||
      (a.http && front::RestartNeeded(*a.http, *b.http))) {
    changed.push_back("http");
  }
  return changed;
}

std::string ConfigHelp() {
  std::string out;
  for (const Setting& s : Settings()) {
    out += s.name;
    out += "  (";
    out += s.type;
    out += ", default ";
    out += s.default_text;
    out += s.reloadable ? ", reloadable)\n    " : ", restart to change)\n    ";
    out += s.doc;
    out += "\n";
  }
  out +=
      "policies  (object SCOPE -> {limits, breaker}, reloadable)\n"
      "prices    (object MODEL -> {input_usd_per_mtok, output_usd_per_mtok}, "
      "reloadable)\n"
      "    MODEL \"*\" prices a call that names no model; without it such a "
      "call under a usd limit is refused (bad_request, model)\n"
      "cluster   (object {redis, node, prefix, on_unavailable}, restart to "
      "change)\n"
      "    share every limit with the daemons of the same prefix through "
      "Redis: redis unix:/PATH or tcp:HOST:PORT; node defaults to the host "
      "name, prefix to brake:, on_unavailable to closed (or local); see "
      "docs/CLUSTER.md\n"
      "http      (object {listen, upstreams, keys, default_max_tokens, ...}, "
      "restart to change)\n"
      "    serve the OpenAI-compatible front on listen HOST:PORT: agents point "
      "their SDK's base URL at it; keys, default_max_tokens and wait_ms are reloaded "
      "on SIGHUP; see docs/FRONT.md\n";
  return out;
}

}  // namespace brake
