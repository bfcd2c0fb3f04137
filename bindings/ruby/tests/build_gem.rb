# frozen_string_literal: true

# The fixture ruby_gem: builds the gem as a user does and installs it into
# OUT/home, compiling the copy of the library's sources the gem carries
# (--enable-bundled: never a libtkshm that happens to be installed):
#
#   gem build tkshm.gemspec                  (TKSHM_SOURCE_DIR=ROOT)
#   gem install --local --no-document tkshm-X.gem -- --enable-bundled
#
# Usage: ruby build_gem.rb OUT ROOT [--enable-werror]
require "fileutils"
require "tmpdir"

out, root, *extra = ARGV
abort "usage: build_gem.rb OUT ROOT [--enable-werror]" unless out && root
out = File.expand_path(out)
gem_src = File.expand_path("..", __dir__)

FileUtils.rm_rf(out)
FileUtils.mkdir_p(out)
# Built from a copy: `gem build` writes the .gem next to the gemspec, and
# two build trees' ctest runs at once must not meet in the checkout.
Dir.mktmpdir("tkshm-gem-") do |tmp|
  FileUtils.cp_r(Dir[File.join(gem_src, "{tkshm.gemspec,README.md,lib,ext}")], tmp)
  Dir.chdir(tmp) do
    system({ "TKSHM_SOURCE_DIR" => File.expand_path(root) }, "gem", "build", "tkshm.gemspec",
           exception: true)
  end
  gem = Dir[File.join(tmp, "tkshm-*.gem")].first or abort "no .gem built"
  FileUtils.cp(gem, out)
end
gem = Dir[File.join(out, "tkshm-*.gem")].first
env = { "GEM_HOME" => File.join(out, "home") }
# Installed from a directory where no checkout is around it.
ok = Dir.chdir(Dir.tmpdir) do
  system(env, "gem", "install", "--local", "--no-document", gem, "--", "--enable-bundled", *extra)
end
unless ok
  Dir[File.join(out, "home", "extensions", "**", "{gem_make.out,mkmf.log}")].each do |log|
    warn "---- #{log}"
    warn File.read(log)
  end
  abort "gem install failed"
end
puts "tkshm gem installed into #{out}/home"
