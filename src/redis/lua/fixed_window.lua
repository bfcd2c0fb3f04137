--[[
fixed_window.lua - ThrottleKit's fixedWindow.check, decided exactly as
tkshm's src/algorithms/fixed_window.h decides it.

KEYS[1]  the limiter key: a HASH, s = window start, c = count, both
         string.format('%.17g') (integers print as integers)
ARGV     now, limit, windowMs, cost               (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           s, c }                  the state after; none if absent

  windowStart = floor(now / windowMs) * windowMs    reset = start + windowMs
  count = (s == windowStart) ? c : 0
  admit iff count + cost <= limit: s' = windowStart, c' = count + cost
  resetAt = ceil(reset); deny: retryAfterMs = ceil(reset - now)

As in tkshm, a now whose window starts before s (a clock regression) is
decided within the state's later window (its count, its start, its reset):
the units charged to any window never exceed limit.  Forward timelines are
ThrottleKit's.  An admission writes HSET s c and PEXPIRE
max(1, ceil(reset - now)); a denial writes nothing.  The counter is the one
lease_window.lua grants from.  A hash missing either field, or holding a
non-number, decides as an absent key.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local limit, window, cost = num(2, 'limit'), num(3, 'windowMs'), num(4, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (limit > 0) or not (window > 0) then
	fail('limit and windowMs must be > 0')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

local h = redis.call('HMGET', key, 's', 'c')
local s = h[1] and tonumber(h[1]) or nil
local c = h[2] and tonumber(h[2]) or nil
local present = s ~= nil and c ~= nil
local start = floor(now / window) * window
local reset = start + window
local count = 0
if present then
	if s == start then
		count = c
	elseif start < s then
		-- A clock regression: stay in the state's later window.
		start = s
		reset = s + window
		count = c
	end
end
local nowi = int(floor(now))

if count + cost <= limit then
	local n = count + cost
	local ss, cs = string.format('%.17g', start), string.format('%.17g', n)
	redis.call('HSET', key, 's', ss, 'c', cs)
	redis.call('PEXPIRE', key, ttl_arg(reset - now))
	return { 1, int(limit), floor0(limit - n), int(ceil(reset)), 0, nowi,
		ss, cs }
end

local reply = { 0, int(limit), floor0(limit - count), int(ceil(reset)),
	int(ceil(reset - now)), nowi }
if present then
	reply[7] = string.format('%.17g', s)
	reply[8] = string.format('%.17g', c)
end
return reply
