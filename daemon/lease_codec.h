// The stored form of an open lease: one line of the lease_chunks table
// ("ID\tTEXT", storage/lease_chunks.h); this is TEXT.
//
// EncodeLease writes the compact form (format 3), a JSON array by position:
//
//   [3, user, task, parent, resource, model, fingerprint, requests, tokens,
//    usd_nano, granted_at_us, expires_at_us, [scope, ...],
//    [[scope, limit, resource, amount], ...]]
//
// where a lease's own scope is a code when its text fields spell it (0
// "global", 1 "user:" + user, 2 "task:" + task, 3 "task:" + parent, 4
// "resource:" + resource; daemon/lease_writer.h), else the scope itself; a
// charge's scope is the index of one of the lease's scopes (or the scope
// itself when it is none of them) and its resource is 0 (requests), 1
// (tokens) or 2 (usd). The id is not repeated: it is the line's. A grant's
// scopes are all codes: [0,1,2] where format 2 (schemas 4 to 6, still
// read: the same with every scope a string) wrote
// ["global","user:alice","task:t1"], a third of a line.
// DecodeLease also reads format 1, the JSON object written before schema
// 4 ({"id":..., "user":..., "charges":[[scope, limit, "tokens", n]]}),
// which carries its own id.
#pragma once

#include <string>
#include <string_view>

#include "budget/lease.h"
#include "common/status.h"

namespace brake {

// Appends the lease's form to `text`, allocating nothing per lease once its
// buffer has grown. The daemon's drain hands the storage thread copies
// instead (daemon/lease_snapshot.h), written there by the same writer
// (daemon/lease_writer.h).
void AppendEncodedLease(const Lease& lease, std::string* text);
std::string EncodeLease(const Lease& lease);
// `id` is the row's; damage of any kind is kUnavailable ("storage: ...").
Result<Lease> DecodeLease(std::string_view id, std::string_view text);

}  // namespace brake
