# frozen_string_literal: true

# ruby_unit: Tkshm::Table, Decision, Error, headers and client_key, as the
# installed gem gives them.
require_relative "helper"

class TestTable < Minitest::Test
  GCRA = "gcra:limit=2,periodMs=1000,burst=2"

  def setup
    @name = TkshmTest.table_name("unit")
  end

  def test_named_table_is_shared_by_every_handle
    a = Tkshm::Table.new(@name, GCRA)
    b = Tkshm::Table.new("/dev/shm/#{@name}", nil, create: false)
    assert_equal "create", a.change[:kind]
    assert_equal "none", b.change[:kind]
    assert a.check("k", 1, 1000.0).allowed
    assert b.check("k", 1, 1000.0).allowed
    d = a.check("k", 1, 1000.0)
    refute d.allowed
    assert_equal 500, d.retry_after_ms
    assert_equal GCRA, b.policy
    assert_equal 2, b.stats[:allowed]
    assert_equal 1, b.stats[:denied]
  ensure
    a&.close
    b&.close
  end

  def test_block_form_closes_and_returns_the_block_value
    table = nil
    value = Tkshm::Table.open(nil, GCRA) do |t|
      table = t
      t.check("k").allowed
    end
    assert_equal true, value
    assert table.closed?
    assert_raises(IOError) { table.check("k") }
    assert_nil table.close # twice is harmless
  end

  def test_block_form_closes_when_the_block_raises
    table = nil
    assert_raises(RuntimeError) do
      Tkshm::Table.open(nil, GCRA) do |t|
        table = t
        raise "boom"
      end
    end
    assert table.closed?
  end

  def test_decision_is_frozen_and_made_only_by_a_table
    Tkshm::Table.open(nil, GCRA) do |t|
      d = t.check("k", 1, 5000.0)
      assert d.frozen?
      assert_raises(FrozenError) { d.allowed = false }
      assert d.allowed?
      assert_equal [true, 2, 1, 5500, 0, 0], d.to_a
      assert_raises(NoMethodError) { Tkshm::Decision.new(true, 1, 1, 1, 0, 0) }
    end
  end

  def test_peek_consumes_nothing_and_reset_forgets
    Tkshm::Table.open(nil, GCRA) do |t|
      2.times { t.check("k", 1, 100.0) }
      refute t.peek("k", 100.0).allowed
      refute t.peek("k", 100.0).allowed
      assert_equal 2, t.stats[:allowed]
      t.reset("k")
      assert t.peek("k", 100.0).allowed
      assert_equal 2, t.check("k", 1, 100.0).remaining + 1
    end
  end

  def test_cost
    Tkshm::Table.open(nil, "fixedWindow:limit=10,windowMs=1000") do |t|
      assert_equal 3, t.check("k", 7, 10.0).remaining
      refute t.check("k", 4, 10.0).allowed
      assert_equal 0, t.check("k", 3, 10.0).remaining
    end
  end

  def test_errors_carry_the_library_codes
    Tkshm::Table.open(nil, GCRA) do |t|
      {
        [""] => Tkshm::EKEYEMPTY,
        ["x" * (Tkshm::KEY_MAX + 1)] => Tkshm::EKEYLONG,
        ["k", 0] => Tkshm::ECOST,
        ["k", Float::NAN] => Tkshm::ECOST,
        ["k", 1, -1.0] => Tkshm::ENOW
      }.each do |args, code|
        e = assert_raises(Tkshm::Error) { t.check(*args) }
        assert_equal code, e.code, args.inspect
        assert_equal Tkshm.constants.find { |c| Tkshm.const_get(c) == code }.to_s, e.name
      end
      assert_equal 0, t.stats[:allowed] + t.stats[:denied]
    end
    e = assert_raises(Tkshm::Error) { Tkshm::Table.new(nil, "gcra:limit=0,periodMs=1000") }
    assert_equal Tkshm::EPOLICY, e.code
    assert_match(/limit/, e.message)
    e = assert_raises(Tkshm::Error) { Tkshm::Table.new(@name, nil, create: false) }
    assert_equal Tkshm::ENOENT, e.code
    e = assert_raises(Tkshm::Error) { Tkshm::Table.new(nil, GCRA, mode: 0o4755) }
    assert_equal Tkshm::EINVAL, e.code
    assert_raises(TypeError) { Tkshm::Table.new(nil, GCRA).check(42) }
  end

  def test_keep_refuses_another_policy_and_open_applies_it
    Tkshm::Table.open(@name, GCRA) do |t|
      e = assert_raises(Tkshm::Error) do
        Tkshm::Table.new(@name, "gcra:limit=5,periodMs=1000,burst=5", keep: true)
      end
      assert_equal Tkshm::EMISMATCH, e.code
      Tkshm::Table.open(@name, "gcra:limit=5,periodMs=1000,burst=5") do |u|
        assert_equal "in_place", u.change[:kind]
      end
      assert_equal "gcra:limit=5,periodMs=1000,burst=5", t.policy
    end
  end

  def test_shared_opens_once_per_process
    a = Tkshm::Table.shared(@name, GCRA)
    assert_same a, Tkshm::Table.shared(@name, GCRA)
    assert_raises(ArgumentError) { Tkshm::Table.shared(nil, GCRA) }
    a.close
    b = Tkshm::Table.shared(@name, GCRA)
    refute_same a, b
    refute b.closed?
  end

  # An anonymous table made before fork is one table for the children:
  # 4 processes checking one key admit the limit in all.
  def test_anonymous_table_is_exact_across_forked_children
    Tkshm::Table.open(nil, "fixedWindow:limit=50,windowMs=3600000") do |t|
      readers = 4.times.map do
        r, w = IO.pipe
        pid = fork do
          r.close
          w.write(100.times.count { t.check("k", 1, 1000.0).allowed }.to_s)
          exit!(0)
        end
        w.close
        [pid, r]
      end
      admitted = readers.sum do |pid, r|
        n = r.read.to_i
        Process.wait(pid)
        n
      end
      assert_equal 50, admitted
      assert_equal 50, t.stats[:allowed]
    end
  end

  def test_a_string_changed_after_the_call_does_not_matter
    Tkshm::Table.open(nil, GCRA) do |t|
      key = +"abc"
      t.check(key, 1, 1.0)
      key << "d"
      assert_equal 1, t.peek("abc", 1.0).remaining
      assert_equal 2, t.peek("abcd", 1.0).remaining
    end
  end
end

class TestMulti < Minitest::Test
  def tables
    wide = Tkshm::Table.new(nil, "fixedWindow:limit=3,windowMs=60000")
    narrow = Tkshm::Table.new(nil, "fixedWindow:limit=1,windowMs=60000")
    yield wide, narrow
  ensure
    wide&.close
    narrow&.close
  end

  def test_all_consumes_nothing_unless_every_dimension_admits
    tables do |wide, narrow|
      m = Tkshm.check_multi([[wide, "k"], [narrow, "k"]], now_ms: 10.0)
      assert m.allowed?
      assert m.frozen?
      assert_equal 1, m.binding
      assert_equal [2, 0], m.decisions.map(&:remaining)
      m = Tkshm.check_multi([[wide, "k"], [narrow, "k"]], now_ms: 10.0)
      refute m.allowed?
      assert_equal 1, m.binding
      assert_equal 2, wide.peek("k", 10.0).remaining
    end
  end

  def test_any_consumes_where_admitted
    tables do |wide, narrow|
      narrow.check("k", 1, 10.0)
      m = Tkshm.check_multi([[narrow, "k"], [wide, "k", 2]], mode: "any", now_ms: 10.0)
      assert m.allowed?
      assert_equal 1, m.binding # the admitter with the most units left
      assert_equal [false, true], m.decisions.map(&:allowed)
      assert_equal 1, wide.peek("k", 10.0).remaining
    end
  end

  def test_errors
    tables do |wide, narrow|
      assert_raises(ArgumentError) { Tkshm.check_multi([[wide, "k"]], mode: "every") }
      assert_equal Tkshm::EINVAL, assert_raises(Tkshm::Error) { Tkshm.check_multi([]) }.code
      e = assert_raises(Tkshm::Error) { Tkshm.check_multi(Array.new(Tkshm::MULTI_MAX + 1) { [wide, "k"] }) }
      assert_equal Tkshm::EINVAL, e.code
      assert_raises(TypeError) { Tkshm.check_multi([["not a table", "k"]]) }
      assert_raises(NoMethodError) { Tkshm.check_multi([[wide, 42]]) }
      # bad input anywhere changes nothing anywhere
      e = assert_raises(Tkshm::Error) { Tkshm.check_multi([[wide, "k"], [narrow, ""]], now_ms: 10.0) }
      assert_equal Tkshm::EKEYEMPTY, e.code
      assert_equal 3, wide.peek("k", 10.0).remaining
      narrow.close
      assert_raises(IOError) { Tkshm.check_multi([[wide, "k"], [narrow, "k"]]) }
    end
  end
end

class TestHttp < Minitest::Test
  def decision(now, allowed: true)
    Tkshm::Table.open(nil, "fixedWindow:limit=1,windowMs=60000") do |t|
      t.check("k", 1, now)
      allowed ? t.peek("j", now) : t.check("k", 1, now)
    end
  end

  def test_header_styles
    d = decision(30_000.0)
    assert_equal({ "RateLimit-Policy" => "\"api\";q=1;w=60", "RateLimit" => "\"api\";r=1;t=30" },
                 Tkshm.headers(d, "api", window_s: 60, now_ms: 30_000.0))
    assert_equal({ "RateLimit-Limit" => "1", "RateLimit-Remaining" => "1", "RateLimit-Reset" => "30" },
                 Tkshm.headers(d, style: "legacy", now_ms: 30_000.0))
    assert_equal({}, Tkshm.headers(d, style: "none", now_ms: 30_000.0))
    denied = decision(30_000.0, allowed: false)
    assert_equal "30", Tkshm.headers(denied, style: "none", now_ms: 30_000.0)["Retry-After"]
    assert_equal "\"default\";q=1", Tkshm.headers(denied, now_ms: 30_000.0)["RateLimit-Policy"]
  end

  def test_header_errors
    d = decision(1.0)
    assert_raises(ArgumentError) { Tkshm.headers(d, style: "drafts") }
    e = assert_raises(Tkshm::Error) { Tkshm.headers(d, "a\r\nSet-Cookie: x") }
    assert_equal Tkshm::EINVAL, e.code
    assert_raises(TypeError) { Tkshm.headers([true, 1, 1, 1, 0, 0]) }
  end

  # The buffer follows the name's length, on the heap when it is long.
  def test_a_very_long_policy_name
    h = Tkshm.headers(decision(1.0), "n" * 10_000_000, now_ms: 1.0)
    assert_equal "\"#{'n' * 10_000_000}\";q=1", h["RateLimit-Policy"]
  end

  def test_client_key
    assert_equal "192.0.2.7", Tkshm.client_key("192.0.2.7")
    assert_equal "192.0.2.7", Tkshm.client_key("::ffff:192.0.2.7")
    assert_equal "2001:db8:1:2::/64", Tkshm.client_key("2001:db8:1:2:aaaa::1")
    assert_equal "2001:db8::/48", Tkshm.client_key("2001:db8:0:2::1", 48)
    e = assert_raises(Tkshm::Error) { Tkshm.client_key("not an address") }
    assert_equal Tkshm::EINVAL, e.code
    assert_equal Tkshm::EINVAL, assert_raises(Tkshm::Error) { Tkshm.client_key("::1", 129) }.code
  end

  def test_version_is_the_library_version
    assert_equal Tkshm::LIBRARY_VERSION, Tkshm::VERSION
  end
end

class TestRedisOptions < Minitest::Test
  def test_redis_options
    assert_raises(ArgumentError) { Tkshm::Redis.new(hots: "x") }
    skip "no Redis tier" unless Tkshm::HAVE_REDIS
    e = assert_raises(Tkshm::Error) { Tkshm::Redis.new(cluster: "a:1", sentinels: "b:2", sentinel_master: "m") }
    assert_equal Tkshm::EINVAL, e.code
    assert_equal Tkshm::EINVAL, assert_raises(Tkshm::Error) { Tkshm::Redis.new(connect_timeout_ms: -1) }.code
    r = Tkshm::Redis.new(cluster: ["127.0.0.1:7000", "127.0.0.1:7001"])
    Tkshm::Table.open(nil, "gcra:limit=2,periodMs=1000,burst=2") do |t|
      e = assert_raises(Tkshm::Error) { t.attach(r) }
      assert_equal Tkshm::ENOTSUP, e.code
      assert_nil t.redis
    end
  end

  # A strict table's key is copied before the GVL is released: one the
  # library refuses (100 MB, empty) is refused without a copy or a wait.
  def test_strict_table_refuses_bad_keys_before_the_network
    skip "no Redis tier" unless Tkshm::HAVE_REDIS
    r = Tkshm::Redis.new(port: 1, connect_timeout_ms: 50)
    Tkshm::Table.open(nil, "gcra:limit=2,periodMs=1000,burst=2;mode=strict", redis: r) do |t|
      assert_equal Tkshm::EKEYLONG, assert_raises(Tkshm::Error) { t.check("x" * 100_000_000) }.code
      assert_equal Tkshm::EKEYEMPTY, assert_raises(Tkshm::Error) { t.peek("") }.code
      assert_equal 0, t.stats[:global][:redis_calls]
    end
  end
end
