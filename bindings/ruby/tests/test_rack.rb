# frozen_string_literal: true

# ruby_rack: Tkshm::Rack::Limiter (keys, several limits per path, cost,
# header styles, status, fail-open) and Tkshm::RackAttackStore under
# Rack::Attack's own throttle and Fail2Ban, in one process.
require_relative "helper"
TkshmTest.need("rack", "ruby-rack")
TkshmTest.need("rack/attack", "ruby-rack-attack")
require "rack/mock"
require "rack/lint"
require "tkshm/rack"
require "tkshm/rack_attack_store"

class TestLimiter < Minitest::Test
  APP = ->(_env) { [200, { "content-type" => "text/plain" }, ["ok"]] }

  def setup
    @tag = TkshmTest.table_name("rack")
  end

  def client(limits, **opts)
    Rack::MockRequest.new(Rack::Lint.new(Tkshm::Rack::Limiter.new(Rack::Lint.new(APP), limits: limits, **opts)))
  end

  def limit(name, policy, **opts)
    { name: name, policy: policy, table: "#{@tag}-#{name}", **opts }
  end

  def test_client_address_with_ipv6_slash_64
    r = client([limit("ip", "fixedWindow:limit=2,windowMs=3600000")])
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "2001:db8::1").status
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "2001:db8::2").status
    res = r.get("/", "REMOTE_ADDR" => "2001:db8::ffff:3")
    assert_equal 429, res.status
    assert_equal "Too Many Requests\n", res.body
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "2001:db8:0:1::1").status
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "192.0.2.1").status
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "192.0.2.2").status
  end

  def test_a_remote_addr_that_is_not_an_address_is_the_key
    r = client([limit("odd", "fixedWindow:limit=1,windowMs=3600000")])
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "unix:/run/app.sock").status
    assert_equal 429, r.get("/", "REMOTE_ADDR" => "unix:/run/app.sock").status
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "").status
    assert_equal 429, r.get("/", "REMOTE_ADDR" => "").status
    assert_raises(Tkshm::Error) { Tkshm::Rack.client_ip(v6_prefix: 129) }
  end

  def test_header_key_and_requests_without_it
    r = client([limit("hdr", "fixedWindow:limit=1,windowMs=3600000", key: Tkshm::Rack.header("X-Api-Key"))])
    assert_equal 200, r.get("/", "HTTP_X_API_KEY" => "a").status
    assert_equal 429, r.get("/", "HTTP_X_API_KEY" => "a").status
    assert_equal 200, r.get("/", "HTTP_X_API_KEY" => "b").status
    3.times { assert_equal 200, r.get("/").status }
    # a key longer than any table takes is limited all the same
    long = "k" * 5000
    assert_equal 200, r.get("/", "HTTP_X_API_KEY" => long).status
    assert_equal 429, r.get("/", "HTTP_X_API_KEY" => long).status
    assert_equal 200, r.get("/", "HTTP_X_API_KEY" => "#{long}x").status
  end

  def test_several_limits_per_path_and_paths
    r = client([
                 limit("burst", "fixedWindow:limit=3,windowMs=3600000", path: "/api"),
                 limit("hour", "fixedWindow:limit=5,windowMs=3600000", path: "/api"),
                 limit("login", "fixedWindow:limit=1,windowMs=3600000", path: %r{\A/login\z})
               ])
    env = { "REMOTE_ADDR" => "192.0.2.9" }
    res = r.get("/api/a", env)
    assert_equal 200, res.status
    # the limit with the fewest units left names the headers
    assert_equal "\"burst\";r=2;t=#{res.headers['ratelimit'][/t=(\d+)/, 1]}", res.headers["ratelimit"]
    assert_equal 200, r.get("/api", env).status
    assert_equal 200, r.get("/api/b", env).status
    res = r.get("/api/c", env)
    assert_equal 429, res.status
    assert_match(/\A"burst";q=3;w=3600\z/, res.headers["ratelimit-policy"])
    assert res.headers["retry-after"].to_i >= 1
    assert_equal 200, r.get("/apix", env).status # not under /api
    assert_equal 200, r.get("/login", env).status
    assert_equal 429, r.get("/login", env).status
    assert_equal 200, r.get("/login/x", env).status
  end

  # One decision: a limit that denies leaves the others untouched.
  def test_a_denial_consumes_from_no_limit
    r = client([limit("wide", "fixedWindow:limit=5,windowMs=3600000"),
                limit("narrow", "fixedWindow:limit=2,windowMs=3600000")])
    env = { "REMOTE_ADDR" => "192.0.2.8" }
    assert_equal [200, 200, 429, 429], Array.new(4) { r.get("/", env).status }
    res = r.get("/", env)
    assert_match(/\A"narrow";/, res.headers["ratelimit"])
    Tkshm::Table.open("#{@tag}-wide", nil, create: false) do |t|
      assert_equal 3, t.peek("192.0.2.8").remaining
    end
    assert_raises(ArgumentError) do
      client(Array.new(Tkshm::MULTI_MAX + 1) { |i| limit("l#{i}", "fixedWindow:limit=1,windowMs=1000") })
    end
  end

  def test_cost_and_zero_cost
    cost = ->(env) { env["HTTP_X_COST"].to_i }
    r = client([limit("cost", "fixedWindow:limit=10,windowMs=3600000", cost: cost)], headers: "legacy")
    env = { "REMOTE_ADDR" => "192.0.2.3" }
    res = r.get("/", env.merge("HTTP_X_COST" => "7"))
    assert_equal "3", res.headers["ratelimit-remaining"]
    assert_equal 429, r.get("/", env.merge("HTTP_X_COST" => "4")).status
    assert_equal 200, r.get("/", env.merge("HTTP_X_COST" => "0")).status
    assert_equal 200, r.get("/", env.merge("HTTP_X_COST" => "3")).status
    assert_raises(ArgumentError) { r.get("/", env.merge("HTTP_X_COST" => "-1")) }
  end

  def test_header_style_none_and_status
    r = client([limit("none", "fixedWindow:limit=1,windowMs=3600000")], headers: "none", status: 503)
    env = { "REMOTE_ADDR" => "192.0.2.4" }
    res = r.get("/", env)
    assert_nil res.headers["ratelimit"]
    assert_nil res.headers["ratelimit-limit"]
    res = r.get("/", env)
    assert_equal 503, res.status
    assert res.headers["retry-after"]
  end

  def test_bad_options
    assert_raises(ArgumentError) { client([], headers: "drafts") }
    assert_raises(ArgumentError) { client([], status: 200) }
    assert_raises(ArgumentError) { client([limit("x\n", "fixedWindow:limit=1,windowMs=1000")]) }
    assert_raises(ArgumentError) { client([limit("x", "fixedWindow:limit=1,windowMs=1000", cost: -2)]) }
    # the tables open with the middleware: a bad policy fails at startup
    e = assert_raises(Tkshm::Error) { client([limit("bad", "nope:limit=1")]) }
    assert_equal Tkshm::EPOLICY, e.code
  end

  # A check that fails (here: a strict table with no Redis attached,
  # ENOREDIS) admits, or answers 503 with fail_open: false.
  def test_a_failed_check_fails_open_or_closed
    policy = "gcra:limit=1,periodMs=1000,burst=1;mode=strict"
    r = client([limit("strict", policy)])
    3.times { assert_equal 200, r.get("/", "REMOTE_ADDR" => "192.0.2.1").status }
    r = client([limit("strict", policy)], fail_open: false)
    assert_equal 503, r.get("/", "REMOTE_ADDR" => "192.0.2.1").status
  end
end

class TestRackAttackStore < Minitest::Test
  APP = ->(_env) { [200, { "content-type" => "text/plain" }, ["ok"]] }

  def setup
    @prefix = TkshmTest.table_name("attack")
    Rack::Attack.reset! rescue nil # rubocop:disable Style/RescueModifier
    Rack::Attack.clear_configuration
    Rack::Attack.cache.store = Tkshm::RackAttackStore.new(prefix: @prefix)
  end

  def test_throttle_counts_on_the_store
    Rack::Attack.throttle("req/ip", limit: 3, period: 3600) { |req| req.ip }
    r = Rack::MockRequest.new(Rack::Attack.new(APP))
    statuses = 5.times.map { r.get("/", "REMOTE_ADDR" => "192.0.2.1").status }
    assert_equal [200, 200, 200, 429, 429], statuses
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "192.0.2.2").status
  end

  def test_increment_returns_the_count_and_periods_are_separate
    store = Tkshm::RackAttackStore.new(prefix: @prefix)
    now = Time.now.to_i
    key60 = "rack::attack:#{now / 60}:r:1.2.3.4"
    assert_equal 1, store.increment(key60, 1, expires_in: 60 - (now % 60) + 1)
    assert_equal 3, store.increment(key60, 2, expires_in: 60 - (now % 60) + 1)
    key7 = "rack::attack:#{now / 7}:r:1.2.3.4"
    assert_equal 1, store.increment(key7, 1, expires_in: 7 - (now % 7) + 1)
    store.delete(key60)
    assert_equal 1, store.increment(key60, 1, expires_in: 60 - (now % 60) + 1)
    assert_raises(ArgumentError) { store.increment("no-window-here", 1, expires_in: 5) }
    assert_raises(ArgumentError) { store.increment(key60, 1) }
  end

  def test_the_count_belongs_to_the_window_even_at_its_end
    store = Tkshm::RackAttackStore.new(prefix: @prefix)
    now = Time.now.to_i
    # Rack::Attack read the second before this one (period 1 s: window
    # now - 1, expires_in 2); its count stays in that window, apart from
    # the current window's
    old = "rack::attack:#{now - 1}:r:k"
    assert_equal 1, store.increment(old, 1, expires_in: 2)
    assert_equal 2, store.increment(old, 1, expires_in: 2)
    assert_equal 1, store.increment("rack::attack:#{Time.now.to_i}:r:k", 1, expires_in: 2)
  end

  # More clients in one period than the period's table has slots (a
  # fixed-window table refuses instead of evicting): the store fails open
  # (counts 1) or closed (a count above any limit), never raises into
  # Rack::Attack, and counts each failure; the clients it holds stay exact.
  def test_a_full_table_fails_open_or_closed
    now = Time.now.to_i
    key = ->(i) { "rack::attack:#{now / 3600}:r:10.0.#{i / 256}.#{i % 256}" }
    exp = 3600 - (now % 3600) + 1
    open = Tkshm::RackAttackStore.new(prefix: "#{@prefix}-o", slots: 64)
    counts = 300.times.map { |i| open.increment(key.call(i), 1, expires_in: exp) }
    assert_equal [1], counts.uniq
    assert_operator open.failures, :>, 0
    held = 300 - open.failures
    assert_equal 2, open.increment(key.call(0), 1, expires_in: exp) # held: exact
    closed = Tkshm::RackAttackStore.new(prefix: "#{@prefix}-c", slots: 64, fail_open: false)
    counts = 300.times.map { |i| closed.increment(key.call(i), 1, expires_in: exp) }
    assert_equal held, counts.count(1)
    assert_equal [Tkshm::RackAttackStore::COUNT_LIMIT], (counts - [1]).uniq
    # a bad prefix is no full table: it raises
    bad = Tkshm::RackAttackStore.new(prefix: "/nonexistent-dir/x")
    assert_raises(Tkshm::Error) { bad.increment(key.call(0), 1, expires_in: exp) }
  end

  def test_fail2ban_bans_through_the_store
    Rack::Attack.blocklist("f2b") do |req|
      Rack::Attack::Fail2Ban.filter("f2b-#{req.ip}", maxretry: 2, findtime: 60, bantime: 60) do
        req.path == "/login" && req.get_header("HTTP_X_FAIL")
      end
    end
    r = Rack::MockRequest.new(Rack::Attack.new(APP))
    env = { "REMOTE_ADDR" => "192.0.2.5" }
    # a failure is blocked (Fail2Ban's filter is true for it) and
    # counted; not banned yet after one, banned after two
    assert_equal 200, r.get("/", env).status
    assert_equal 403, r.get("/login", env.merge("HTTP_X_FAIL" => "1")).status
    assert_equal 200, r.get("/", env).status
    assert_equal 403, r.get("/login", env.merge("HTTP_X_FAIL" => "1")).status
    assert_equal 403, r.get("/", env).status
    assert_equal 200, r.get("/", "REMOTE_ADDR" => "192.0.2.6").status
    store = Tkshm::RackAttackStore.new(prefix: @prefix)
    assert_equal 1, store.read("rack::attack:fail2ban:ban:f2b-192.0.2.5")
    store.delete("rack::attack:fail2ban:ban:f2b-192.0.2.5")
    assert_nil store.read("rack::attack:fail2ban:ban:f2b-192.0.2.5")
  end
end
