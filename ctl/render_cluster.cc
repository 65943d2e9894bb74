// brakectl cluster: cluster.status as text.
#include <string>
#include <vector>

#include "ctl/format.h"
#include "ctl/render.h"
#include "ctl/table.h"

namespace brake::ctl {

using nlohmann::json;

namespace {

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

}  // namespace

void RenderCluster(const json&, const json& reply, std::ostream& out) {
  if (FormatField(reply, "mode") != "cluster") {
    out << "single node (no cluster in braked's config)\n";
    return;
  }
  Table head;
  head.AddRow({"node", FormatField(reply, "node")});
  head.AddRow({"prefix", FormatField(reply, "prefix")});
  head.AddRow({"redis", FormatField(reply, "redis")});
  std::string link = FormatField(reply, "link");
  if (link != "up") link += " (" + FormatField(reply, "link_error") + ")";
  head.AddRow({"link", link});
  head.AddRow({"on_unavailable", FormatField(reply, "on_unavailable")});
  head.AddRow({"without redis", FormatDurationField(reply, "down_ms")});
  head.AddRow({"calls", FormatField(reply, "share_calls") + " answered, " +
                            FormatField(reply, "refills") + " refills, " +
                            FormatField(reply, "give_backs") + " give-backs, " +
                            FormatField(reply, "failed_calls") + " failed"});
  head.AddRow({"held requests", FormatField(reply, "held_requests")});
  head.AddRow({"local grants", FormatField(reply, "local_grants") + " (" +
                                   FormatField(reply, "unreported") +
                                   " units not yet counted in Redis)"});
  head.Render(out);

  out << "\nnodes\n";
  Table nodes({"NODE", "LIVE", "SEEN", "SHARES", "SHARE", "HELD", "AVAILABLE"});
  for (const json& n : Field(reply, "nodes")) {
    const std::string seen = FormatDurationField(n, "seen_ms_ago") + " ago";
    const json& held = Field(n, "held");
    if (!held.is_array() || held.empty()) {
      nodes.AddRow({FormatField(n, "node"), FormatField(n, "live"), seen,
                    FormatField(n, "shares"), "-", "-", "-"});
      continue;
    }
    bool first = true;
    for (const json& h : held) {
      nodes.AddRow({first ? FormatField(n, "node") : "",
                    first ? FormatField(n, "live") : "", first ? seen : "",
                    first ? FormatField(n, "shares") : "", FormatField(h, "key"),
                    FormatField(h, "held"), FormatField(h, "available")});
      first = false;
    }
  }
  if (nodes.empty()) {
    out << "none seen yet (each node writes its entry every second)\n";
  } else {
    nodes.Render(out);
  }

  out << "\nshares of this node\n";
  Table shares({"KEY", "KIND", "HELD", "AVAILABLE", "EXPIRES", "REMAINING",
                "NODES", "DEMAND/S"});
  for (const json& s : Field(reply, "shares")) {
    shares.AddRow({FormatField(s, "key"), FormatField(s, "kind"),
                   FormatField(s, "held"), FormatField(s, "available"),
                   FormatDurationField(s, "expires_in_ms"),
                   FormatField(s, "remaining_seen"), FormatField(s, "nodes_seen"),
                   FormatDecimal(Field(s, "demand_per_s").is_number()
                                     ? Field(s, "demand_per_s").get<double>()
                                     : 0.0)});
  }
  if (shares.empty()) {
    out << "none\n";
  } else {
    shares.Render(out);
  }
}

}  // namespace brake::ctl
