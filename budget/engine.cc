#include "budget/engine.h"
#include "budget/amounts.h"
#include "budget/token_bucket.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace brake {
namespace {

constexpr size_t kMaxTaskDepth = SubjectTable::kMaxTaskDepth;

Reason ReasonFor(const LimitSpec& spec, Verdict v) {
  if (v == Verdict::kTooLarge) return Reason::kTooLarge;
  if (v == Verdict::kHeld) return Reason::kReserved;
  switch (spec.algorithm) {
    case Algorithm::kQuota:
      return spec.resource == Resource::kUsd ? Reason::kCostCap
                                             : Reason::kQuotaExhausted;
    case Algorithm::kConcurrency: return Reason::kConcurrency;
    default:
      return spec.resource == Resource::kUsd && spec.algorithm !=
                 Algorithm::kTokenBucket
                 ? Reason::kCostCap
                 : Reason::kRateLimited;
  }
}

// Limiter::Check and Charge, called directly (and inlined) for a token
// bucket, the usual limit. `spec` is the limit `l` was made from: Resolve
// makes a subject's limiter i one of its policy's limit i's algorithm.
// `plain`: every limiter is MakeLimiter's (not cluster mode's wrappers).
Decision CheckLimit(Limiter& l, const LimitSpec& spec, int64_t amount,
                    int64_t now_us, bool plain) {
  if (plain && spec.algorithm == Algorithm::kTokenBucket) {
    return static_cast<TokenBucket&>(l).Check(amount, now_us);
  }
  return l.Check(amount, now_us);
}

void ChargeLimit(Limiter& l, const LimitSpec& spec, int64_t amount,
                 int64_t now_us, bool plain) {
  if (plain && spec.algorithm == Algorithm::kTokenBucket) {
    static_cast<TokenBucket&>(l).Charge(amount, now_us);
  } else {
    l.Charge(amount, now_us);
  }
}

// Limiter::Remaining, the same way.
int64_t RemainingOf(Limiter& l, const LimitSpec& spec, int64_t now_us,
                    bool plain) {
  if (plain && spec.algorithm == Algorithm::kTokenBucket) {
    return static_cast<TokenBucket&>(l).StoredPermits(now_us);
  }
  return l.Remaining(now_us);
}

// The member of `left` for a limit of `resource`, and its capacity's.
std::pair<std::optional<int64_t>*, int64_t*> SlotOf(Resource resource,
                                                   Remaining* left) {
  switch (resource) {
    case Resource::kRequests:
      return {&left->requests, &left->requests_capacity};
    case Resource::kTokens:
      return {&left->tokens, &left->tokens_capacity};
    case Resource::kUsd:
      break;
  }
  return {&left->usd_nano, &left->usd_capacity_nano};
}

}  // namespace

std::string_view ReasonName(Reason r) {
  switch (r) {
    case Reason::kRateLimited: return "rate_limited";
    case Reason::kQuotaExhausted: return "quota_exhausted";
    case Reason::kCostCap: return "cost_cap";
    case Reason::kBreakerOpen: return "breaker_open";
    case Reason::kConcurrency: return "concurrency";
    case Reason::kQueueFull: return "queue_full";
    case Reason::kTimeout: return "timeout";
    case Reason::kTooLarge: return "too_large";
    case Reason::kReserved: return "reserved";
  }
  return "rate_limited";
}

Engine::Engine(std::string lease_prefix, int64_t lease_ttl_us)
    : lease_ttl_us_(lease_ttl_us), leases_(std::move(lease_prefix)) {}

Engine::~Engine() = default;

void Engine::SetPolicy(const std::string& scope, Policy policy) {
  policy.shared.clear();
  for (const LimitSpec& spec : policy.limits) {
    policy.shared.push_back(std::make_shared<const LimitSpec>(spec));
  }
  policies_[scope] = std::move(policy);
  dirty_.MarkPolicy(scope);
  ++mutations_;
  FindDefaults();
}

bool Engine::DeletePolicy(const std::string& scope) {
  if (policies_.erase(scope) == 0) return false;
  dirty_.MarkPolicy(scope);
  ++mutations_;
  FindDefaults();
  return true;
}

void Engine::FindDefaults() {
  BumpLimitsGen();  // policies changed: subjects resolve theirs again
  usd_limits_ = 0;
  for (const auto& [scope, policy] : policies_) {
    for (const LimitSpec& spec : policy.limits) {
      if (spec.resource == Resource::kUsd) ++usd_limits_;
    }
  }
  default_user_ = GetPolicy("user:*");
  default_task_ = GetPolicy("task:*");
  default_resource_ = GetPolicy("resource:*");
}

const Policy* Engine::GetPolicy(const std::string& scope) const {
  auto it = policies_.find(scope);
  return it == policies_.end() ? nullptr : &it->second;
}

void Engine::SetPrice(const std::string& model, Price price) {
  prices_[model] = price;
  dirty_.MarkPrice(model);
  ++mutations_;
}

const Price* Engine::GetPrice(std::string_view model) const {
  auto it = prices_.find(model);
  return it == prices_.end() ? nullptr : &it->second;
}

const LimitSpec* Engine::FindLimit(const std::string& scope,
                                   const std::string& name) const {
  const Policy* policy = PolicyFor(scope);
  if (policy == nullptr) return nullptr;
  for (const LimitSpec& spec : policy->limits)
    if (spec.name == name) return &spec;
  return nullptr;
}

const Policy* Engine::PolicyFor(const std::string& scope) const {
  if (const Policy* p = GetPolicy(scope)) return p;
  std::string_view s = scope;
  if (s.starts_with("user:")) return default_user_;
  if (s.starts_with("task:")) return default_task_;
  if (s.starts_with("resource:")) return default_resource_;
  return nullptr;
}

Totals Engine::SpendOf(const std::string& scope) const {
  const SubjectEntry* e = subjects_.find(scope);
  return e == nullptr ? Totals{} : e->second.spend;
}

std::string Engine::TaskOwner(const std::string& task) const {
  const TaskInfo* t = subjects_.FindTask(task);
  return t == nullptr ? "" : t->user;
}

Status Engine::ScopesFor(const AcquireRequest& req,
                         std::vector<std::string>* scopes) const {
  // Fills the vector's existing strings, keeping their capacity.
  size_t n = 0;
  auto put = [&](std::string_view prefix, const std::string& name) {
    if (n == scopes->size()) scopes->emplace_back();
    (*scopes)[n++].assign(prefix).append(name);
  };
  put("global", "");
  put("user:", req.user);
  put("task:", req.task);
  // Ancestors: the recorded parent chain, or for a new task the named parent.
  const std::string* parent = &req.parent;
  if (const TaskInfo* known = subjects_.FindTask(req.task)) parent = &known->parent;
  while (!parent->empty()) {
    if (n - 3 >= kMaxTaskDepth) {
      scopes->resize(n);
      return Status::BadRequest("parent: task tree deeper than " +
                                std::to_string(kMaxTaskDepth));
    }
    put("task:", *parent);
    const TaskInfo* up = subjects_.FindTask(*parent);
    if (up == nullptr) break;
    parent = &up->parent;
  }
  if (!req.resource.empty()) put("resource:", req.resource);
  scopes->resize(n);
  return Status::Ok();
}

Result<AcquireOutcome> Engine::Acquire(const AcquireRequest& request,
                                       int64_t now_us) {
  AcquireOutcome out;
  if (Status s = Acquire(request, now_us, &out); !s.ok()) return s;
  return out;
}

// An acquire in four steps: the task and its parent may be used as asked
// (CheckTask), the request's cost (Estimate, and PriceUnnamed when it names
// no model), every limit of every subject (CheckLimits), and when all admit,
// the lease and its charges (Grant).
Status Engine::Acquire(const AcquireRequest& req, int64_t now_us,
                       AcquireOutcome* out) {
  out->granted = false;
  out->lease.clear();
  out->usd_nano = 0;
  out->denial = Denial{};
  out->remaining = Remaining{};
  out->shadow.clear();
  const Resident known = subjects_.AnnouncedTask(req.task);
  // When nothing was stored, nothing is missing; when the task's record
  // shows all it names in memory, neither.
  if (subjects_.AnyStored() && !subjects_.AllResident(req, known.subject)) {
    if (std::vector<std::string> missing = MissingFor(req); !missing.empty()) {
      return Status::Unavailable("subject: " + missing.front() +
                                 " is not in memory; load it first");
    }
  }
  if (Status s = CheckTask(req, known); !s.ok()) return s;
  Totals want;
  if (Status s = Estimate(req, &want); !s.ok()) return s;
  // Reused across calls: a steady state allocates nothing for it.
  std::vector<Resident>& subjects = scratch_subjects_;
  if (Status s = subjects_.UseRequestSubjects(req, known, now_us, &subjects);
      !s.ok()) {
    return s;
  }
  std::string_view model = req.model;
  if (model.empty() && req.tokens > 0 && usd_limits_ > 0) {
    if (Status s = PriceUnnamed(req, now_us, &want, &model); !s.ok()) return s;
  }
  size_t limit_count = 0;
  if (!CheckLimits(subjects, want, now_us, out, &limit_count)) {
    return Status::Ok();  // refused: out->denial says why
  }
  if (req.dry_run) {
    out->granted = true;
    return Status::Ok();
  }
  if (static_cast<int64_t>(leases_.open()) >= max_open_leases_) {
    // Nothing was charged yet: refused whole, like any error.
    ++lease_cap_refusals_;
    return Status::Unavailable(
        "lease: " + std::to_string(leases_.open()) +
        " leases are open (max_open_leases); commit or cancel some, or let "
        "them expire");
  }
  return Grant(req, model, known, want, limit_count, now_us, out);
}

// A known task is the request's user's, and keeps its parent; a new one
// names a parent of the same user, in memory, not itself.
// Acquire's steps are inlined into it: they are its parts, not calls.
#define BRAKE_STEP [[gnu::always_inline]] inline

BRAKE_STEP Status Engine::CheckTask(const AcquireRequest& req,
                                    Resident known) const {
  if (known.subject != nullptr) {
    const TaskInfo& task = known.subject->task;
    if (!subjects_.OwnedBy(*known.subject, req.user)) {
      return Status(ErrorCode::kForbidden,
                    "task: " + req.task + " belongs to another user");
    }
    if (!req.parent.empty() && req.parent != task.parent) {
      return Status::BadRequest("parent: task " + req.task + " already has " +
                                (task.parent.empty()
                                     ? std::string("no parent")
                                     : "parent " + task.parent));
    }
    return Status::Ok();
  }
  if (req.parent.empty()) return Status::Ok();
  if (req.parent == req.task) {
    return Status::BadRequest("parent: a task cannot be its own parent");
  }
  const TaskInfo* p = subjects_.FindTask(req.parent);
  if (p == nullptr) {
    return Status::BadRequest("parent: unknown task " + req.parent);
  }
  if (p->user != req.user) {
    return Status(ErrorCode::kForbidden,
                  "parent: task " + req.parent + " belongs to another user");
  }
  return Status::Ok();
}

// What the request reserves: its requests, its tokens, and with a model
// their cost at the dearer of the model's rates.
BRAKE_STEP Status Engine::Estimate(const AcquireRequest& req,
                                   Totals* want) const {
  *want = Totals{req.requests, req.tokens, 0};
  if (req.model.empty()) return Status::Ok();
  const Price* price = GetPrice(req.model);
  if (price == nullptr) {
    return Status::BadRequest("model: no price is set for " + req.model);
  }
  want->usd_nano = EstimateUsdNano(*price, req.tokens);
  return Status::Ok();
}

// An acquire of tokens that names no model, under a usd limit of one of its
// subjects (scratch_subjects_): priced as the unnamed model (prices["*"]) when that
// has a price, else refused, so that leaving the model out never turns a cost
// cap off. `model` becomes "*" when priced so: its lease settles at that
// price too. A shadow usd limit alone refuses nothing (it sees no spend
// without a price).
Status Engine::PriceUnnamed(const AcquireRequest& req, int64_t now_us,
                            Totals* want, std::string_view* model) {
  const std::string* capped_scope = nullptr;
  const LimitSpec* cap = nullptr;
  bool any_usd = false;
  for (const Resident& r : scratch_subjects_) {
    Subject& subject = *r.subject;
    if (subject.limits_gen != limits_gen_) Resolve(*r.scope, subject, now_us);
    if (subject.policy == nullptr) continue;
    for (const LimitSpec& spec : subject.policy->limits) {
      if (spec.resource != Resource::kUsd) continue;
      any_usd = true;
      if (cap == nullptr && !spec.shadow) {
        capped_scope = r.scope;
        cap = &spec;
      }
    }
  }
  if (!any_usd) return Status::Ok();
  if (const Price* unnamed = GetPrice(kUnnamedModel)) {
    want->usd_nano = EstimateUsdNano(*unnamed, req.tokens);
    *model = kUnnamedModel;
    return Status::Ok();
  }
  if (cap == nullptr) return Status::Ok();
  return Status::BadRequest("model: the usd limit " + cap->name + " of " +
                            *capped_scope +
                            " needs a model to price this call; name one, "
                            "or set a price for \"*\" (an unnamed model)");
}

// Checks every limit of every subject in place (the subject's policy and its
// limiters side by side, in the policy's order), counting them in
// `limit_count`. False when one refuses, with the binding denial in
// out->denial: a request is
// granted only when every limit admits, so it is the one that frees last;
// "never" binds hardest. A held cap's hint is capped by the earliest lease
// expiry (its own leases expire no sooner). Shadow limits that refuse are
// only listed.
BRAKE_STEP bool Engine::CheckLimits(const std::vector<Resident>& subjects,
                                    const Totals& want, int64_t now_us,
                                    AcquireOutcome* out,
                                    size_t* limit_count) {
  const Resident* worst = nullptr;
  const LimitSpec* worst_spec = nullptr;
  Limiter* worst_limiter = nullptr;
  Decision worst_decision;
  *limit_count = 0;
  auto rank = [](const Decision& d) {
    return d.verdict == Verdict::kTooLarge || d.retry_after_us == kNever
               ? INT64_MAX
               : d.retry_after_us;
  };

  for (const Resident& r : subjects) {
    Subject& subject = *r.subject;
    if (subject.limits_gen != limits_gen_) Resolve(*r.scope, subject, now_us);
    if (subject.policy == nullptr) continue;
    const LimitSpec* spec = subject.policy->limits.data();
    const size_t count = subject.policy->limits.size();
    const LimiterList::Ptr* limiter = subject.limiters.data();
    *limit_count += count;
    for (size_t i = 0; i < count; ++i) {
      Decision d = CheckLimit(*limiter[i], spec[i],
                              AmountFor(spec[i].resource, want), now_us,
                              !make_limiter_);
      if (d.verdict == Verdict::kAdmit) [[likely]] continue;
      if (spec[i].shadow) {
        out->shadow.push_back(*r.scope + "/" + spec[i].name);
        continue;
      }
      if (worst == nullptr || d.verdict == Verdict::kTooLarge ||
          rank(d) > rank(worst_decision)) {
        worst = &r;
        worst_spec = &spec[i];
        worst_limiter = limiter[i].get();
        worst_decision = d;
      }
      if (d.verdict == Verdict::kTooLarge) break;  // nothing binds harder
    }
    if (worst_decision.verdict == Verdict::kTooLarge) break;
  }
  if (worst == nullptr) return true;
  Refuse(*worst->scope, *worst_spec, worst_limiter, worst_decision, now_us, out);
  return false;
}

#undef BRAKE_STEP

// The denial of the limit that binds hardest: out of line, so that the
// decision's hot path (every limit admits) stays small.
void Engine::Refuse(const std::string& scope, const LimitSpec& spec,
                    Limiter* limiter, Decision decision, int64_t now_us,
                    AcquireOutcome* out) {
  const bool too_large = decision.verdict == Verdict::kTooLarge;
  Denial& denial = out->denial;
  denial.reason = ReasonFor(spec, decision.verdict);
  denial.scope = scope;
  denial.limit = spec.name;
  denial.retry_after_us = too_large ? kNever : decision.retry_after_us;
  denial.resource = spec.resource;
  denial.held = -1;
  if (spec.algorithm == Algorithm::kQuota && !too_large) {
    // A cap says what it holds and what is left (neither spent nor held),
    // so a caller can tell how far off it is.
    const LimitUsage usage = limiter->Usage(now_us);
    denial.held = usage.held;
    auto [slot, capacity] = SlotOf(spec.resource, &out->remaining);
    *slot = usage.remaining;
    *capacity = Capacity(spec);
  }
  if (decision.verdict == Verdict::kHeld) {
    // Its leases expire no later than the earliest lease does.
    const int64_t expiry = leases_.NextExpiryUs();
    if (expiry != kNever) {
      denial.retry_after_us = std::min(denial.retry_after_us,
                                       std::max<int64_t>(0, expiry - now_us));
    }
  }
}

// Opens the lease, charges every limit CheckLimits admitted under, and
// reserves `want` on each subject (scratch_subjects_, UseRequestSubjects'
// order: global, user, task, the ancestors from the parent up, the
// resource last); a new task gets its record.
Status Engine::Grant(const AcquireRequest& req, std::string_view model,
                     Resident known, const Totals& want, size_t limit_count,
                     int64_t now_us, AcquireOutcome* out) {
  const std::vector<Resident>& subjects = scratch_subjects_;
  const bool new_task = known.subject == nullptr;
  // A recycled lease object: every field is assigned, reusing its strings.
  Lease& lease = leases_.Open(sat::SatAdd(now_us, lease_ttl_us_));
  // The user, task, parent and resource are read from the keys of its
  // scopes; its text keeps the model and the fingerprint.
  lease.SetText({"", "", "", "", "", model, req.fingerprint});
  const bool has_parent =
      !(new_task ? req.parent : known.subject->task.parent).empty();
  lease.KeyFields(1, 2, has_parent ? 3 : Lease::kInText,
                  req.resource.empty()
                      ? Lease::kInText
                      : static_cast<uint32_t>(subjects.size() - 1));
  lease.requests = want.requests;
  lease.tokens = want.tokens;
  lease.usd_nano = want.usd_nano;
  lease.granted_at_us = now_us;
  // The subjects' own keys: each stays in memory while the lease is open.
  lease.scopes.resize(subjects.size());
  for (size_t i = 0; i < subjects.size(); ++i) {
    lease.scopes[i] = subjects[i].scope;
  }
  lease.reserved = static_cast<uint32_t>(subjects.size());
  lease.charges.resize(limit_count);
  LeaseCharge* charge = lease.charges.data();
  for (uint32_t n = 0; n < subjects.size(); ++n) {
    const Subject& subject = *subjects[n].subject;
    if (subject.policy == nullptr) continue;
    const LimitSpec* spec = subject.policy->limits.data();
    const size_t count = subject.policy->limits.size();
    for (size_t i = 0; i < count; ++i, ++charge) {
      Limiter* limiter = subject.limiters[static_cast<uint32_t>(i)].get();
      int64_t amount = AmountFor(spec[i].resource, want);
      ChargeLimit(*limiter, spec[i], amount, now_us, !make_limiter_);
      charge->scope = n;
      charge->limit.assign(spec[i].name);
      charge->resource = spec[i].resource;
      charge->amount = amount;
      charge->limiter = limiter;
      if (spec[i].shadow) continue;
      auto [slot, capacity] = SlotOf(spec[i].resource, &out->remaining);
      int64_t remaining =
          RemainingOf(*limiter, spec[i], now_us, !make_limiter_);
      if (!*slot || remaining < **slot) {
        *slot = remaining;
        *capacity = Capacity(spec[i]);
      }
    }
  }
  for (const Resident& r : subjects) {
    ++r.subject->leases;
    AddTotals(r.subject->reserved, want, 1);
    if (!r.subject->limiters.empty()) dirty_.MarkLimiters(r);
  }
  if (new_task) {  // subjects[2] is the task's
    subjects_.SetTaskRecord(*subjects[2].subject,
                            TaskInfo{req.parent, req.user, now_us / 1000});
    dirty_.MarkTask(subjects[2]);
  }
  ++mutations_;
  out->granted = true;
  out->usd_nano = want.usd_nano;
  leases_.IdOf(lease, &out->lease);
  return Status::Ok();
}

}  // namespace brake
