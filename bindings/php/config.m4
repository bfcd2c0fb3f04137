dnl config.m4: tkshm.so built the way PHP extensions are (README.md,
dnl "Building with phpize"):
dnl
dnl   phpize && ./configure [--with-tkshm[=DIR]] [--enable-tkshm-bundled]
dnl   make && make install
dnl
dnl Two ways to get the C library:
dnl   --with-tkshm        (default) link the libtkshm that pkg-config finds
dnl                       (tkshm.pc; set PKG_CONFIG_PATH for a prefix);
dnl   --with-tkshm=DIR    link the libtkshm installed under DIR
dnl                       (DIR/include/tkshm.h, DIR/lib*/libtkshm.so);
dnl   --enable-tkshm-bundled
dnl                       compile the library's sources into tkshm.so, as the
dnl                       CMake build does: ./libtkshm/{src,include} (a PECL
dnl                       package, made by pecl-package.sh) or else
dnl                       ../../{src,include} (inside the repository).  The
dnl                       Redis tier is compiled in when pkg-config finds
dnl                       hiredis (--disable-tkshm-redis: never).
dnl
dnl Every C file gets the flags of CMakeLists.txt's TKSHM_C_FLAGS: C11, no
dnl fused multiply-add and no fast math (decisions bit-identical to
dnl ThrottleKit's IEEE-754 arithmetic), hidden symbols (tkshm.so exports
dnl get_module only), -mcx16 on x86 (the 16-byte CAS inlined, never a
dnl libatomic call).  They come after CFLAGS on the compiler's command line.

PHP_ARG_WITH([tkshm],
  [for tkshm support],
  [AS_HELP_STRING([[--with-tkshm[=DIR]]],
    [tkshm support: link the libtkshm found by pkg-config (tkshm.pc), or
     the one installed under DIR])],
  [yes])

PHP_ARG_ENABLE([tkshm-bundled],
  [whether to compile libtkshm into tkshm.so],
  [AS_HELP_STRING([--enable-tkshm-bundled],
    [tkshm: compile the C library from its sources (./libtkshm, or
     ../../src and ../../include in the repository) instead of linking an
     installed libtkshm])],
  [no],
  [no])

PHP_ARG_ENABLE([tkshm-redis],
  [whether to compile the bundled libtkshm's Redis tier],
  [AS_HELP_STRING([--disable-tkshm-redis],
    [tkshm: with --enable-tkshm-bundled, leave out the Redis tier even when
     hiredis is found])],
  [yes],
  [no])

if test "$PHP_TKSHM" != "no"; then
  dnl The extension's own sources (bindings/php/src).
  tkshm_ext_sources="src/module.c src/exception.c src/decision.c \
    src/registry.c src/change.c src/table.c src/redis.c src/http.c"

  dnl Flags that would let the compiler fuse or reorder floating-point
  dnl operations are refused, wherever the user's CFLAGS put them.
  for tkshm_flag in $CFLAGS; do
    case $tkshm_flag in
      -ffast-math|-Ofast|-ffp-contract=fast|-ffp-contract=on|-funsafe-math-optimizations|-fassociative-math)
        AC_MSG_ERROR([tkshm must not be compiled with $tkshm_flag: its decisions must be bit-identical to the reference IEEE-754 arithmetic (remove it from CFLAGS)]) ;;
    esac
  done

  tkshm_cflags="-std=c11 -ffp-contract=off -fno-fast-math -fvisibility=hidden"
  tkshm_cpu=$host_cpu
  test -n "$tkshm_cpu" || tkshm_cpu=`uname -m`
  case $tkshm_cpu in
    x86_64|amd64|AMD64|i?86) tkshm_cflags="$tkshm_cflags -mcx16" ;;
  esac

  if test "$PHP_TKSHM_BUNDLED" != "no"; then
    dnl ---- The library compiled in --------------------------------------
    dnl A package's copy first: an unpacked PECL package must never pick up
    dnl another checkout that happens to sit two levels above it.
    AC_MSG_CHECKING([for the libtkshm sources])
    tkshm_root=
    for tkshm_dir in "$abs_srcdir/libtkshm" "$abs_srcdir/../.."; do
      if test -f "$tkshm_dir/include/tkshm.h" && test -f "$tkshm_dir/src/api/table_api.c"; then
        tkshm_root=`cd -P "$tkshm_dir" && pwd -P`
        break
      fi
    done
    if test -z "$tkshm_root"; then
      AC_MSG_ERROR([the C library's sources are missing: build inside the repository (bindings/php, with src/ and include/ two levels up) or from a PECL package (which carries them in libtkshm/)])
    fi
    AC_MSG_RESULT([$tkshm_root])

    dnl The Debian libraries the library links, as CMakeLists.txt finds
    dnl them: libxxhash (header-only use: XXH_INLINE_ALL) and liburcu-bp
    dnl required, hiredis optional.
    PKG_CHECK_MODULES([TKSHM_XXHASH], [libxxhash], [],
      [AC_MSG_ERROR([libxxhash was not found by pkg-config: install libxxhash-dev])])
    PKG_CHECK_MODULES([TKSHM_URCU], [liburcu-bp], [],
      [AC_MSG_ERROR([liburcu-bp was not found by pkg-config: install liburcu-dev])])
    tkshm_redis=no
    if test "$PHP_TKSHM_REDIS" != "no"; then
      PKG_CHECK_MODULES([TKSHM_HIREDIS], [hiredis], [tkshm_redis=yes],
        [AC_MSG_WARN([hiredis not found (install libhiredis-dev): the Redis class will throw ENOTSUP])])
    fi
    AC_MSG_CHECKING([whether to compile the Redis tier])
    AC_MSG_RESULT([$tkshm_redis])

    dnl The library's files: src/*/*.c as CMakeLists.txt globs them,
    dnl without src/redis/ and src/agent/ unless the Redis tier is built,
    dnl and never src/shm/crash_point.c (a debug build's, TKSHM_CRASH_POINTS).
    tkshm_lib_sources=
    for tkshm_file in "$tkshm_root"/src/*/*.c; do
      tkshm_rel=${tkshm_file#"$tkshm_root/src/"}
      case $tkshm_rel in
        shm/crash_point.c) continue ;;
        redis/* | agent/*) test "$tkshm_redis" = "yes" || continue ;;
      esac
      tkshm_lib_sources="$tkshm_lib_sources $tkshm_rel"
    done

    dnl Compiled as CMake's tkshm_obj: _GNU_SOURCE, the private include
    dnl path src/, the dependencies' include dirs only (-I words).
    tkshm_lib_flags="$tkshm_cflags -D_GNU_SOURCE -DTKSHM_STATIC_DEFINE -I$tkshm_root/include -I$tkshm_root/src"
    tkshm_dep_cflags="$TKSHM_XXHASH_CFLAGS $TKSHM_URCU_CFLAGS"
    if test "$tkshm_redis" = "yes"; then
      tkshm_lib_flags="$tkshm_lib_flags -DTKSHM_HAVE_REDIS=1"
      tkshm_dep_cflags="$tkshm_dep_cflags $TKSHM_HIREDIS_CFLAGS"
    fi
    for tkshm_flag in $tkshm_dep_cflags; do
      case $tkshm_flag in
        -I*) tkshm_lib_flags="$tkshm_lib_flags $tkshm_flag" ;;
      esac
    done
    dnl TKSHM_STATIC_DEFINE: the library's API is not exported either (no
    dnl visibility("default")), so nothing in tkshm.so can interpose on
    dnl another libtkshm loaded into the process.
    tkshm_ext_flags="$tkshm_cflags -DTKSHM_STATIC_DEFINE -I$tkshm_root/include"
    test "$tkshm_redis" = "yes" && tkshm_ext_flags="$tkshm_ext_flags -DTKSHM_PHP_HAVE_REDIS=1"

    PHP_EVAL_LIBLINE([$TKSHM_URCU_LIBS], [TKSHM_SHARED_LIBADD])
    PHP_EVAL_LIBLINE([$TKSHM_XXHASH_LIBS], [TKSHM_SHARED_LIBADD])
    test "$tkshm_redis" = "yes" && PHP_EVAL_LIBLINE([$TKSHM_HIREDIS_LIBS], [TKSHM_SHARED_LIBADD])
    PHP_ADD_LIBRARY([m], [1], [TKSHM_SHARED_LIBADD])
    PHP_ADD_LIBRARY([pthread], [1], [TKSHM_SHARED_LIBADD])
  else
    dnl ---- An installed libtkshm --------------------------------------------
    tkshm_ext_flags="$tkshm_cflags"
    if test "$PHP_TKSHM" = "yes"; then
      PKG_CHECK_MODULES([TKSHM_PC], [tkshm >= 0.1.0], [],
        [AC_MSG_ERROR([tkshm.pc was not found by pkg-config: install libtkshm (cmake --install), set PKG_CONFIG_PATH to its lib/pkgconfig, give --with-tkshm=DIR, or build it in with --enable-tkshm-bundled])])
      PHP_EVAL_INCLINE([$TKSHM_PC_CFLAGS])
      PHP_EVAL_LIBLINE([$TKSHM_PC_LIBS], [TKSHM_SHARED_LIBADD])
      tkshm_check_libs=$TKSHM_PC_LIBS
    else
      AC_MSG_CHECKING([for libtkshm under $PHP_TKSHM])
      tkshm_libdir=
      tkshm_multiarch=`$CC -print-multiarch 2>/dev/null`
      for tkshm_dir in $PHP_LIBDIR lib64 lib ${tkshm_multiarch:+lib/$tkshm_multiarch}; do
        if test -f "$PHP_TKSHM/$tkshm_dir/libtkshm.so" || test -f "$PHP_TKSHM/$tkshm_dir/libtkshm.a"; then
          tkshm_libdir=$PHP_TKSHM/$tkshm_dir
          break
        fi
      done
      if test ! -f "$PHP_TKSHM/include/tkshm.h" || test -z "$tkshm_libdir"; then
        AC_MSG_RESULT([not found])
        AC_MSG_ERROR([no libtkshm under $PHP_TKSHM (expected include/tkshm.h and lib/libtkshm.so)])
      fi
      AC_MSG_RESULT([$tkshm_libdir])
      PHP_ADD_INCLUDE([$PHP_TKSHM/include])
      tkshm_check_libs="-L$tkshm_libdir -ltkshm"
      PHP_CHECK_LIBRARY([tkshm], [tkshm_open],
        [PHP_ADD_LIBRARY_WITH_PATH([tkshm], [$tkshm_libdir], [TKSHM_SHARED_LIBADD])],
        [AC_MSG_ERROR([libtkshm in $tkshm_libdir cannot be linked (see config.log)])],
        [-L$tkshm_libdir])
    fi
    dnl Tkshm\Redis needs the library's Redis tier (tkshm_redis_open is
    dnl there only when the library was built with hiredis); without it its
    dnl constructor throws ENOTSUP saying so.
    tkshm_save_LIBS=$LIBS
    LIBS="$tkshm_check_libs $LIBS"
    AC_CHECK_FUNC([tkshm_redis_open],
      [tkshm_ext_flags="$tkshm_ext_flags -DTKSHM_PHP_HAVE_REDIS=1"])
    LIBS=$tkshm_save_LIBS
  fi

  PHP_SUBST([TKSHM_SHARED_LIBADD])
  PHP_NEW_EXTENSION([tkshm], [$tkshm_ext_sources], [$ext_shared], [],
    [$tkshm_ext_flags])
  PHP_ADD_BUILD_DIR([$ext_builddir/src])

  if test "$PHP_TKSHM_BUNDLED" != "no"; then
    dnl The library's objects go to bundled/ in the build directory (never
    dnl beside its sources, which may be the repository's src/): one rule
    dnl per file, compiled as PHP_NEW_EXTENSION compiles the extension's.
    for tkshm_rel in $tkshm_lib_sources; do
      tkshm_obj=bundled/${tkshm_rel%.c}
      shared_objects_tkshm="$shared_objects_tkshm $tkshm_obj.lo"
      cat >>Makefile.objects <<EOF
-include $tkshm_obj.dep
$tkshm_obj.lo: $tkshm_root/src/$tkshm_rel
	$shared_c_pre $shared_c_meta $tkshm_lib_flags -c $tkshm_root/src/$tkshm_rel -o $tkshm_obj.lo $shared_c_post -MMD -MF $tkshm_obj.dep -MT $tkshm_obj.lo
EOF
    done
    for tkshm_dir in `cd "$tkshm_root/src" && ls -d */`; do
      PHP_ADD_BUILD_DIR([bundled/$tkshm_dir])
    done
    if test "$tkshm_redis" = "yes"; then
      dnl The Redis scripts, embedded as C strings (embed-lua.php writes
      dnl what cmake/embed-lua.cmake writes for the CMake build).
      tkshm_lua="$tkshm_root/src/redis/lua"
      tkshm_lua_files=`ls "$tkshm_lua"/*.lua | LC_ALL=C sort | tr '\n' ' '`
      shared_objects_tkshm="$shared_objects_tkshm bundled/lua_sources.lo"
      cat >>Makefile.objects <<EOF
bundled/lua_sources.c: $abs_srcdir/embed-lua.php $tkshm_lua/prelude.lib $tkshm_lua_files
	\$(PHP_EXECUTABLE) -n $abs_srcdir/embed-lua.php bundled/lua_sources.c $tkshm_lua/prelude.lib $tkshm_lua_files

bundled/lua_sources.lo: bundled/lua_sources.c
	$shared_c_pre $shared_c_meta $tkshm_lib_flags -c bundled/lua_sources.c -o bundled/lua_sources.lo $shared_c_post
EOF
    fi
  fi
fi
