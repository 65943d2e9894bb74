-- reset.lua: forgets what one shared limit has counted (the reset op),
-- except what daemons still hold unused in their slices.
--
-- KEYS[1]  the cap's or the bucket's hash
-- ARGV[1]  'cap' or 'bucket'      ARGV[2] a bucket's burst
-- Returns the units still counted (a cap) or the tokens (a bucket).
--
-- Invariant: a cap's `used` becomes the sum of what live nodes held unused
-- at their last call (their h: entries, kept as r:<node>), so what they go
-- on granting from their slices stays counted and the cap holds from the
-- reset on; each node's next call (a node told of the reset calls at once)
-- replaces r:<node> by what it holds then (cap.lua). Entries of nodes that
-- stopped renewing go: what they held is forgiven with the rest. A bucket
-- is full again.
local key = KEYS[1]
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] == 'bucket' then
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('HSET', key, 'tokens', ARGV[2], 'ts', string.format('%d', now_us))
  return tonumber(ARGV[2])
end
local held = 0
local fields = redis.call('HGETALL', key)
local values = {}
for i = 1, #fields, 2 do values[fields[i]] = fields[i + 1] end
for f, v in pairs(values) do
  if string.sub(f, 1, 2) == 'h:' then
    local n = string.sub(f, 3)
    local expires = values['x:' .. n]
    if expires ~= nil and tonumber(expires) >= now_ms then
      held = held + tonumber(v)
      redis.call('HSET', key, 'r:' .. n, v)
    else
      redis.call('HDEL', key, 'h:' .. n, 'x:' .. n, 'r:' .. n)
    end
  end
end
if redis.call('EXISTS', key) == 1 then
  redis.call('HSET', key, 'used', string.format('%d', held), 'spent', '0')
end
return held
