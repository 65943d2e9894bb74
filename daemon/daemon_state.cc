// The daemon's state in and out of the database: restoring at startup,
// reads answered later on the storage thread (usage, loading subjects), and
// evicting idle subjects.
#include <malloc.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/json_fields.h"
#include "daemon/lease_codec.h"
#include "daemon/policy_codec.h"
#include "daemon/replies.h"

namespace brake {
namespace {

// Subject table slots examined for eviction per housekeeping tick (between
// a quarter and half of them hold a subject): a million subjects are swept
// in about 25 s, a few hundred microseconds per tick.
constexpr size_t kEvictScanPerTick = 8192;
constexpr size_t kTrimAfterEvictions = 1024;
constexpr size_t kEvictScanPressed = 131072;

}  // namespace

Status Daemon::Restore(const Snapshot& snapshot, Store& store) {
  for (const PolicyRow& row : snapshot.policies) {
    auto policy = ParsePolicyText(row.json);
    if (!policy.ok()) {
      return Status::Unavailable("storage: stored policy of " + row.scope +
                                 " is invalid: " + policy.status().message());
    }
    dispatcher_->decider()->SetPolicy(row.scope, std::move(*policy));
  }
  for (const PriceRow& row : snapshot.prices) {
    engine_->SetPrice(row.model,
                      Price{row.input_nano_per_mtok, row.output_nano_per_mtok});
  }
  int64_t now = clock_.NowUs();
  // Every stored subject is "maybe stored" to the engine: its first use
  // loads it (see Engine::MissingFor).
  Result<int64_t> stored = store.CountStoredScopes();
  if (!stored.ok()) return stored.status();
  engine_->ExpectStored(static_cast<size_t>(*stored));
  Status scan = store.ForEachStoredScope(
      [this](std::string_view scope) { engine_->NoteStored(scope); });
  if (!scan.ok()) return scan;
  // "global" and the subjects of open leases stay in memory.
  std::vector<Lease> leases;
  std::vector<std::string> scopes{"global"};
  for (const LeaseRow& row : snapshot.leases) {
    auto lease = DecodeLease(row.id, row.json);
    if (!lease.ok()) return lease.status();
    for (uint32_t i = 0; i < lease->reserved; ++i) {
      scopes.push_back(*lease->scopes[i]);
    }
    leases.push_back(std::move(*lease));
  }
  std::sort(scopes.begin(), scopes.end());
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
  auto rows = store.LoadSubjects(scopes);
  if (!rows.ok()) return rows.status();
  engine_->RestoreSubjects(*rows, now);
  for (Lease& lease : leases) engine_->RestoreLease(std::move(lease), now);
  for (const BreakerRow& row : snapshot.breakers) {
    dispatcher_->decider()->RestoreBreaker(row);
  }
  return Status::Ok();
}

void Daemon::Usage(uint64_t conn, nlohmann::json id, UsageQuery query) {
  Seal();  // the ledger must hold every settlement made before the question
  auto result = std::make_shared<Result<std::vector<UsageTotal>>>(
      Status::Unavailable("storage: the database cannot be read now"));
  worker_->Run(
      [query = std::move(query), result](Store& store) {
        *result = store.QueryUsage(query);
      },
      [this, conn, id = std::move(id), result] {
        if (!result->ok()) {
          server_->Resume(conn, ErrorLineWithId(id, result->status().code(),
                                                result->status().message()));
          return;
        }
        nlohmann::json rows = nlohmann::json::array();
        for (const UsageTotal& t : result->value()) {
          rows.push_back({{"key", t.key},
                          {"calls", t.calls},
                          {"requests", t.requests},
                          {"tokens", t.tokens},
                          {"input_tokens", t.input_tokens},
                          {"output_tokens", t.output_tokens},
                          {"usd", NanoToUsd(t.usd_nano)},
                          {"expired", t.expired},
                          {"estimated", t.estimated}});
        }
        server_->Resume(conn, OkLine(id, {{"rows", std::move(rows)}}));
      });
}

void Daemon::Load(uint64_t conn, nlohmann::json id,
                  std::vector<std::string> scopes, std::string request) {
  ++stats_.subject_loads;
  // Rows must be read after every change already made (a kind reset above
  // all): the storage thread runs jobs in order.
  if (engine_->kind_reset_pending()) Seal();
  const uint64_t resets = engine_->kind_resets();
  auto rows = std::make_shared<Result<SubjectRows>>(
      Status::Unavailable("storage: the database cannot be read now"));
  worker_->Run(
      [scopes = std::move(scopes), rows](Store& store) {
        *rows = store.LoadSubjects(scopes);
      },
      [this, conn, id = std::move(id), rows, resets,
       request = std::move(request)]() mutable {
        if (!rows->ok()) {
          server_->Resume(conn, ErrorLineWithId(id, rows->status().code(),
                                                rows->status().message()));
          return;
        }
        // Rows read before a kind reset are stale: handling the request
        // again loads them again.
        if (engine_->kind_resets() == resets) {
          engine_->RestoreSubjects(**rows, clock_.NowUs());
        }
        server_->Redo(conn, std::move(request));
      });
}

void Daemon::EvictIdle() {
  // Near max_subjects, anything idle since the barrier may go, and faster.
  const bool pressed = static_cast<int64_t>(engine_->resident_subjects()) >
                       config_.max_subjects / 10 * 9;
  if ((config_.subject_idle_ms <= 0 && !pressed) ||
      !dispatcher_->storage_ok()) {
    return;
  }
  const int64_t now = clock_.NowUs();
  const bool committed =
      pending_.empty() || pending_.front().first > evict_barrier_seq_;
  if (committed && evict_barrier_us_ > 0) {
    // Every change made before the barrier is committed; a subject changed
    // since was used since, so the cutoff keeps it.
    const int64_t cutoff =
        pressed ? evict_barrier_us_
                : std::min(now - config_.subject_idle_ms * 1000,
                           evict_barrier_us_);
    const size_t evicted = engine_->EvictIdle(
        now, now - cutoff, pressed ? kEvictScanPressed : kEvictScanPerTick);
    stats_.subjects_evicted += static_cast<int64_t>(evicted);
    // Their breakers too, once those hold nothing a new one would not.
    dispatcher_->decider()->DropFresh(now, kEvictScanPerTick);
    // Many small frees leave glibc's heap holding the memory; give it back.
    if (evicted >= kTrimAfterEvictions) malloc_trim(0);
  }
  if (committed) {
    Seal();
    evict_barrier_seq_ = sealed_seq_;
    evict_barrier_us_ = now;
  }
}

}  // namespace brake
