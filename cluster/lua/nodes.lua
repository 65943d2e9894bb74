-- nodes.lua: what both slice scripts do with a node's entry, put before
-- each of them when braked is built (Redis scripts cannot include).
--
-- track_node(key, node, mine, ttl_ms, now_ms): records that `node` holds
-- `mine` unused units until now + ttl (or drops its entry when it holds
-- none), drops the entries of nodes whose time has passed, and returns how
-- many other nodes hold a live slice.
local function track_node(key, node, mine, ttl_ms, now_ms)
  if mine > 0 then
    redis.call('HSET', key, 'h:' .. node, string.format('%d', mine),
               'x:' .. node, string.format('%d', now_ms + ttl_ms))
  else
    redis.call('HDEL', key, 'h:' .. node, 'x:' .. node)
  end
  local others = 0
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local f = fields[i]
    if string.sub(f, 1, 2) == 'x:' then
      if tonumber(fields[i + 1]) < now_ms then
        local n = string.sub(f, 3)
        redis.call('HDEL', key, 'h:' .. n, 'x:' .. n)
      elseif f ~= 'x:' .. node then
        others = others + 1
      end
    end
  end
  return others
end

