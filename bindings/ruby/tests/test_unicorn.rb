# frozen_string_literal: true

# ctest: TIMEOUT 120
# ruby_unicorn: Unicorn (4 workers, the application loaded in each): one
# limit exact across the workers, and a worker killed with kill -9
# mid-request.
require_relative "server_cases"
TkshmTest.need_program("unicorn", "unicorn")
TkshmTest.need("rack", "ruby-rack")

class TestUnicorn < Minitest::Test
  include ServerCases

  def test_four_workers
    exact_across_workers_and_kill9(:unicorn, preload: false)
  end
end
