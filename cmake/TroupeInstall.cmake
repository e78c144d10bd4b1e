# The package: troupe:: targets for the build tree and for an installed copy.
#
#   cmake --install build --prefix P
#
# installs the headers as P/include/troupe/<folder>/<file>.hpp, the static
# libraries into P/lib, and the CMake package into P/lib/cmake/troupe, so an
# application writes
#
#   find_package(troupe REQUIRED)
#   target_link_libraries(app PRIVATE troupe::troupe)   # or troupe::net, ...
#
# The same troupe:: names exist as aliases in the build tree (examples/).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# folder -> library target; the export name is the folder's (troupe::optim).
set(TROUPE_PUBLIC_FOLDERS optim messages actors algos net sim apps)
set(TROUPE_LIBRARIES troupe_optim troupe_messages troupe_actors troupe_algos
                     troupe_net troupe_sim troupe_cli)
set(TROUPE_EXPORT_NAMES optim messages actors algos net sim cli)

# The umbrella: every library (troupe::troupe).
add_library(troupe_all INTERFACE)
target_link_libraries(troupe_all INTERFACE ${TROUPE_LIBRARIES})
troupe_public_includes(troupe_all INTERFACE)

foreach(target name IN ZIP_LISTS TROUPE_LIBRARIES TROUPE_EXPORT_NAMES)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(troupe::${name} ALIAS ${target})
endforeach()
set_target_properties(troupe_eigen PROPERTIES EXPORT_NAME eigen)
set_target_properties(troupe_all PROPERTIES EXPORT_NAME troupe)
add_library(troupe::eigen ALIAS troupe_eigen)
add_library(troupe::troupe ALIAS troupe_all)

# Build tree: build/include/troupe/<folder> links to the source folder, so
# <troupe/actors/worker.hpp> resolves there as it does once installed.
foreach(folder IN LISTS TROUPE_PUBLIC_FOLDERS)
  set(link ${PROJECT_BINARY_DIR}/include/troupe/${folder})
  if(NOT EXISTS ${link})
    file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/include/troupe)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${link} SYMBOLIC)
  endif()
endforeach()

if(NOT TROUPE_INSTALL)
  return()
endif()

set(TROUPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/troupe)

foreach(folder IN LISTS TROUPE_PUBLIC_FOLDERS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/troupe/${folder}
          FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/troupe/troupe.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/troupe)

install(TARGETS ${TROUPE_LIBRARIES} troupe_eigen troupe_all
        EXPORT troupeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT troupeTargets NAMESPACE troupe:: DESTINATION ${TROUPE_CMAKE_DIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/troupeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/troupeConfig.cmake
  INSTALL_DESTINATION ${TROUPE_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/troupeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
# FindCAF.cmake travels with the package: Debian's libcaf-dev has no CMake
# package of its own.
install(FILES ${PROJECT_BINARY_DIR}/troupeConfig.cmake
              ${PROJECT_BINARY_DIR}/troupeConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/FindCAF.cmake
        DESTINATION ${TROUPE_CMAKE_DIR})
