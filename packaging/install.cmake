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

install(FILES ${PROJECT_SOURCE_DIR}/man/pkitctl.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT pkit)
install(FILES ${PROJECT_SOURCE_DIR}/man/pkit.toml.5
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man5 COMPONENT pkit)
# pkitd.8 carries its own copy of man/protocol.inc, so it needs nothing beside it.
install(FILES ${PROJECT_SOURCE_DIR}/man/pkitd.8
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT pkit)

# bash-completion loads completions/NAME on demand for the command NAME.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/pkitctl.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME pkitctl COMPONENT pkit)

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
