// Human output of brakectl: one renderer per reply shape, each turning a
// successful ("ok": true) daemon reply into aligned text.
//
// Renderers never fail: a missing or mistyped field prints as "-", so a newer
// daemon with extra fields, or an older one with fewer, still renders. They
// see the request as well, for labels the reply does not repeat (e.g. the
// grouping of `usage`). Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace brake::ctl {

// "PONG (braked 0.1.0)"
void RenderPing(const nlohmann::json& request, const nlohmann::json& reply,
                std::ostream& out);
// "OK": for ops whose reply carries nothing else; "OK (already settled)"
// when it says "duplicate": true (a cancel after settlement).
void RenderOk(const nlohmann::json& request, const nlohmann::json& reply,
              std::ostream& out);
// "OK", or "no policy for SCOPE" when the reply says "deleted": false.
void RenderDeleted(const nlohmann::json& request, const nlohmann::json& reply,
                   std::ostream& out);
// Granted: "lease <id>" on the first line, then waited_ms and extras.
// Denied: "denied <reason>", scope, limit, retry_after_ms ("never" if null),
// cause.
void RenderAcquire(const nlohmann::json& request, const nlohmann::json& reply,
                   std::ostream& out);
// charged_tokens, charged_usd, and "duplicate true" on a repeated commit.
void RenderCommit(const nlohmann::json& request, const nlohmann::json& reply,
                  std::ostream& out);
// Scope, limits table, spend and reserved lines, breakers table.
void RenderStatus(const nlohmann::json& request, const nlohmann::json& reply,
                  std::ostream& out);
// The policy's limits table and breaker settings.
void RenderPolicyGet(const nlohmann::json& request, const nlohmann::json& reply,
                     std::ostream& out);
// One line per scope with its limit names.
void RenderPolicyList(const nlohmann::json& request,
                      const nlohmann::json& reply, std::ostream& out);
// The "breakers" array as a table.
void RenderBreakers(const nlohmann::json& request, const nlohmann::json& reply,
                    std::ostream& out);
// The "rows" array of a usage report as a table, with a total line.
void RenderUsage(const nlohmann::json& request, const nlohmann::json& reply,
                 std::ostream& out);
// The "rows" of a `top` reply as a table, busiest first.
void RenderTopRows(const nlohmann::json& request, const nlohmann::json& reply,
                   std::ostream& out);
// cluster.status: this node, its link, every node's entry, this node's
// shares (render_cluster.cc).
void RenderCluster(const nlohmann::json& request, const nlohmann::json& reply,
                   std::ostream& out);
// The "text" field unchanged (Prometheus exposition).
void RenderMetrics(const nlohmann::json& request, const nlohmann::json& reply,
                   std::ostream& out);

}  // namespace brake::ctl
