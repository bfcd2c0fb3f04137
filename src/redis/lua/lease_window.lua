--[[
lease_window.lua - lease mode: up to `want` units of a fixed window taken at
once, for a host's agent to spend locally until the window ends.

KEYS[1]  the fixedWindow key (fixed_window.lua's encoding: a HASH s, c), so
         the units granted are consumed in the very counter a ThrottleKit
         or strict fixedWindow check reads: every fleet shares one limit
ARGV     now, limit, windowMs, want (an integer >= 1)
         now = 0: the server's TIME, read once
Reply    { granted,       g, 0 .. want
           now,           the integer ms (floor(now))
           expiresAt }    ceil(windowStart + windowMs): the granted units
                          must not be spent from then on (window-coupled)

  windowStart = floor(now / windowMs) * windowMs
  count = (s == windowStart) ? c : 0
  g = min(want, max(0, floor(limit - count)))
  g >= 1: HSET s windowStart c count + g,
          PEXPIRE max(1, ceil(windowStart + windowMs - now))
  g = 0: nothing is written.
As fixed_window.lua does, a now whose window starts before s (a clock
regression) is served from the state's later window (its count, its start
and its end), so no window is ever granted more than limit.  Forward
timelines follow the formulas above exactly.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, fail, num, ttl_arg and now_or_time come from there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local limit, window, want = num(2, 'limit'), num(3, 'windowMs'), num(4, 'want')
if now < 0 then
	fail('now must be >= 0')
end
if not (limit > 0) or not (window > 0) then
	fail('limit and windowMs must be > 0')
end
if not (want >= 1) or want ~= floor(want) or want > 9007199254740991 then
	fail('want must be an integer >= 1')
end
now = now_or_time(now)

local h = redis.call('HMGET', key, 's', 'c')
local s = h[1] and tonumber(h[1]) or nil
local c = h[2] and tonumber(h[2]) or nil
local start = floor(now / window) * window
local count = 0
if s ~= nil and c ~= nil then
	if s == start then
		count = c
	elseif start < s then
		start = s -- a clock regression: the state's later window
		count = c
	end
end
local reset = start + window
local room = floor(limit - count)
if not (room >= 0) then
	room = 0
end
local g = want
if room < g then
	g = room
end

if g >= 1 then
	redis.call('HSET', key, 's', string.format('%.17g', start), 'c',
		string.format('%.17g', count + g))
	redis.call('PEXPIRE', key, ttl_arg(reset - now))
end
return { g, floor(now), ceil(reset) }
