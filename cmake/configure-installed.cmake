# Writes TKSHM_CONF_OUT from TKSHM_CONF_IN at install time (see
# tkshm_install_configured in TkshmInstall.cmake).  Included from the
# install script, where CMAKE_INSTALL_PREFIX is the prefix of this
# install (`cmake --install --prefix P`), not the configured one.
#
# Expects: TKSHM_CONF_IN, TKSHM_CONF_OUT, TKSHM_CONF_PATHS (VAR;dir pairs).

set(paths ${TKSHM_CONF_PATHS})
while(paths)
	list(POP_FRONT paths var dir)
	if(IS_ABSOLUTE "${dir}")
		set(${var} "${dir}")
	else()
		set(${var} "${CMAKE_INSTALL_PREFIX}/${dir}")
	endif()
endwhile()

configure_file("${TKSHM_CONF_IN}" "${TKSHM_CONF_OUT}" @ONLY)
