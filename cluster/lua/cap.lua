-- cap.lua: one node's slice of a shared cap (a quota, a fixed window or a
-- cost cap): lease more, cover a debt, give back, renew. One call does all.
--
-- KEYS[1]  the cap's hash for one period:
--            used      units counted against the cap: everything granted
--                      (reserved or settled) and everything still held in a
--                      node's slice, granted or not
--            h:<node>  what the node holds unused (shown by cluster.status)
--            x:<node>  until when (Redis time, ms); a node that stops
--                      renewing is dropped from the hash once this passes
--            r:<node>  after a reset, what reset.lua counted for the node
--            spent     of used, what the nodes' leases settled (reported
--                      by each node as it settles): the rest of used is
--                      held, in slices and by leases in flight
-- ARGV[1]  node          ARGV[2] limit (the cap, in its units)
-- ARGV[3]  ask           units wanted in addition
-- ARGV[4]  debt          units the node settled past its slice: counted now
-- ARGV[5]  back          units of its slice the node gives back, unused
-- ARGV[6]  held          what the node holds unused after giving back
-- ARGV[7]  ttl_ms        the slice's lifetime
-- ARGV[8]  key_ttl_ms    how long the hash outlives this call (0: forever)
-- ARGV[9]  seq           this call's name
-- ARGV[10] resolve       a call of the node's that got no answer, or ''
-- ARGV[11] spent         what the node's leases settled since its last
--                        call (may be negative: a refund)
-- ARGV[12] whole         '1': grant all of ask or nothing (a node whose
--                        slice could not serve a request gives it back
--                        and asks for the request whole, so the units
--                        scattered over nodes' slices come together)
-- Returns {granted, limit - used, other nodes holding a live slice, 0,
-- what the call `resolve` granted or -1 when it never ran, spent}.
--
-- Invariant: used >= what all nodes together have granted. A grant never
-- takes used past limit (granted <= limit - used), so grants never pass the
-- cap; a debt may (the call that cost more than it reserved was made, and
-- is counted). A node gives back only units it holds unused. A node that
-- dies never gives back: its slice stays counted (it may have granted all
-- of it), so a death wastes capacity and never overshoots.
local key = KEYS[1]
local node = ARGV[1]
local limit = tonumber(ARGV[2])
local ask = tonumber(ARGV[3])
local debt = tonumber(ARGV[4])
local back = tonumber(ARGV[5])
local held = tonumber(ARGV[6])
local ttl_ms = tonumber(ARGV[7])
local key_ttl_ms = tonumber(ARGV[8])
local seq = ARGV[9]
local resolve = ARGV[10]
local spent_delta = tonumber(ARGV[11] or '0')
local whole = ARGV[12] == '1'

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local before = resolved(key, node, resolve)
local used = tonumber(redis.call('HGET', key, 'used') or '0')
-- The node's first call since a reset: reset.lua counted what it held at
-- its last call (r:<node>); count what it holds now (held + back) instead.
local counted = redis.call('HGET', key, 'r:' .. node)
if counted then
  used = used - tonumber(counted) + held + back
  redis.call('HDEL', key, 'r:' .. node)
end
used = used + debt - back
if used < 0 then used = 0 end

local granted = 0
if ask > 0 and limit - used > 0 and not (whole and ask > limit - used) then
  granted = math.min(ask, limit - used)
end
used = used + granted
redis.call('HSET', key, 'used', string.format('%d', used))
local spent = tonumber(redis.call('HGET', key, 'spent') or '0') + spent_delta
if spent < 0 then spent = 0 end
redis.call('HSET', key, 'spent', string.format('%d', spent))

local others = track_node(key, node, held + granted, ttl_ms, now_ms, seq,
                          granted)

if key_ttl_ms > 0 then redis.call('PEXPIRE', key, key_ttl_ms) end
return {granted, limit - used, others, 0, before, spent}
