# frozen_string_literal: true

# ctest: TIMEOUT 180
# ruby_pkgconfig: the gem built against an installed libtkshm, as a user
# does after `cmake --install`: this build installed into a temporary
# prefix, then `gem install` with PKG_CONFIG_PATH naming it.  The
# extension links that libtkshm (with a run path to it) and works.
require_relative "helper"
require "fileutils"
require "open3"

class TestPkgConfig < Minitest::Test
  def test_gem_against_an_installed_libtkshm
    build = ENV.fetch("TKSHM_BUILD_DIR")
    Dir.mktmpdir("tkshm-rb-prefix-") do |tmp|
      prefix = File.join(tmp, "prefix")
      out, ok = Open3.capture2e("cmake", "--install", build, "--prefix", prefix)
      assert ok.success?, out
      pc = Dir[File.join(prefix, "**", "pkgconfig", "tkshm.pc")].first
      refute_nil pc, "no tkshm.pc installed"
      gem = Dir[File.join(build, "ruby-gem", "tkshm-*.gem")].first
      home = File.join(tmp, "home")
      env = { "PKG_CONFIG_PATH" => File.dirname(pc), "GEM_HOME" => home }
      out, ok = Open3.capture2e(env, "gem", "install", "--local", "--no-document", gem)
      assert ok.success?, out + Dir[File.join(home, "extensions", "**", "mkmf.log")].map { |f| File.read(f) }.join
      so = Dir[File.join(home, "gems", "*", "lib", "tkshm", "tkshm.so")].first
      ldd, = Open3.capture2("ldd", so)
      assert_match(%r{libtkshm\.so\.\d+ => #{Regexp.escape(prefix)}/}, ldd)
      script = 'require "tkshm"; Tkshm::Table.open(nil, "2/second") { |t| print t.check("k").remaining }'
      out, ok = Open3.capture2e({ "GEM_HOME" => home }, RbConfig.ruby, "-e", script)
      assert ok.success?, out
      assert_equal "1", out
    end
  end
end
