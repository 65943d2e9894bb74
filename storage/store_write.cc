// What a batch writes: Store::Impl's statements, prepared at open, and
// the rows of a batch in Apply's transaction.
#include <string>
#include <string_view>
#include <utility>

#include "storage/int_list.h"
#include "storage/store_impl.h"
#include "storage/subjects.h"

namespace brake {

using storage::Statement;

Status Store::Impl::PrepareAll() {
  const std::pair<Statement*, const char*> table[] = {
      {&begin, "BEGIN IMMEDIATE"},
      {&commit, "COMMIT"},
      {&policy_delete, "DELETE FROM policies WHERE scope = ?1"},
      {&policy_put,
       "INSERT INTO policies(scope, json) VALUES(?1, ?2) "
       "ON CONFLICT(scope) DO UPDATE SET json = excluded.json"},
      {&task_put,
       "INSERT INTO tasks(task, user, parent, created_ms) "
       "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(task) DO UPDATE SET "
       "user = excluded.user, parent = excluded.parent, "
       "created_ms = excluded.created_ms"},
      {&limiter_scope_delete, "DELETE FROM limiters WHERE scope = ?1"},
      {&limiter_kind_delete,
       "DELETE FROM limiters WHERE scope >= ?1 AND scope < ?2"},
      {&spend_delete, "DELETE FROM spend WHERE scope = ?1"},
      {&spend_kind_delete, "DELETE FROM spend WHERE scope >= ?1 AND scope < ?2"},
      {&breaker_delete, "DELETE FROM breakers WHERE scope = ?1"},
      {&breaker_put,
       "INSERT INTO breakers(scope, state) VALUES(?1, ?2) "
       "ON CONFLICT(scope) DO UPDATE SET state = excluded.state"},
      {&price_put,
       "INSERT INTO prices(model, input_nano_per_mtok, output_nano_per_mtok) "
       "VALUES(?1, ?2, ?3) ON CONFLICT(model) DO UPDATE SET "
       "input_nano_per_mtok = excluded.input_nano_per_mtok, "
       "output_nano_per_mtok = excluded.output_nano_per_mtok"},
  };
  for (const auto& [stmt, sql] : table) {
    Result<Statement> prepared = Statement::Prepare(db(), sql);
    if (!prepared.ok()) return prepared.status();
    *stmt = std::move(*prepared);
  }
  const struct {
    storage::MultiInsert* insert;
    const char* into;
    int columns;
    const char* tail;
  } inserts[] = {
      {&limiter_put, "INSERT INTO limiters(scope, name, algorithm, state)", 4,
       "ON CONFLICT(scope, name) DO UPDATE SET "
       "algorithm = excluded.algorithm, state = excluded.state"},
      {&spend_put, "INSERT INTO spend(scope, requests, tokens, usd_nano)", 4,
       "ON CONFLICT(scope) DO UPDATE SET requests = excluded.requests, "
       "tokens = excluded.tokens, usd_nano = excluded.usd_nano"},
      // A retried batch's rows are there already (same user, time and
      // lease: the key): skipped.
      {&ledger_append,
       "INSERT OR IGNORE INTO ledger(time_ms, user, task, parent, resource, "
       "model, requests, tokens, input_tokens, output_tokens, usd_nano, "
       "latency_ms, outcome, expired, lease, estimated)",
       16, ""},
  };
  for (const auto& [insert, into, columns, tail] : inserts) {
    if (Status s = insert->Prepare(db(), into, columns, tail); !s.ok()) {
      return s;
    }
  }
  return leases.Prepare(db());
}

// Runs inside Apply's transaction; stops at the first failing row.
Status Store::Impl::WriteBatch(const Batch& b) {
  Status s;
  for (const std::string& scope : b.policies_deleted) {
    policy_delete.BindText(1, scope);
    if (!(s = policy_delete.Run("delete policy", scope)).ok()) return s;
  }
  for (const PolicyRow& row : b.policies_put) {
    policy_put.BindText(1, row.scope);
    policy_put.BindText(2, row.json);
    if (!(s = policy_put.Run("put policy", row.scope)).ok()) return s;
  }
  for (const TaskRow& row : b.tasks_put) {
    task_put.BindText(1, row.task);
    task_put.BindText(2, row.user);
    task_put.BindText(3, row.parent);
    task_put.BindInt(4, row.created_ms);
    if (!(s = task_put.Run("put task", row.task)).ok()) return s;
  }
  for (const std::string& scope : b.limiter_scopes_deleted) {
    s = DeleteScope(limiter_scope_delete, limiter_kind_delete, scope,
                    "delete limiters of scope");
    if (!s.ok()) return s;
  }
  s = limiter_put.Write(
      b.limiters_put, "put limiter",
      [&](Statement& st, int first, const LimiterView& row, size_t slot) {
        storage::EncodeIntList(row.state, &state_texts[slot]);
        st.BindText(first, row.scope);
        st.BindText(first + 1, row.name);
        st.BindText(first + 2, row.algorithm);
        st.BindText(first + 3, state_texts[slot]);
      },
      [](const LimiterView& row) {
        return storage::MultiInsert::Key{row.scope, row.name};
      });
  if (!s.ok()) return s;
  for (const std::string& scope : b.spend_deleted) {
    s = DeleteScope(spend_delete, spend_kind_delete, scope, "delete spend");
    if (!s.ok()) return s;
  }
  s = spend_put.Write(
      b.spend_put, "put spend",
      [](Statement& st, int first, const SpendView& row, size_t) {
        st.BindText(first, row.scope);
        st.BindInt(first + 1, row.requests);
        st.BindInt(first + 2, row.tokens);
        st.BindInt(first + 3, row.usd_nano);
      },
      [](const SpendView& row) {
        return storage::MultiInsert::Key{row.scope, {}};
      });
  if (!s.ok()) return s;
  if (!(s = leases.Write(b.leases_deleted, b.leases_put)).ok()) return s;
  for (const std::string& scope : b.breakers_deleted) {
    breaker_delete.BindText(1, scope);
    if (!(s = breaker_delete.Run("delete breaker", scope)).ok()) return s;
  }
  for (const BreakerRow& row : b.breakers_put) {
    storage::EncodeIntList(row.state, &state_texts[0]);
    breaker_put.BindText(1, row.scope);
    breaker_put.BindText(2, state_texts[0]);
    if (!(s = breaker_put.Run("put breaker", row.scope)).ok()) return s;
  }
  for (const PriceRow& row : b.prices_put) {
    price_put.BindText(1, row.model);
    price_put.BindInt(2, row.input_nano_per_mtok);
    price_put.BindInt(3, row.output_nano_per_mtok);
    if (!(s = price_put.Run("put price", row.model)).ok()) return s;
  }
  return ledger_append.Write(
      b.ledger_append, "append ledger row",
      [](Statement& st, int first, const LedgerView& row, size_t) {
        st.BindInt(first, row.time_ms);
        st.BindText(first + 1, row.user);
        st.BindText(first + 2, row.task);
        st.BindText(first + 3, row.parent);
        st.BindText(first + 4, row.resource);
        st.BindText(first + 5, row.model);
        st.BindInt(first + 6, row.requests);
        st.BindInt(first + 7, row.tokens);
        st.BindInt(first + 8, row.input_tokens);
        st.BindInt(first + 9, row.output_tokens);
        st.BindInt(first + 10, row.usd_nano);
        st.BindInt(first + 11, row.latency_ms);
        st.BindText(first + 12, row.outcome);
        st.BindInt(first + 13, row.expired ? 1 : 0);
        st.BindText(first + 14, row.lease);
        st.BindInt(first + 15, row.estimated ? 1 : 0);
      },
      [](const LedgerView& row) {
        return storage::MultiInsert::Key{row.user, row.task};
      });
}

Status Store::Impl::DeleteScope(Statement& one, Statement& kind,
                                const std::string& scope,
                                std::string_view what) {
  std::string low, high;
  if (!storage::KindRange(scope, &low, &high)) {
    one.BindText(1, scope);
    return one.Run(what, scope);
  }
  kind.BindText(1, low);
  kind.BindText(2, high);
  return kind.Run(what, scope);
}

}  // namespace brake
