# Install rules for pkit, kept beside the packaging files they install. The top-level
# CMakeLists.txt includes this file once, after the targets are defined:
#
#   include(packaging/install.cmake)
#
# Then: cmake --install BUILD [--prefix /usr] [--component ...]; DESTDIR works as
# usual. Paths follow GNUInstallDirs (CMAKE_INSTALL_PREFIX defaults to /usr/local).
include(GNUInstallDirs)

install(TARGETS pkitd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT pkit)
install(TARGETS pkitctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT pkit)

# The man pages, compressed as Debian policy and man-db expect (gzip -n: no name or
# time stamp, so the package is reproducible). pkitd.8 carries its own copy of
# man/protocol.inc, so it needs nothing beside it.
find_program(PKIT_GZIP gzip REQUIRED)
set(_pkit_man_gz)
foreach(_page pkitd.8 pkitctl.1 pkit.toml.5)
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" _section ${_page})
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${_page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${PKIT_GZIP} -9n -c ${PROJECT_SOURCE_DIR}/man/${_page} > ${PROJECT_BINARY_DIR}/man/${_page}.gz
      DEPENDS ${PROJECT_SOURCE_DIR}/man/${_page}
      VERBATIM)
  list(APPEND _pkit_man_gz ${PROJECT_BINARY_DIR}/man/${_page}.gz)
  install(FILES ${PROJECT_BINARY_DIR}/man/${_page}.gz
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section} COMPONENT pkit)
endforeach()
add_custom_target(pkit_man_pages ALL DEPENDS ${_pkit_man_gz})

# bash-completion loads completions/NAME on demand for the command NAME.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/pkitctl.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME pkitctl COMPONENT pkit)
# zsh finds _NAME in a directory of $fpath: Debian's zsh looks in
# /usr/share/zsh/vendor-completions for packages (and /usr/local/share/zsh/site-functions
# for local installs: -DPKIT_ZSH_COMPLETION_DIR=share/zsh/site-functions). fish loads
# vendor_completions.d/NAME.fish on demand.
set(PKIT_ZSH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions CACHE STRING
    "where zsh's completion function _pkitctl is installed (a directory in zsh's $fpath)")
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/pkitctl.zsh
        DESTINATION ${PKIT_ZSH_COMPLETION_DIR}
        RENAME _pkitctl COMPONENT pkit)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/pkitctl.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d COMPONENT pkit)

# The systemd unit, with ExecStart pointing at the installed pkitd. Written at install
# time, so that `cmake --install --prefix` is honoured. systemd reads units from
# /usr/lib/systemd/system and /usr/local/lib/systemd/system alike.
install(CODE "
  file(READ \"${PROJECT_SOURCE_DIR}/packaging/pkitd.service\" _pkit_unit)
  string(REPLACE \"/usr/sbin/pkitd\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}/pkitd\"
         _pkit_unit \"\${_pkit_unit}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/packaging/pkitd.service\" \"\${_pkit_unit}\")
" COMPONENT systemd)
install(FILES ${PROJECT_BINARY_DIR}/packaging/pkitd.service
        DESTINATION lib/systemd/system COMPONENT systemd)

# An example configuration tree, for reference (not /etc: the package must not
# start services nobody asked for).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT pkit)

# The copyright file and a changelog in Debian's format, compressed, beside the
# examples (Debian policy 12.5 and 12.7).
configure_file(${PROJECT_SOURCE_DIR}/packaging/deb/changelog.in
               ${PROJECT_BINARY_DIR}/packaging/changelog @ONLY)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/packaging/changelog.gz
    COMMAND ${PKIT_GZIP} -9n -c ${PROJECT_BINARY_DIR}/packaging/changelog
            > ${PROJECT_BINARY_DIR}/packaging/changelog.gz
    DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog
    VERBATIM)
add_custom_target(pkit_deb_docs ALL DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/copyright
              ${PROJECT_BINARY_DIR}/packaging/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkit)
# pkitctl is static on purpose (ctl/CMakeLists.txt): said to lintian, with the reason.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME pkit COMPONENT pkit)
