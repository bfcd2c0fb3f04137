--[[
quota.lua - ThrottleKit's quota check for the calendar and fixed cadences,
decided exactly as tkshm's src/algorithms/quota.h and calendar.h decide it.
(A rolling quota is a sliding window: sliding_window.lua.)

KEYS[1]  the quota key: a HASH, s = period start, c = count, both
         string.format('%.17g') (integers print as integers)
ARGV     now, limit, cost, mode, periodMs, anchor, offsetMs, weekStartsOn
         (ThrottleKit's order; mode 1 calendar-month, 2 calendar-week,
         3 calendar-day, 4 fixed; periodMs and anchor are read by fixed,
         offsetMs by the calendar cadences, weekStartsOn by the week)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           s, c }                  the state after; none if absent

The period [start, reset) of a time x, with D = 86400000 and
off = offsetMs (no daylight saving, by design):
  fixed  start = anchor + floor((x - anchor) / periodMs) * periodMs,
         reset = start + periodMs
  day    d = floor((x + off) / D): [d*D - off, (d+1)*D - off)
  week   dow = (d + 4) mod 7 (0 = Sunday), d0 = d - ((dow - weekStartsOn)
         mod 7): [d0*D - off, (d0+7)*D - off)
  month  the civil (y, m) of day d (proleptic Gregorian, floored
         division): [first of m, first of the next month), as days*D - off
Then count = (s == start) ? c : 0; admit iff count + cost <= limit;
resetAt = ceil(reset); deny: retryAfterMs = ceil(reset - now).

As in tkshm, a now whose period starts before s (a clock regression) is
decided within the state's later period, whose reset is that of s.  Day
counts are clamped to +-2^40 as tkshm clamps them.  An admission writes
HSET s c and PEXPIRE max(1, ceil(reset - now)); a denial writes nothing.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

local D = 86400000 -- ms per day
local DAY_LIMIT = 1099511627776 -- 2^40 days, tkshm's clamp

-- floor(a / b) for integers |a| < 2^53 and b >= 1, exact: the double
-- quotient may round to the next integer, which one step corrects.
local function fdiv(a, b)
	local q = floor(a / b)
	if q * b > a then
		q = q - 1
	elseif (q + 1) * b <= a then
		q = q + 1
	end
	return q
end

local function fmod(a, b)
	return a - fdiv(a, b) * b
end

-- Days since 1970-01-01 of y-m-d: 400-year eras of 146097 days, years
-- counted from March 1st so that the leap day ends the year.
local function days_from_civil(y, m, d)
	local ys = y
	if m <= 2 then
		ys = y - 1
	end
	local era = fdiv(ys, 400)
	local yoe = ys - era * 400
	local mp = m + 9
	if m > 2 then
		mp = m - 3
	end
	local doy = fdiv(153 * mp + 2, 5) + d - 1
	local doe = yoe * 365 + fdiv(yoe, 4) - fdiv(yoe, 100) + doy
	return era * 146097 + doe - 719468
end

-- The civil year and month of day z (days since 1970-01-01).
local function civil_from_days(z)
	local zs = z + 719468
	local era = fdiv(zs, 146097)
	local doe = zs - era * 146097
	local yoe = fdiv(doe - fdiv(doe, 1460) + fdiv(doe, 36524) -
		fdiv(doe, 146096), 365)
	local doy = doe - (365 * yoe + fdiv(yoe, 4) - fdiv(yoe, 100))
	local mp = fdiv(5 * doy + 2, 153)
	local m = mp - 9
	if mp < 10 then
		m = mp + 3
	end
	local y = yoe + era * 400
	if m <= 2 then
		y = y + 1
	end
	return y, m
end

local key = KEYS[1]
local now = num(1, 'now')
local limit, cost, mode = num(2, 'limit'), num(3, 'cost'), num(4, 'mode')
local period, anchor = num(5, 'periodMs'), num(6, 'anchor')
local off, wso = num(7, 'offsetMs'), num(8, 'weekStartsOn')
if now < 0 then
	fail('now must be >= 0')
end
if not (limit > 0) then
	fail('limit must be > 0')
end
if mode ~= 1 and mode ~= 2 and mode ~= 3 and mode ~= 4 then
	fail('mode must be 1 (month), 2 (week), 3 (day) or 4 (fixed)')
end
if mode == 4 and not (period > 0) then
	fail('periodMs must be > 0')
end
if mode == 2 and (wso ~= floor(wso) or wso < 0 or wso > 6) then
	fail('weekStartsOn must be an integer 0..6')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

-- The period [start, reset) containing x.
local function period_of(x)
	if mode == 4 then
		local s = anchor + floor((x - anchor) / period) * period
		return s, s + period
	end
	local day = floor((x + off) / D)
	if mode == 3 then
		return day * D - off, (day + 1) * D - off
	end
	if not (day > -DAY_LIMIT) then
		day = -DAY_LIMIT
	end
	if day > DAY_LIMIT then
		day = DAY_LIMIT
	end
	local sday, rday
	if mode == 2 then
		local dow = fmod(day + 4, 7)
		sday = day - fmod(dow - wso, 7)
		rday = sday + 7
	else
		local y, m = civil_from_days(day)
		sday = days_from_civil(y, m, 1)
		if m == 12 then
			rday = days_from_civil(y + 1, 1, 1)
		else
			rday = days_from_civil(y, m + 1, 1)
		end
	end
	return sday * D - off, rday * D - off
end

local h = redis.call('HMGET', key, 's', 'c')
local s = h[1] and tonumber(h[1]) or nil
local c = h[2] and tonumber(h[2]) or nil
local present = s ~= nil and c ~= nil
local start, reset = period_of(now)
local count = 0
if present then
	if s == start then
		count = c
	elseif start < s then
		-- A clock regression: stay in the state's later period.
		if mode == 4 then
			reset = s + period
		else
			local _
			_, reset = period_of(s)
		end
		start = s
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
