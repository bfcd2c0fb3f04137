# Helpers for the install rules of every part (lib, dev, tools, python,
# php, apache, nginx): directories relative to the install prefix where
# they can be, so that `cmake --install B --prefix P` puts every part
# under P, and files whose text names an installed path written when
# installing, with the prefix the install really uses.

# tkshm_prefix_relative(OUT PATH BASE): PATH relative to BASE when PATH is
# under BASE (e.g. php-config's /usr/lib/php/20220829 under its prefix
# /usr -> lib/php/20220829), else PATH unchanged (an absolute directory
# stays where the tool says).
function(tkshm_prefix_relative out path base)
	set(result "${path}")
	if(IS_ABSOLUTE "${path}" AND IS_ABSOLUTE "${base}")
		cmake_path(IS_PREFIX base "${path}" NORMALIZE under)
		if(under AND NOT path STREQUAL base)
			cmake_path(RELATIVE_PATH path BASE_DIRECTORY "${base}"
				OUTPUT_VARIABLE result)
		endif()
	endif()
	set(${out} "${result}" PARENT_SCOPE)
endfunction()

# tkshm_forget_old_default(VAR OLD): a build directory configured before
# the install directories were relative holds VAR as a PATH with the old
# absolute default (e.g. /usr/lib/nginx/modules), which would still write
# outside `--prefix`: that value is dropped so that the new default
# applies.  Any other value (one chosen with -D) is kept.
function(tkshm_forget_old_default var old)
	get_property(type CACHE ${var} PROPERTY TYPE)
	if(type STREQUAL "PATH" AND "${${var}}" STREQUAL "${old}")
		unset(${var} CACHE)
	endif()
endfunction()

# tkshm_install_configured(IN file OUT file DESTINATION dir COMPONENT c
#                          [PATHS VAR dir ...])
# Installs IN, configured (@VAR@) when installing: each VAR of PATHS is
# its dir made absolute with the install's prefix (a relative dir) or as
# given (an absolute one), so a file naming an installed program or
# module names it where this install put it.
function(tkshm_install_configured)
	cmake_parse_arguments(A "" "IN;OUT;DESTINATION;COMPONENT" "PATHS"
		${ARGN})
	install(CODE "
		set(TKSHM_CONF_IN \"${A_IN}\")
		set(TKSHM_CONF_OUT \"${A_OUT}\")
		set(TKSHM_CONF_PATHS \"${A_PATHS}\")
		include(\"${PROJECT_SOURCE_DIR}/cmake/configure-installed.cmake\")
	" COMPONENT ${A_COMPONENT})
	install(FILES "${A_OUT}" DESTINATION "${A_DESTINATION}"
		COMPONENT ${A_COMPONENT})
endfunction()
