# frozen_string_literal: true

# ruby_example: examples/sinatra run as its README says (puma -C puma.rb
# config.ru, 4 workers): /api's two limits and /login's, across workers.
require_relative "helper"
TkshmTest.need_program("puma", "puma")
TkshmTest.need("sinatra/base", "ruby-sinatra")

class TestExample < Minitest::Test
  EXAMPLE = File.expand_path("../examples/sinatra", __dir__)

  def setup
    @prefix = TkshmTest.table_name("sinatra")
    @port = TkshmTest.free_port
    @log = Tempfile.create("tkshm-sinatra-log")
    @pid = Process.spawn({ "PORT" => @port.to_s, "TKSHM_EXAMPLE_TABLES" => @prefix, "RACK_ENV" => "production" },
                         "puma", "-C", "puma.rb", "config.ru", chdir: EXAMPLE, out: @log.path, err: @log.path)
    TkshmTest.wait_port(@port, @pid)
  end

  def teardown
    Process.kill(:TERM, @pid)
    Process.wait(@pid)
    File.delete(@log.path)
  end

  def request(method, path, headers = {})
    Net::HTTP.start("127.0.0.1", @port, max_retries: 0) do |http|
      req = (method == :get ? Net::HTTP::Get : Net::HTTP::Post).new(path, headers.merge("Connection" => "close"))
      req.set_form_data("user" => "ann") if method == :post
      http.request(req)
    end
  end

  def test_api_burst_and_login_limits
    # burst 10 (and 20 a second): of 40 requests from 8 clients at once,
    # at least 10 are admitted and some denied; the table counts as the
    # workers answered
    codes = Array.new(8) do
      Thread.new { Array.new(5) { request(:get, "/api/hello", "X-Api-Key" => "k1").code } }
    end.flat_map(&:value)
    assert_operator codes.count("200"), :>=, 10, File.read(@log.path)
    assert_operator codes.count("429"), :>=, 1, codes.tally.inspect
    Tkshm::Table.open("#{@prefix}-api", nil, create: false) do |t|
      assert_equal [codes.count("200"), codes.count("429")], [t.stats[:allowed], t.stats[:denied]]
    end
    res = request(:get, "/api/hello")
    assert_match(/\A"api(-hour)?";q=\d+/, res["ratelimit-policy"].to_s) if res.code == "200"

    logins = Array.new(7) { request(:post, "/login") }
    assert_equal %w[200 200 200 200 200 429 429], logins.map(&:code)
    assert_equal "\"login\";q=5;w=60", logins.first["ratelimit-policy"]
    assert_match(/\A"login";r=4;t=\d+\z/, logins.first["ratelimit"])
    assert logins.last["retry-after"].to_i >= 1
    Tkshm::Table.open("#{@prefix}-login", nil, create: false) do |t|
      assert_equal 5, t.stats[:allowed]
    end
  end
end
