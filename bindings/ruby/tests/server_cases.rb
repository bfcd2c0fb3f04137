# frozen_string_literal: true

require_relative "servers"

# The cases every prefork server passes: one limit exact across its 4
# workers, and a worker killed with kill -9 in the middle of a request.
module ServerCases
  LIMIT = 30

  # Starts `kind` with the Limiter over a fresh table; 20 requests are
  # admitted by several workers, a worker is killed while serving one
  # (admitted: it counts), the server replaces it, and of 30 more exactly
  # LIMIT - 21 are admitted.  The table, read by this process, agrees.
  def exact_across_workers_and_kill9(kind, preload:)
    table = TkshmTest.table_name(kind)
    server = TkshmTest::Server.new(kind, mode: "limiter", table: table, limit: LIMIT, preload: preload)
    workers = server.workers
    # the mode asked for is the mode Puma runs in
    assert_equal preload, server.log.include?("Preloading application"), server.log if kind == :puma
    statuses, pids = server.burst("/busy", 20)
    assert_equal [200] * 20, statuses, server.log
    assert_operator (pids.uniq & workers).size, :>=, 2, "one worker served every request"

    victim, outcome = server.kill_worker_mid_request
    assert_kind_of Class, outcome, "the killed worker's request got an answer: #{outcome.inspect}"
    refute_includes server.workers(gone: victim), victim

    statuses, = server.burst("/busy", 30)
    assert_equal LIMIT - 21, statuses.count(200), statuses.tally.inspect
    assert_equal 30 - (LIMIT - 21), statuses.count(429), statuses.tally.inspect
    Tkshm::Table.open(table, nil, create: false) do |t|
      assert_equal LIMIT, t.stats[:allowed]
      assert_equal 30 - (LIMIT - 21), t.stats[:denied]
      assert_equal 0, t.peek("127.0.0.1").remaining
    end
  ensure
    server&.stop
  end
end
