// The drain's copy of an open lease: its fields as they are (lengths and
// bytes, in this process's byte order), written on the loop thread by
// AppendLeaseSnapshot (the LeaseEncoder daemon.cc gives Engine::Drain) and
// turned into the stored form (daemon/lease_codec.h) on the storage thread
// by EncodeSnapshots, just before the batch is applied.
//
// Writing the stored form itself (escaping checks, integers in decimal) costs
// several times a copy, and would be the loop thread's largest cost under
// acquires that leave their leases open (docs/DESIGN.md). A snapshot never
// leaves the process.
#pragma once

#include <string>
#include <string_view>

#include "budget/lease.h"
#include "common/lease_puts.h"
#include "common/status.h"

namespace brake {

// Appends `lease`'s snapshot to `out`.
void AppendLeaseSnapshot(const Lease& lease, std::string* out);

// Appends the stored form of every row of `snapshots` (each a snapshot) to
// `stored`, ids and freshness kept. A row that does not read as a
// snapshot (a bug, not input) is kUnavailable, naming its id; `stored` is
// then incomplete and must not be used.
Status EncodeSnapshots(const LeasePuts& snapshots, LeasePuts* stored);

}  // namespace brake
