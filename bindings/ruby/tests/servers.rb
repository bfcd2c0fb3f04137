# frozen_string_literal: true

# Puma and Unicorn started by the tests on 127.0.0.1, with the
# application apps/limits.ru, and the requests the tests send them.
require_relative "helper"
require "fileutils"

module TkshmTest
  APP = File.expand_path("apps/limits.ru", __dir__)

  # A server's master process (its workers are its children).
  class Server
    attr_reader :pid, :port, :dir

    # kind :puma (cluster mode) or :unicorn; 4 workers.
    def initialize(kind, mode:, table:, limit:, preload: false, workers: 4)
      @kind = kind
      @port = TkshmTest.free_port
      @dir = Dir.mktmpdir("tkshm-rb-#{kind}-")
      @workers = workers
      config = File.join(@dir, "server.rb")
      File.write(config, kind == :puma ? puma_config(preload) : unicorn_config(preload))
      env = { "TKSHM_TEST_MODE" => mode, "TKSHM_TEST_TABLE" => table,
              "TKSHM_TEST_LIMIT" => limit.to_s, "TKSHM_TEST_DIR" => @dir,
              "RACK_ENV" => "none" }
      cmd = kind == :puma ? ["puma", "-C", config, APP] : ["unicorn", "-c", config, APP]
      @log = File.join(@dir, "server.log")
      @pid = Process.spawn(env, *cmd, out: @log, err: @log)
      TkshmTest.wait_port(@port, @pid)
    end

    def puma_config(preload)
      <<~RUBY
        bind "tcp://127.0.0.1:#{@port}"
        workers #{@workers}
        threads 1, 4
        preload_app! #{preload}
        worker_timeout 60
        quiet
      RUBY
    end

    def unicorn_config(preload)
      <<~RUBY
        listen "127.0.0.1:#{@port}"
        worker_processes #{@workers}
        preload_app #{preload}
        timeout 60
      RUBY
    end

    # The live workers, once all of them are up, `gone` (a killed one)
    # not among them.
    def workers(gone: nil, seconds: 20)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      loop do
        kids = TkshmTest.children(@pid)
        return kids if kids.size == @workers && !kids.include?(gone)
        raise "#{@kind}: #{kids.size} workers, not #{@workers}\n#{log}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.05
      end
    end

    def log
      File.exist?(@log) ? File.read(@log) : ""
    end

    # GET path on a new connection (so the workers share the requests):
    # [status, worker pid].  Never retried: Net::HTTP resends a GET whose
    # connection broke, which would run /slow twice.
    def get(path)
      Net::HTTP.start("127.0.0.1", @port, read_timeout: 30, max_retries: 0) do |http|
        res = http.get(path, "Connection" => "close")
        [res.code.to_i, res["x-worker"].to_i]
      end
    end

    # n requests from `clients` threads at once: [statuses, worker pids].
    def burst(path, n, clients: 8)
      queue = Queue.new
      n.times { queue << true }
      results = Queue.new
      Array.new(clients) do
        Thread.new do
          while (queue.pop(true) rescue nil) # rubocop:disable Style/RescueModifier
            results << get(path)
          end
        end
      end.each(&:join)
      pairs = Array.new(results.size) { results.pop }
      [pairs.map(&:first), pairs.map(&:last)]
    end

    # Starts /slow, whose worker writes its pid and sleeps, and kills that
    # worker with kill -9 while the request is in flight; returns its pid
    # and what the client saw.
    def kill_worker_mid_request
      outcome = Queue.new
      client = Thread.new do
        outcome << get("/slow")
      rescue StandardError => e
        outcome << e.class
      end
      pid_file = File.join(@dir, "slow.pid")
      Timeout.timeout(20) { sleep 0.02 until File.exist?(pid_file) }
      victim = File.read(pid_file).to_i
      raise "/slow ran in #{victim}, not a worker" unless TkshmTest.children(@pid).include?(victim)

      Process.kill(:KILL, victim)
      client.join(30)
      [victim, outcome.pop(true)]
    end

    # TERM (Puma) or QUIT (Unicorn) to the master, which stops its
    # workers; kill -9 of the master and the workers it had if it has not
    # exited in 10 s.
    def stop
      return unless @pid

      kids = TkshmTest.children(@pid)
      Process.kill(@kind == :puma ? :TERM : :QUIT, @pid)
      unless exited_within(10)
        ([@pid] + kids).each { |p| kill9(p) }
        Process.wait(@pid)
      end
      kids.each { |p| kill9(p) } # none should be left
    ensure
      @pid = nil
      FileUtils.rm_rf(@dir)
    end

    private

    def exited_within(seconds)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      until Process.waitpid(@pid, Process::WNOHANG)
        return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.05
      end
      true
    end

    def kill9(pid)
      Process.kill(:KILL, pid)
    rescue Errno::ESRCH
      nil
    end
  end
end
