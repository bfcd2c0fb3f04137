--[[
lease_gcra.lua - lease mode: up to `want` whole tokens taken at once from a
GCRA key, for a host's agent to spend locally.

KEYS[1]  the GCRA key (gcra.lua's encoding: a STRING TAT '%.17g'), so
         strict hosts, leasing hosts and ThrottleKit share one limit
ARGV     now, periodMs, limit, burst, want (an integer >= 1)
         now = 0: the server's TIME, read once
Reply    { granted,       g, 0 .. want
           now,           the integer ms (floor(now))
           tat }          the TAT after ('%.17g'); '' when absent

  T = periodMs / limit     tau = T * burst
  tatEff = max(TAT or now, now)
  remaining = max(0, floor((tau - (tatEff - now)) / T))   (gcra's peek)
  g = min(want, remaining)
  g >= 1: SET tatEff + T*g PX max(1, ceil(that - now))
  g = 0: nothing is written.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
fail, num, ttl_arg and now_or_time come from there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local period, limit, burst, want =
	num(2, 'periodMs'), num(3, 'limit'), num(4, 'burst'), num(5, 'want')
if now < 0 then
	fail('now must be >= 0')
end
if not (period > 0) or not (limit > 0) or not (burst >= 1) then
	fail('periodMs and limit must be > 0, burst >= 1')
end
if not (want >= 1) or want ~= floor(want) or want > 9007199254740991 then
	fail('want must be an integer >= 1')
end
now = now_or_time(now)

local T = period / limit
local tau = T * burst
local raw = redis.call('GET', key)
local tat = raw and tonumber(raw) or nil
local tatEff = now
if tat ~= nil and tat > now then
	tatEff = tat
end
local remaining = floor((tau - (tatEff - now)) / T)
if not (remaining >= 0) then
	remaining = 0
end
local g = want
if remaining < g then
	g = remaining
end
local nowi = floor(now)

if g >= 1 then
	local newTat = tatEff + T * g
	local state = string.format('%.17g', newTat)
	redis.call('SET', key, state, 'PX', ttl_arg(newTat - now))
	return { g, nowi, state }
end
if tat ~= nil then
	return { 0, nowi, string.format('%.17g', tat) }
end
return { 0, nowi, '' }
