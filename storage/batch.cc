// Batch bookkeeping (declared in common/records.h). Lives in storage/ because
// the Store defines what a Batch means when applied.

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/records.h"

namespace brake {
namespace {

template <typename T>
void MoveAppend(std::vector<T>* to, std::vector<T>* from) {
  if (to->empty()) {
    std::swap(*to, *from);  // from gets our room (Batch::Append clears it)
    return;
  }
  to->insert(to->end(), std::make_move_iterator(from->begin()),
             std::make_move_iterator(from->end()));
}

// Inside one Batch deletes run before puts, so a put of ours followed by a
// delete in `deleted` (a later batch) would survive the merge if kept: drop
// it. A put in the later batch still runs after the merged deletes.
// A "KIND:*" delete covers every key of that kind.
template <typename Puts, typename KeyOf>
void DropPutsOf(const std::vector<std::string>& deleted, Puts* puts,
                KeyOf key_of) {
  if (deleted.empty() || puts->empty()) return;
  const std::unordered_set<std::string_view> keys(deleted.begin(),
                                                  deleted.end());
  auto covered = [&](const auto& row) {
    const std::string_view key = key_of(row);
    if (keys.count(key)) return true;
    size_t colon = key.find(':');
    return colon != std::string_view::npos &&
           keys.count(std::string(key.substr(0, colon + 1)) + "*") > 0;
  };
  if constexpr (requires { puts->EraseIf(covered); }) {
    puts->EraseIf(covered);  // rows kept back to back (LimiterPuts)
  } else {
    std::erase_if(*puts, covered);
  }
}

}  // namespace

bool Batch::empty() const {
  return policies_put.empty() && policies_deleted.empty() &&
         tasks_put.empty() && limiters_put.empty() &&
         limiter_scopes_deleted.empty() && spend_put.empty() &&
         spend_deleted.empty() && leases_put.empty() &&
         leases_deleted.empty() && breakers_put.empty() &&
         breakers_deleted.empty() && prices_put.empty() &&
         ledger_append.empty();
}

void Batch::Clear() {
  seq = 0;
  policies_put.clear();
  policies_deleted.clear();
  tasks_put.clear();
  limiters_put.clear();
  limiter_scopes_deleted.clear();
  spend_put.clear();
  spend_deleted.clear();
  leases_put.clear();
  leases_deleted.clear();
  breakers_put.clear();
  breakers_deleted.clear();
  prices_put.clear();
  ledger_append.clear();
}

size_t Batch::capacity_bytes() const {
  auto room = [](const auto& v) {
    return v.capacity() * sizeof(typename std::decay_t<decltype(v)>::value_type);
  };
  return room(policies_put) + room(policies_deleted) + room(tasks_put) +
         limiters_put.capacity_bytes() + room(limiter_scopes_deleted) + spend_put.capacity_bytes() +
         room(spend_deleted) + leases_put.capacity_bytes() +
         leases_deleted.capacity_bytes() + room(breakers_put) +
         room(breakers_deleted) + room(prices_put) +
         ledger_append.capacity_bytes();
}

void Batch::Append(Batch&& other) {
  seq = std::max(seq, other.seq);

  DropPutsOf(other.policies_deleted, &policies_put,
             [](const PolicyRow& r) -> const std::string& { return r.scope; });
  DropPutsOf(other.limiter_scopes_deleted, &limiters_put,
             [](const LimiterView& r) { return r.scope; });
  DropPutsOf(other.spend_deleted, &spend_put,
             [](const SpendView& r) { return r.scope; });
  DropPutsOf(other.breakers_deleted, &breakers_put,
             [](const BreakerRow& r) -> const std::string& { return r.scope; });
  // Lease rows live in one string (LeasePuts), not a vector of rows, and a
  // lease id names no kind: a later delete drops exactly its ids.
  if (!other.leases_deleted.empty() && !leases_put.empty()) {
    const std::unordered_set<std::string_view> ids(
        other.leases_deleted.begin(), other.leases_deleted.end());
    leases_put.EraseIf(
        [&](const LeasePuts::Row& r) { return ids.count(r.id) > 0; });
  }

  MoveAppend(&policies_put, &other.policies_put);
  MoveAppend(&policies_deleted, &other.policies_deleted);
  MoveAppend(&tasks_put, &other.tasks_put);
  limiters_put.Append(std::move(other.limiters_put));
  MoveAppend(&limiter_scopes_deleted, &other.limiter_scopes_deleted);
  spend_put.Append(std::move(other.spend_put));
  MoveAppend(&spend_deleted, &other.spend_deleted);
  leases_put.Append(std::move(other.leases_put));
  leases_deleted.Append(std::move(other.leases_deleted));
  MoveAppend(&breakers_put, &other.breakers_put);
  MoveAppend(&breakers_deleted, &other.breakers_deleted);
  MoveAppend(&prices_put, &other.prices_put);
  ledger_append.Append(std::move(other.ledger_append));
  other.Clear();  // its room stays with it (StorageWorker keeps spares)
}

}  // namespace brake
