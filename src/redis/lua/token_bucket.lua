--[[
token_bucket.lua - ThrottleKit's tokenBucket.check, decided exactly as
tkshm's src/algorithms/token_bucket.h decides it.

KEYS[1]  the limiter key: a HASH, t = tokens, l = last refill time, both
         string.format('%.17g')
ARGV     now, capacity, refillPerSec, cost        (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           t, l }                  the state after; none if absent

  refillPerMs = refillPerSec / 1000
  tokens = min(capacity, (t or capacity) + max(0, now - (l or now)) * r)
  admit iff tokens >= cost: t' = tokens - cost, l' = max(l, now)
  Decision.limit = capacity

As in tkshm, an admission keeps the later `last` (l' = max(l, now); on a
forward timeline that is ThrottleKit's l' = now), and a `last` ahead of now
adds its wait to resetAt and retryAfterMs (0 on a forward timeline).  An
admission writes HSET t l and PEXPIRE max(1, ceil(wait + capacity / r))
(ThrottleKit's TTL when wait = 0); a denial writes nothing.  A hash
missing either field, or holding a non-number, decides as an absent key.
--]]

local floor, ceil = math.floor, math.ceil
local COST_MAX = 9007199254740991 -- 2^53 - 1, ThrottleKit's largest cost
local I64 = 9223372036854774784 -- the largest double below 2^63
local TTL_MAX = 1e15 -- ms; a longer TTL is kept as this (31,000 years)

-- A reply integer as tkshm's tk_field makes it: truncated, saturated.
local function int(x)
	if x ~= x then
		return 0
	end
	if x >= I64 then
		return I64
	end
	if x <= -I64 then
		return -I64
	end
	if x >= 0 then
		return floor(x)
	end
	return ceil(x)
end

-- max(0, floor(x)) as a reply integer (tk_field_floor0).
local function floor0(x)
	x = floor(x)
	if not (x >= 0) then
		return 0
	end
	return int(x)
end

local function fail(msg)
	error({ err = 'ERR tkshm tokenBucket: ' .. msg })
end

local function num(i, name)
	local v = tonumber(ARGV[i])
	if v == nil or v ~= v or v == math.huge or v == -math.huge then
		fail(name .. ' is not a finite number')
	end
	return v
end

local function ttl_arg(ms)
	ms = ceil(ms)
	if not (ms >= 1) then
		ms = 1
	elseif ms > TTL_MAX then
		ms = TTL_MAX
	end
	return string.format('%.0f', ms)
end

local key = KEYS[1]
local now = num(1, 'now')
local capacity, refill, cost =
	num(2, 'capacity'), num(3, 'refillPerSec'), num(4, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (capacity > 0) or not (refill > 0) then
	fail('capacity and refillPerSec must be > 0')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
if now == 0 then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end

local r = refill / 1000
local h = redis.call('HMGET', key, 't', 'l')
local prev = h[1] and tonumber(h[1]) or nil
local last = h[2] and tonumber(h[2]) or nil
local present = prev ~= nil and last ~= nil
if not present then
	prev, last = capacity, now
end
local elapsed = 0
if now > last then
	elapsed = now - last
end
local tokens = prev + elapsed * r
if not (tokens < capacity) then
	tokens = capacity -- Math.min(capacity, x)
end
local wait = 0
if last > now then
	wait = last - now
end
local nowi = int(floor(now))

if tokens >= cost then
	local left = tokens - cost
	local l2 = last
	if not (last > now) then
		l2 = now
	end
	local ts, ls = string.format('%.17g', left), string.format('%.17g', l2)
	redis.call('HSET', key, 't', ts, 'l', ls)
	redis.call('PEXPIRE', key, ttl_arg(wait + capacity / r))
	return { 1, int(capacity), floor0(left),
		int(now + ceil(wait + (capacity - left) / r)), 0, nowi, ts, ls }
end

local reply = { 0, int(capacity), floor0(tokens),
	int(now + ceil(wait + (capacity - tokens) / r)),
	int(ceil(wait + (cost - tokens) / r)), nowi }
if present then
	reply[7] = string.format('%.17g', prev)
	reply[8] = string.format('%.17g', last)
end
return reply
