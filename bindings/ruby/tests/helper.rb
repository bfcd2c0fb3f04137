# frozen_string_literal: true

# What every test file shares: the installed gem (GEM_HOME from ctest, the
# fixture ruby_gem's), never the checkout's lib/; minitest; and helpers
# for real processes on loopback.
require "minitest/autorun"
require "socket"
require "timeout"
require "tmpdir"
require "net/http"
require "tkshm"
require "tempfile"

unless $LOADED_FEATURES.any? { |f| f.end_with?("tkshm/tkshm.so") && f.start_with?(ENV.fetch("GEM_HOME", "/nonexistent")) }
  abort "tkshm was not loaded from the installed gem (GEM_HOME=#{ENV['GEM_HOME'].inspect})"
end

module TkshmTest
  SKIP = 77

  # Exits 77 (ctest's skip) when a Debian package is missing.
  def self.need(lib, package)
    require lib
  rescue LoadError
    warn "SKIP: #{lib} not found (apt-get install #{package})"
    exit SKIP
  end

  def self.need_program(name, package)
    return if ENV["PATH"].split(":").any? { |d| File.executable?(File.join(d, name)) }

    warn "SKIP: #{name} not found (apt-get install #{package})"
    exit SKIP
  end

  # A free TCP port on 127.0.0.1, below 55536 (above it the kernel hands
  # out ephemeral ports that could be taken meanwhile).
  def self.free_port
    200.times do
      port = rand(20_000..55_535)
      begin
        TCPServer.new("127.0.0.1", port).close
        return port
      rescue Errno::EADDRINUSE, Errno::EACCES
        next
      end
    end
    raise "no free port"
  end

  def self.wait_port(port, pid, seconds: 20)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      TCPSocket.new("127.0.0.1", port).close
      return
    rescue Errno::ECONNREFUSED
      raise "server #{pid} exited" if Process.waitpid(pid, Process::WNOHANG)
      raise "port #{port} not open after #{seconds} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  end

  # A unique name for this run's tables in /dev/shm, removed at exit.
  def self.table_name(tag)
    name = "tkshm-rbtest-#{tag}-#{Process.pid}-#{rand(1 << 30)}"
    at_exit { Dir.glob("/dev/shm/#{name}*").each { |f| File.delete(f) } }
    name
  end

  # The pids of the live (not zombie) children of `pid`, from /proc.
  def self.children(pid)
    Dir.glob("/proc/[0-9]*/stat").filter_map do |f|
      state, ppid = File.read(f).split(") ").last.split
      File.basename(File.dirname(f)).to_i if ppid.to_i == pid && state != "Z"
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
  end
end
