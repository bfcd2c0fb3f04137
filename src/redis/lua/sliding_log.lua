--[[
sliding_log.lua - ThrottleKit's slidingWindowLog.check, decided exactly as
tkshm's src/algorithms/sliding_log.h decides it.

KEYS[1]  the limiter key: a ZSET of hits, one member per unit, score = the
         hit's time, member "<time>-<rank>" (string.format('%.17g-%d'))
ARGV     now, windowMs, limit, cost               (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           member, score, ... }    the ZSET after, as ZRANGE 0 -1
                                   WITHSCORES lists it; none if absent

  t = max(now, the newest stamp)   windowStart = t - windowMs
  live = the stamps > windowStart (ascending)   count = #live
  units = ceil(cost); admit iff count + units <= limit: the stamps
  <= windowStart are pruned and `units` stamps at t are added
  resetAt = ceil((count > 0 ? live[1] : t) + windowMs)
  deny: count == 0: retryAfterMs = windowMs (truncated), else
        k = clamp(ceil(count + units - limit), 1, count),
        retryAfterMs = max(1, ceil(live[k] + windowMs - now))

t is now on a forward timeline; a now before the newest stamp (a clock
regression) is decided at that stamp, as tkshm does, so stamps stay
ascending.  Every decision prunes, ZREMRANGEBYSCORE -inf windowStart
(when something is to be pruned), as ThrottleKit's script does before it
decides; an admission then writes ZADD and PEXPIRE max(1, ceil(windowMs +
t - now)) (ThrottleKit's ceil(windowMs) on a forward timeline), a denial
nothing more (no TTL refresh).  A member's rank is count + i, so members
stay distinct (ThrottleKit's scheme).

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, fail, num, ttl_arg and now_or_time come from there.
--]]

local ZADD_BATCH = 256 -- members per ZADD (Lua's unpack has a stack limit)

local key = KEYS[1]
local now = num(1, 'now')
local window, limit, cost = num(2, 'windowMs'), num(3, 'limit'), num(4, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (window > 0) or not (limit > 0) then
	fail('windowMs and limit must be > 0')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

-- The log, ascending (a ZSET's scores are numbers: each parses).
local z = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local member, stamp = {}, {}
for i = 1, #z - 1, 2 do
	member[#member + 1] = z[i]
	stamp[#stamp + 1] = tonumber(z[i + 1])
end
local n = #stamp
local t = now
if n > 0 and stamp[n] > t then
	t = stamp[n] -- a clock regression: decided at the newest stamp
end
local windowStart = t - window
local first = 1
while first <= n and not (stamp[first] > windowStart) do
	first = first + 1
end
local count = n - first + 1
local units = ceil(cost)
local nowi = int(floor(now))

-- The stamps from index `from` (and `extra` new members at t), as ZRANGE
-- WITHSCORES lists them.
local function log(reply, from, extra)
	for i = from, n do
		reply[#reply + 1] = member[i]
		reply[#reply + 1] = string.format('%.17g', stamp[i])
	end
	for i = 1, #extra do
		reply[#reply + 1] = extra[i]
		reply[#reply + 1] = string.format('%.17g', t)
	end
	return reply
end

-- Expired stamps leave the ZSET whatever the decision (ThrottleKit).
if first > 1 then
	redis.call('ZREMRANGEBYSCORE', key, '-inf',
		string.format('%.17g', windowStart))
end

if count + units <= limit then
	local oldest = t
	if count > 0 then
		oldest = stamp[first]
	end
	local ts = string.format('%.17g', t)
	local added, args = {}, {}
	for i = 1, units do
		added[i] = string.format('%.17g-%d', t, count + i)
	end
	local ttl = window
	if t > now then
		ttl = ttl + (t - now)
	end
	for i = 1, units do
		args[#args + 1] = ts
		args[#args + 1] = added[i]
		if #args == 2 * ZADD_BATCH or i == units then
			redis.call('ZADD', key, unpack(args))
			args = {}
		end
	end
	redis.call('PEXPIRE', key, ttl_arg(ttl))
	local remaining = limit - count - units
	if not (remaining > 0) then
		remaining = 0
	end
	return log({ 1, int(limit), int(remaining), int(ceil(oldest + window)),
		0, nowi }, first, added)
end

local remaining = limit - count
if not (remaining > 0) then
	remaining = 0
end
local resetAt, retry
if count == 0 then
	resetAt = ceil(t + window)
	retry = window
else
	local k = ceil(count + units - limit)
	if k < 1 then
		k = 1
	elseif k > count then
		k = count
	end
	retry = ceil(stamp[first + k - 1] + window - now)
	if not (retry > 1) then
		retry = 1
	end
	resetAt = ceil(stamp[first] + window)
end
return log({ 0, int(limit), int(remaining), int(resetAt), int(retry), nowi },
	first, {})
