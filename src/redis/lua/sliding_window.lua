--[[
sliding_window.lua - ThrottleKit's slidingWindow.check (and a rolling
quota's), decided exactly as tkshm's src/algorithms/sliding_window.h
decides it.

KEYS[1]  the limiter key: a HASH of ring entries, field idx % (S+1) (a
         decimal integer) -> "<idx>:<count>", both string.format('%.17g')
ARGV     now, windowMs, limit, cost, buckets      (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           field, value, ... }     the ring after, as HGETALL would list
                                   it, entries in field order; none if
                                   absent

  w = windowMs / S    c = floor(now / w)    elapsed = max(0, now - c*w)
  weight = clamp((w - elapsed) / w, 0, 1)
  get(j) = the count of entry j % (S+1) if that entry's idx is j, else 0
  estimate = (sum of get(j), j = c-S+1 .. c, ascending) + get(c-S)*weight
  admit iff estimate + cost <= limit: entry c := {c, get(c) + cost}
  resetAt = ceil((c + 1)*w + windowMs)

As in tkshm, c is never taken below the newest idx stored (a clock
regression is decided at that tick), and ticks are kept within
[0, 2^51 - 2].  An entry whose field, idx or count does not parse, or whose
idx does not belong to its field, reads as empty (get() never matches it),
and is neither counted nor rewritten.  The ring is read with one HGETALL
(ThrottleKit reads S+2 fields); an admission writes the one entry (HSET)
and PEXPIRE ceil(windowMs + w), plus how far the tick decided at is ahead
of now (nothing on a forward timeline); a denial writes nothing.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

local TICK_MAX = 2251799813685246 -- 2^51 - 2, tkshm's largest tick

-- a mod b in [0, b) for integers a >= 0 below 2^53 and b >= 1, exact
-- (floor(a / b) may round up by one near 2^53; the remainder is fixed).
local function imod(a, b)
	local r = a - floor(a / b) * b
	if r < 0 then
		r = r + b
	elseif r >= b then
		r = r - b
	end
	return r
end

local key = KEYS[1]
local now = num(1, 'now')
local window, limit, cost, S =
	num(2, 'windowMs'), num(3, 'limit'), num(4, 'cost'), num(5, 'buckets')
if now < 0 then
	fail('now must be >= 0')
end
if not (window > 0) or not (limit > 0) then
	fail('windowMs and limit must be > 0')
end
if not (S >= 1) or S ~= floor(S) or S > 65536 then
	fail('buckets must be an integer 1..65536')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

local w = window / S
local slots = S + 1

-- The ring: tick[p], count[p] for the entries that parse and belong to
-- their field p; newest is the largest tick among them (-1: none).
local tick, count = {}, {}
local newest = -1
local h = redis.call('HGETALL', key)
for i = 1, #h - 1, 2 do
	local p = tonumber(h[i])
	local a, b = string.match(h[i + 1], '^([^:]*):(.*)$')
	local j = a and tonumber(a) or nil
	local n = b and tonumber(b) or nil
	if p and j and n and n == n and p >= 0 and p <= S and p == floor(p) and
		j >= 0 and j <= TICK_MAX and j == floor(j) and imod(j, slots) == p then
		tick[p], count[p] = j, n
		if j > newest then
			newest = j
		end
	end
end

local function get(j)
	if j < 0 then
		return 0
	end
	local p = imod(j, slots)
	if tick[p] == j then
		return count[p]
	end
	return 0
end

local c = floor(now / w)
if not (c <= TICK_MAX) then
	c = TICK_MAX -- beyond tkshm's horizon: the window stops moving
elseif not (c >= 0) then
	c = 0
end
if newest > c then
	c = newest -- a clock regression: decided at the newest tick
end
local elapsed = now - c * w
if not (elapsed > 0) then
	elapsed = 0
end
local weight = (w - elapsed) / w
if weight < 0 then
	weight = 0
end
if weight > 1 then
	weight = 1
end
local full = 0
for j = c - S + 1, c do
	full = full + get(j)
end
local oldest = get(c - S)
local estimate = full + oldest * weight
local projected = estimate + cost
local resetAt = int(ceil((c + 1) * w + window))
local nowi = int(floor(now))

-- The ring after the decision, as HGETALL would list it.
local function ring(reply)
	for p = 0, S do
		if tick[p] then
			reply[#reply + 1] = string.format('%d', p)
			reply[#reply + 1] =
				string.format('%.17g:%.17g', tick[p], count[p])
		end
	end
	return reply
end

if projected <= limit then
	local p = imod(c, slots)
	local n = get(c) + cost
	local ttl = window + w
	if c * w > now then
		ttl = ttl + (c * w - now)
	end
	tick[p], count[p] = c, n
	redis.call('HSET', key, string.format('%d', p),
		string.format('%.17g:%.17g', c, n))
	redis.call('PEXPIRE', key, ttl_arg(ttl))
	return ring({ 1, int(limit), floor0(limit - projected), resetAt, 0,
		nowi })
end

local D = projected - limit
local retry
if oldest > 0 and D <= oldest * weight then
	retry = ceil(D * w / oldest)
else
	retry = ceil((c + 1) * w - now)
end
if not (retry >= 1) then
	retry = 1
end
return ring({ 0, int(limit), floor0(limit - estimate), resetAt, int(retry),
	nowi })
