// Slice: one daemon's lease of part of a shared limit's capacity.
//
// In cluster mode a shared quota or cost cap lives in Redis as what is left
// of it. A daemon does not ask Redis per decision: it leases a slice (some
// units, until an expiry), grants reservations from the slice locally, and
// gives back what it does not use. Redis hands out only what is left and
// counts every unit of a slice until it is given back, so the sum of every
// daemon's grants never passes the cap; a slice never given back (its daemon
// died) stays counted: a death can waste capacity, never overshoot it.
//
// This is the daemon's side of one slice, pure: no IO, no clock (time is a
// parameter). SliceToAsk says how large the next lease should be: enough for
// the demand seen, and smaller as the limit nears its end, so that the last
// units are shared among the nodes rather than held by one. Loop thread only.
#pragma once

#include <cstdint>

namespace brake::cluster {

// What Redis granted: `units` more, and the slice's entry in Redis renewed
// until `expires_us` (a lease renewed moves the expiry of the whole slice).
struct SliceGrant {
  int64_t units = 0;
  int64_t expires_us = 0;
};

// How much to ask for: the units `demand_per_s` needs over `horizon_ms`, at
// least `min_units`, and never more than a 2 * `nodes`-th of `remaining`
// (what Redis says is left of the limit), so that near its end every node
// still gets a share. 0 when nothing remains. `nodes` below 1 counts as 1.
int64_t SliceToAsk(int64_t remaining, int nodes, double demand_per_s,
                   int64_t horizon_ms, int64_t min_units);
// The most one node should ask at once: a 2 * `nodes`-th of `remaining`, at
// least 1; 0 when nothing remains.
int64_t FairShare(int64_t remaining, int nodes);

class Slice {
 public:
  // Units that may be granted from the slice. Its expiry does not change
  // them: Redis counts every unit of a slice until it is given back, so
  // granting from it is safe however old it is; the expiry only says when
  // to renew its entry (which tells the other daemons it is alive).
  int64_t available() const;
  int64_t held() const { return held_; }
  int64_t used() const { return used_; }
  int64_t expires_us() const { return expires_us_; }

  // Takes `units` for a reservation when the slice holds them (true);
  // otherwise takes nothing (false): ask Redis, or refuse.
  bool Take(int64_t units);
  // Corrects a reservation settled at `delta` units more (or, negative,
  // fewer) than it took. A settlement past the slice leaves it in debt
  // (used above held): debt() says how much the next lease must cover
  // before the slice grants again.
  void Settle(int64_t delta);
  int64_t debt() const { return used_ > held_ ? used_ - held_ : 0; }

  // Adds what Redis granted and moves the expiry.
  void Add(const SliceGrant& grant);
  // Adds `units` without a lease: given-back units whose call never reached
  // Redis, or a local share while Redis is away.
  void Extend(int64_t units);
  // Whether to ask for more before the slice runs dry: fewer than
  // `low_water` units available, or its expiry within `renew_us`.
  bool NeedsRefill(int64_t now_us, int64_t low_water, int64_t renew_us) const;

  // Gives back all but `keep` of the available units: returns how many, which
  // leave the slice (Redis adds them back to the limit).
  int64_t GiveBack(int64_t keep);
  // Moves `settled` used units out of the slice (reported to Redis as spent,
  // so they no longer hold slice capacity). At most what is used.
  int64_t ReportSettled(int64_t settled);

 private:
  int64_t held_ = 0;  // leased and not given back
  int64_t used_ = 0;  // reserved or settled from it, not yet reported
  int64_t expires_us_ = 0;
};

}  // namespace brake::cluster
