-- wrk script: each request carries X-Key, a key drawn uniformly from
-- 1..NKEYS (environment, default 100000), so a server keyed by the header
-- sees that many distinct clients.
local nkeys = tonumber(os.getenv("NKEYS") or "100000")

function setup(thread)
	-- a different random sequence in each wrk thread
	thread:set("seed", math.random(1, 2 ^ 30))
end

function init(args)
	math.randomseed(seed or os.time())
end

function request()
	return wrk.format("GET", nil, { ["X-Key"] = tostring(math.random(1, nkeys)) })
end
