# frozen_string_literal: true

# ctest: TIMEOUT 120
# ruby_puma: Puma in cluster mode (4 workers), with preload_app! and
# without: one limit exact across the workers, and a worker killed with
# kill -9 mid-request.
require_relative "server_cases"
TkshmTest.need_program("puma", "puma")
TkshmTest.need("rack", "ruby-rack")

class TestPuma < Minitest::Test
  include ServerCases

  def test_cluster_with_preload_app
    exact_across_workers_and_kill9(:puma, preload: true)
  end

  def test_cluster_without_preload_app
    exact_across_workers_and_kill9(:puma, preload: false)
  end
end
