# The Debian package, built with CPack from the install rules (packaging/install.cmake):
#
#   make deb        # = cmake --build BUILD --target package_deb
#
# gives BUILD/pkit_<version>_<arch>.deb: stripped binaries, the man pages (compressed),
# bash completion, the systemd unit (neither enabled nor started), the example tree
# under /usr/share/doc/pkit/, Depends computed by dpkg-shlibdeps from the binaries'
# shared libraries, and one maintainer script: the postinst (packaging/deb/postinst),
# which upgrades a pkitd answering on the default socket in place (SPEC §16).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pkit)
set(CPACK_PACKAGE_VERSION ${PKIT_VERSION})
set(CPACK_PACKAGE_VENDOR "the pkit developers")
set(CPACK_PACKAGE_CONTACT "pkit developers <pkit@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "process supervisor for containers and small hosts")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # pkit_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The postinst, mode 0755 whatever the checkout's (CPack would keep the file's own).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/deb/postinst)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/pkit")
# The extended description, under the summary as the synopsis; CPack indents each line
# and writes the empty line as " ." (Debian policy 5.6.13).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"pkitd starts the services described in /etc/pkit (one TOML file each),
restarts them with jittered exponential backoff, a failure-storm guard and
restart limits, orders them by dependencies and supervision groups, checks
their liveness and readiness, and reaps every child, so it can run as PID 1
in a container or as one systemd unit on a small host.

pkitctl shows and steers the services over a Unix socket: status, start,
stop, restart, logs, events and a plain-words explanation of why a service
is in its state.")
# Directories 0755 whatever the build machine's umask.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
# cpack (and `make install`) must not rebuild the whole tree, tests included, first:
# `make deb` builds what the package holds through package_deb's dependencies, and
# the packaging test runs after the build.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CPack)

# `package` would also be fine; this name says what it makes and does not collide
# with CPack's own target.
add_custom_target(package_deb
    COMMAND ${CMAKE_CPACK_COMMAND} --config ${PROJECT_BINARY_DIR}/CPackConfig.cmake -G DEB
    DEPENDS pkitd pkitctl pkit_man_pages pkit_deb_docs
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    COMMENT "building the Debian package"
    VERBATIM)
