--[[
hosts.lua - a host's heartbeat, and the number of live hosts (for the
safe-share failure policy: a host alone falls back to limit / hosts).

KEYS[1]  a ZSET of hosts: member = host id, score = its last heartbeat (ms)
ARGV     now, hostId, ttlMs (> 0)
         now = 0: the server's TIME, read once
Reply    { live hosts,    ZCARD after the heartbeat and the pruning
           now }          the integer ms (floor(now))

  ZADD now hostId; ZREMRANGEBYSCORE -inf (now - ttlMs): hosts whose last
  heartbeat is more than ttlMs old are dropped, one exactly ttlMs old is
  kept; PEXPIRE max(1, ceil(2 * ttlMs)), so a set no host beats for twice
  the TTL disappears.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, fail and now_or_time come from there.
--]]

local key = KEYS[1]
local now = tonumber(ARGV[1])
local host = ARGV[2]
local ttl = tonumber(ARGV[3])
-- Not num(): a bad now, whatever its fault, has the one message.
if now == nil or now ~= now or now == math.huge or now < 0 then
	fail('now must be a finite number >= 0')
end
if host == nil or host == '' then
	fail('hostId must not be empty')
end
if ttl == nil or not (ttl > 0) or ttl == math.huge then
	fail('ttlMs must be a finite number > 0')
end
now = now_or_time(now)

local expire = ceil(2 * ttl)
if expire < 1 then
	expire = 1
end
redis.call('ZADD', key, string.format('%.17g', now), host)
redis.call('ZREMRANGEBYSCORE', key, '-inf',
	'(' .. string.format('%.17g', now - ttl))
redis.call('PEXPIRE', key, string.format('%.0f', expire))
return { redis.call('ZCARD', key), floor(now) }
