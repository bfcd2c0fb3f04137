--[[
gcra.lua - ThrottleKit's gcra.check, decided exactly as tkshm's
src/algorithms/gcra.h decides it.

KEYS[1]  the limiter key: a STRING holding the TAT, string.format('%.17g')
ARGV     now, periodMs, limit, burst, cost        (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           tat }                   the TAT after the decision; none if absent

  T = periodMs / limit     tau = T * burst     inc = T * cost
  tatEff = max(TAT or now, now)    newTat = tatEff + inc
  allowAt = newTat - tau           admit iff now >= allowAt
  Decision.limit = burst

An admission writes SET key newTat PX max(1, ceil(newTat - now)); a denial
writes nothing and refreshes no TTL.  One difference from ThrottleKit, as in
tkshm: a cost above burst is never admitted (ThrottleKit's formula admits it
only through a rounding edge at a large now), and such a denial's
retryAfterMs is at least 1.

Numbers never pass through tostring (%.14g): state and arguments are
written with string.format.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local period, limit, burst, cost =
	num(2, 'periodMs'), num(3, 'limit'), num(4, 'burst'), num(5, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (period > 0) or not (limit > 0) or not (burst >= 1) then
	fail('periodMs and limit must be > 0, burst >= 1')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

local T = period / limit
local tau = T * burst
local inc = T * cost
local raw = redis.call('GET', key)
local tat = raw and tonumber(raw) or nil
local present = tat ~= nil
if not present then
	tat = now
end
local tatEff = tat
if not (tat > now) then
	tatEff = now
end
local newTat = tatEff + inc
local allowAt = newTat - tau

if now < allowAt or cost > burst then
	local retry = ceil(allowAt - now)
	if not (retry >= 1) then
		retry = 1
	end
	local r = { 0, int(burst), floor0((tau - (tatEff - now)) / T),
		int(ceil(tatEff)), int(retry), int(floor(now)) }
	if present then
		r[7] = string.format('%.17g', tat)
	end
	return r
end

local state = string.format('%.17g', newTat)
redis.call('SET', key, state, 'PX', ttl_arg(newTat - now))
return { 1, int(burst), floor0((tau - (newTat - now)) / T), int(ceil(newTat)),
	0, int(floor(now)), state }
