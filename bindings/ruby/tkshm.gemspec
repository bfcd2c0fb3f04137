# frozen_string_literal: true

# gem build tkshm.gemspec, then gem install ./tkshm-0.1.0.gem: the C
# extension is compiled against an installed libtkshm (pkg-config), or
# else from the library's sources the gem carries (README.md).
#
# Built in a checkout, the gem carries a copy of the library's src/ and
# include/ (vendor/libtkshm/, made here and git-ignored), so that it
# installs anywhere, with no checkout and no libtkshm.
# TKSHM_SOURCE_DIR names the checkout when this file is not in one.
require "fileutils"
require_relative "lib/tkshm/version"

here = __dir__
root = ENV["TKSHM_SOURCE_DIR"] || File.expand_path("../..", here)
vendor = File.join(here, "vendor", "libtkshm")
if File.file?(File.join(root, "include", "tkshm.h")) && File.directory?(File.join(root, "src"))
  FileUtils.rm_rf(vendor)
  FileUtils.mkdir_p(vendor)
  FileUtils.cp_r([File.join(root, "src"), File.join(root, "include")], vendor)
  Dir[File.join(vendor, "**", "*.{o,a,so,pyc}")].each { |f| File.delete(f) }
end

Gem::Specification.new do |s|
  s.name = "tkshm"
  s.version = Tkshm::VERSION
  s.summary = "Shared-memory rate limiter, exact across Puma and Unicorn workers"
  s.description = "tkshm's C library for Ruby: tables in shared memory that " \
                  "every worker of a host checks, Rack middleware and a " \
                  "Rack::Attack cache store."
  s.authors = ["tkshm developers"]
  s.required_ruby_version = ">= 3.0"
  s.files = Dir.chdir(here) do
    Dir["lib/**/*.rb", "ext/tkshm/*.{c,h,rb}", "README.md"] +
      Dir["vendor/libtkshm/**/*"].select { |f| File.file?(f) }
  end
  s.extensions = ["ext/tkshm/extconf.rb"]
  s.require_paths = ["lib"]
end
