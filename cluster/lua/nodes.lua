-- nodes.lua: what both slice scripts do with a node's entry, put before
-- each of them when braked is built (Redis scripts cannot include).
--
-- Every call is named (`seq`, unique per daemon run and call) and its grant
-- kept with it (s:<node>, g:<node>), so that a daemon whose call got no
-- answer can ask whether it was applied: resolved(key, node, resolve) is
-- what that call granted, or -1 when it is not the node's last applied call
-- (it never ran).
local function resolved(key, node, resolve)
  if resolve == '' then return -1 end
  local last = redis.call('HMGET', key, 's:' .. node, 'g:' .. node)
  if last[1] == resolve then return tonumber(last[2]) end
  return -1
end

-- track_node(key, node, mine, ttl_ms, now_ms, seq, granted): records the
-- call, that `node` holds `mine` unused units until now + ttl (or drops its
-- entry when it holds none), drops the entries of nodes whose time has
-- passed (not their last call: a node may still ask about it), and returns
-- how many other nodes hold a live slice.
local function track_node(key, node, mine, ttl_ms, now_ms, seq, granted)
  redis.call('HSET', key, 's:' .. node, seq,
             'g:' .. node, string.format('%d', granted))
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

