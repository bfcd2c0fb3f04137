# Writes tkshm.pc at install time, with the prefix the install really uses.
# Included from the install script (cmake_install.cmake), where
# CMAKE_INSTALL_PREFIX is the prefix given to `cmake --install --prefix`.
#
# Expects: TKSHM_PC_IN, TKSHM_PC_FILE, PROJECT_VERSION, PROJECT_DESCRIPTION,
# TKSHM_PC_LIBS_PRIVATE, TKSHM_INSTALL_LIBDIR, TKSHM_INSTALL_INCLUDEDIR.

set(prefix "${CMAKE_INSTALL_PREFIX}")

foreach(kind LIBDIR INCLUDEDIR)
	set(dir "${TKSHM_INSTALL_${kind}}")
	if(IS_ABSOLUTE "${dir}")
		set(TKSHM_PC_${kind} "${dir}")
	else()
		set(TKSHM_PC_${kind} "\${prefix}/${dir}")
	endif()
endforeach()

configure_file("${TKSHM_PC_IN}" "${TKSHM_PC_FILE}" @ONLY)
