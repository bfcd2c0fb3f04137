# frozen_string_literal: true

# Makes the Makefile of tkshm/tkshm.so, the C extension of the tkshm gem.
#
# Two ways to get the C library, in this order:
#   1. an installed libtkshm, found with pkg-config ("tkshm"; a prefix other
#      than /usr: PKG_CONFIG_PATH=$prefix/lib/pkgconfig, or
#      --with-tkshm-dir=$prefix);
#   2. the library's sources, compiled into the extension: those of
#      --with-tkshm-source=DIR (a checkout), else the copy the gem carries
#      (vendor/libtkshm, made by `gem build` in a checkout), else those of
#      the checkout this file sits in.
# --enable-bundled skips 1.  The compiled-in library is hidden
# (-fvisibility=hidden): only Init_tkshm is exported, so another libtkshm
# in the process cannot interpose on it.
require "mkmf"
require "rbconfig"
require "etc"

# Flags the library is compiled with (CMake's TKSHM_C_FLAGS): decisions
# must be bit-identical to the reference IEEE-754 arithmetic, so nothing
# may fuse or reorder floating-point operations.
LIB_FLAGS = %w[-std=c11 -ffp-contract=off -fno-fast-math
               -fvisibility=hidden].freeze
FAST_MATH = /\A(-ffast-math|-Ofast|-ffp-contract=(fast|on)|
               -funsafe-math-optimizations|-fassociative-math)\z/x.freeze

def refuse_fast_math(flags)
  bad = flags.split.grep(FAST_MATH)
  return if bad.empty?

  abort "tkshm must not be compiled with #{bad.join(' ')}: its decisions " \
        "must be bit-identical to IEEE-754 arithmetic (remove it from CFLAGS)"
end

def x86?
  RbConfig::CONFIG["host_cpu"] =~ /\A(x86_64|amd64|i[3-6]86)\z/
end

# The tree whose src/ and include/ the extension compiles, or nil: the
# checkout given, else the copy the gem carries (vendor/libtkshm), else
# the checkout this file sits in.
def source_tree
  given = with_config("tkshm-source")
  # gem install runs this file in the installed gem's directory, where a
  # relative path would name something else than the user meant.
  abort "--with-tkshm-source=#{given}: give an absolute path (\"$PWD/...\")" \
    if given && !given.start_with?("/")
  dirs = given ? [given] : [File.expand_path("../../vendor/libtkshm", __dir__),
                            File.expand_path("../../../..", __dir__)]
  root = dirs.map { |d| File.expand_path(d) }.find do |d|
    File.file?(File.join(d, "include", "tkshm.h")) &&
      Dir.exist?(File.join(d, "src", "shm"))
  end
  abort "--with-tkshm-source=#{given}: no tkshm checkout there" if given && !root
  root
end

# pkg-config's words for a module, or nil when it is missing.
def pkg_words(mod, what)
  out = IO.popen(["pkg-config", what, mod], err: File::NULL, &:read)
  $?.success? ? out.split : nil
rescue Errno::ENOENT
  abort "pkg-config is not installed (apt-get install pkg-config)"
end

def use_installed_library
  return false if enable_config("bundled", false)
  return false unless pkg_config("tkshm")

  # pkg-config gives -L but no run path: without one, a prefix outside the
  # loader's path is "not found" at require time.
  libdir = pkg_words("tkshm", "--variable=libdir")&.first
  $LDFLAGS << " -Wl,-rpath,#{libdir}" if libdir && !libdir.empty?
  abort "libtkshm found by pkg-config, but not tkshm_http.h" \
    unless have_header("tkshm_http.h")
  abort "libtkshm found by pkg-config, but it does not link" \
    unless have_library("tkshm", "tkshm_check")
  $defs << "-DTKSHM_RB_HAVE_REDIS=1" if have_func("tkshm_redis_open", "tkshm_redis.h")
  true
end

# The Redis scripts as C strings, as cmake/embed-lua.cmake embeds them:
# "local SCRIPT_NAME = '<name>'", src/redis/lua/prelude.lib, the script.
def write_lua_sources(root, out)
  lua = File.join(root, "src", "redis", "lua")
  prelude = File.binread(File.join(lua, "prelude.lib"))
  File.open(out, "w") do |f|
    f.puts "/* Generated from src/redis/lua/ by bindings/ruby/ext/tkshm/extconf.rb. */"
    Dir[File.join(lua, "*.lua")].sort.each do |path|
      name = File.basename(path, ".lua")
      data = "local SCRIPT_NAME = '#{name}'\n".b + prelude + File.binread(path)
      f.puts "const char tk_lua_#{name}[] = {#{data.bytes.map { |b| "0x%02x," % b }.join}0x00};"
    end
  end
end

# The library's C files as CMakeLists.txt lists them.
def library_sources(root, redis)
  Dir[File.join(root, "src", "*", "*.c")].sort.reject do |p|
    rel = p.delete_prefix("#{root}/")
    rel == "src/shm/crash_point.c" ||
      (!redis && rel.start_with?("src/redis/", "src/agent/"))
  end
end

# Compiles each source to an object here (named by its index: the
# library's directories repeat file names), as many at once as there are
# CPUs (MAKEFLAGS' -j does not reach extconf.rb); returns the objects.
def compile_all(sources, flags)
  cc = RbConfig::CONFIG["CC"].split
  jobs = sources.each_with_index.map do |src, i|
    [src, format("tklib_%03d_%s.o", i, File.basename(src, ".c"))]
  end
  queue = Queue.new
  jobs.each { |job| queue << job }
  failed = Queue.new
  workers = Array.new([Etc.nprocessors, 1].max) do
    Thread.new do
      while (job = (queue.pop(true) rescue nil))
        failed << job[0] unless system(*cc, *flags, "-c", job[0], "-o", job[1])
      end
    end
  end
  workers.each(&:join)
  abort "tkshm: compiling #{failed.pop} failed" unless failed.empty?
  jobs.map(&:last)
end

# Compiles the library from `root` into libtkshm_bundled.a here and links
# it.  Done now rather than by the Makefile: mkmf's Makefile compiles one
# directory's files, and the library's span several with repeated names.
def build_bundled_library(root)
  deps = %w[libxxhash liburcu-bp].map do |mod|
    pkg_words(mod, "--cflags") or
      abort "#{mod} not found by pkg-config (apt-get install " \
            "#{mod == 'libxxhash' ? 'libxxhash-dev' : 'liburcu-dev'})"
  end
  redis = pkg_words("hiredis", "--cflags")
  puts "tkshm: C library from #{root}, Redis tier " \
       "#{redis ? 'on' : 'off (hiredis not found: install libhiredis-dev)'}"
  flags = LIB_FLAGS + (x86? ? ["-mcx16"] : []) +
          %w[-O2 -g -fPIC -D_GNU_SOURCE -DTKSHM_STATIC_DEFINE] +
          ["-I#{root}/include", "-I#{root}/src"] + deps.flatten + (redis || [])
  flags << "-DTKSHM_HAVE_REDIS=1" if redis
  sources = library_sources(root, redis)
  if redis
    write_lua_sources(root, "lua_sources.c")
    sources << File.expand_path("lua_sources.c")
  end
  objects = compile_all(sources, flags)
  File.delete("libtkshm_bundled.a") if File.exist?("libtkshm_bundled.a")
  system("ar", "rcs", "libtkshm_bundled.a", *objects) or abort "tkshm: ar failed"
  $INCFLAGS << " -I#{root}/include"
  $LOCAL_LIBS << " #{File.expand_path('libtkshm_bundled.a')}"
  libs = %w[libxxhash liburcu-bp].flat_map { |m| pkg_words(m, "--libs") }
  libs += pkg_words("hiredis", "--libs") if redis
  $libs = "#{$libs} #{libs.join(' ')} -lm -lpthread"
  # Only Init_tkshm leaves the .so: the library's symbols stay inside.
  $DLDFLAGS << " -Wl,--exclude-libs,ALL"
  $defs << "-DTKSHM_STATIC_DEFINE"
  $defs << "-DTKSHM_RB_HAVE_REDIS=1" if redis
end

refuse_fast_math("#{RbConfig::CONFIG['CFLAGS']} #{ENV['CFLAGS']}")
unless use_installed_library
  root = source_tree or
    abort "tkshm: libtkshm not found by pkg-config and no library sources " \
          "to build it from: install libtkshm (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig) " \
          "or give --with-tkshm-source=<checkout>"
  build_bundled_library(root)
end
# Ruby's own headers as system headers: their warnings under -Wextra are
# not ours to fix.
$INCFLAGS = $INCFLAGS.gsub(/-I(\$\((?:arch_hdrdir|hdrdir)\)\S*)/, '-isystem \\1')
$CFLAGS << " -std=c11 -fvisibility=hidden -Wall -Wextra"
$CFLAGS << " -Werror" if enable_config("werror", false)
create_makefile("tkshm/tkshm")
