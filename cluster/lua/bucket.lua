-- bucket.lua: one node's slice of a shared token bucket: take tokens, cover
-- a debt, give back, renew. One call does all.
--
-- KEYS[1]  the bucket's hash:
--            tokens    tokens in the bucket (may be fractional, or negative
--                      after a debt)
--            ts        when `tokens` was last brought up to date (Redis
--                      time, us)
--            h:<node>  what the node holds (shown by cluster.status)
--            x:<node>  until when (ms); dropped once passed
-- ARGV[1]  node          ARGV[2] rate   ARGV[3] per_ms   ARGV[4] burst
-- ARGV[5]  ask           tokens wanted in addition
-- ARGV[6]  debt          tokens the node settled past its slice
-- ARGV[7]  back          tokens of its slice the node gives back, unused
-- ARGV[8]  held          what the node holds unused after giving back
-- ARGV[9]  ttl_ms        the slice's lifetime
-- ARGV[10] seq           this call's name
-- ARGV[11] resolve       a call of the node's that got no answer, or ''
-- Returns {granted, whole tokens left, other nodes holding a live slice,
-- us until the next whole token (0 when one is there), what the call
-- `resolve` granted or -1 when it never ran}.
--
-- Invariant: what all nodes take, less what they give back, never passes
-- burst + rate * elapsed time: the bucket starts full (burst), fills at
-- `rate` per `per_ms` up to `burst`, and a grant takes only whole tokens
-- that are in it. Given-back tokens return to the bucket, never above
-- burst. A node that dies leaves its tokens unused: the bucket refills.
local key = KEYS[1]
local node = ARGV[1]
local rate = tonumber(ARGV[2])
local per_us = tonumber(ARGV[3]) * 1000
local burst = tonumber(ARGV[4])
local ask = tonumber(ARGV[5])
local debt = tonumber(ARGV[6])
local back = tonumber(ARGV[7])
local held = tonumber(ARGV[8])
local ttl_ms = tonumber(ARGV[9])
local seq = ARGV[10]
local resolve = ARGV[11]

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)

local before = resolved(key, node, resolve)
local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now_us
end
if now_us > ts then
  tokens = math.min(burst, tokens + (now_us - ts) * rate / per_us)
end
tokens = math.min(burst, tokens + back) - debt

local granted = 0
if ask > 0 and tokens >= 1 then
  granted = math.min(ask, math.floor(tokens))
  tokens = tokens - granted
end
local wait_us = 0
if tokens < 1 then
  wait_us = math.ceil((1 - tokens) * per_us / rate)
end
redis.call('HSET', key, 'tokens', string.format('%.17g', tokens),
           'ts', string.format('%d', now_us))

local others = track_node(key, node, held + granted, ttl_ms, now_ms, seq,
                          granted)

-- Full again after burst / rate; kept a minute longer for the nodes' view.
local full_ms = math.ceil(burst * per_us / rate / 1000)
redis.call('PEXPIRE', key, math.max(ttl_ms, full_ms) + 60000)
return {granted, math.floor(tokens), others, wait_us, before}
