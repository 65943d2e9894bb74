-- The classic Redis token bucket, for bench/compare: one hash per
-- bucket holding the tokens left and the time they were counted; refill by
-- the elapsed time, take `cost` if there is enough, store, and let an idle
-- bucket expire once it would be full again.
--   EVALSHA <sha> 1 <key> <rate per second> <burst> <cost>  -> 1 granted, 0 denied
-- The clock is the server's (TIME); Redis 7 replicates a script's effects,
-- not the script, so a non-deterministic command before a write is allowed
-- without redis.replicate_commands().
local key = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])

local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst  -- a new bucket starts full
  ts = now_us
end

local elapsed = now_us - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(burst, tokens + elapsed * rate / 1000000)

local granted = 0
if tokens >= cost then
  tokens = tokens - cost
  granted = 1
end

redis.call('HMSET', key, 'tokens', tokens, 'ts', now_us)
redis.call('PEXPIRE', key, math.ceil(burst / rate * 1000) + 1000)
return granted
