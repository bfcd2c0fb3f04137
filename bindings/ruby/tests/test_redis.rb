# frozen_string_literal: true

# ruby_redis: a strict table decided on this test's own redis-server
# through Tkshm::Redis: exact from threads that share one connection (the
# checks run without the GVL, one exchange at a time), from forked
# processes (each its own socket), and the failure policy once the server
# is gone.
require_relative "helper"
TkshmTest.need_program("redis-server", "redis-server")

class TestRedis < Minitest::Test
  POLICY = "fixedWindow:limit=20,windowMs=3600000;mode=strict,prefix=rbtest"

  def setup
    skip "no Redis tier" unless Tkshm::HAVE_REDIS
    @port = TkshmTest.free_port
    @redis_pid = Process.spawn("redis-server", "--port", @port.to_s, "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", out: File::NULL)
    TkshmTest.wait_port(@port, @redis_pid)
    @conn = Tkshm::Redis.new(port: @port, command_timeout_ms: 1000)
  end

  def teardown
    return unless @redis_pid

    Process.kill(:KILL, @redis_pid)
    Process.wait(@redis_pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  def test_threads_share_the_connection_and_stay_exact
    Tkshm::Table.open(nil, POLICY, redis: @conn) do |t|
      assert_same @conn, t.redis
      admitted = Array.new(4) { Thread.new { 10.times.count { t.check("k").allowed } } }.sum(&:value)
      assert_equal 20, admitted
      assert_equal 0, t.peek("k").remaining
      assert_operator t.stats[:global][:redis_calls], :>=, 20
      assert_equal "", @conn.last_error
    end
  end

  def test_forked_processes_each_connect
    Tkshm::Table.open(nil, POLICY, redis: @conn) do |t|
      t.check("f") # this process connects first; children get their own
      pids = Array.new(3) do
        fork { exit!(10.times.count { t.check("f").allowed }) }
      end
      admitted = 1 + pids.sum { |pid| Process.wait2(pid).last.exitstatus }
      assert_equal 20, admitted
    end
  end

  def test_a_server_gone_gets_the_failure_policy
    Tkshm::Table.open(nil, "#{POLICY},failure=fail-closed", redis: @conn) do |t|
      assert t.check("g").allowed
      Process.kill(:KILL, @redis_pid)
      Process.wait(@redis_pid)
      @redis_pid = nil
      d = t.check("g")
      refute d.allowed
      assert_equal Tkshm::DECISION_FALLBACK, d.flags & Tkshm::DECISION_FALLBACK
      refute_empty @conn.last_error
      e = assert_raises(Tkshm::Error) { t.peek("g") }
      assert_includes [Tkshm::EUNAVAILABLE, Tkshm::EREDIS], e.code
      t.attach(nil)
      assert_equal Tkshm::ENOREDIS, assert_raises(Tkshm::Error) { t.check("g") }.code
    end
  end
end
