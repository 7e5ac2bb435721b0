# The API reference: `cmake --build <dir> --target docs` runs doxygen on the public
# headers (docs/Doxyfile.in) and writes HTML to <dir>/docs/html. Not part of ALL.
# -DEGELU_DOCS_WERROR=ON makes any doxygen warning fail the target (CI).
option(EGELU_DOCS_WERROR "Fail the docs target on any doxygen warning" OFF)

find_package(Doxygen)
if(DOXYGEN_FOUND)
  if(EGELU_DOCS_WERROR)
    # Doxygen goes on after a warning and exits non-zero at the end, so every warning is listed.
    set(EGELU_DOXYGEN_WARN_AS_ERROR FAIL_ON_WARNINGS)
  else()
    set(EGELU_DOXYGEN_WARN_AS_ERROR NO)
  endif()
  set(EGELU_DOCS_OUTPUT_DIR ${PROJECT_BINARY_DIR}/docs)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${EGELU_DOCS_OUTPUT_DIR}/Doxyfile @ONLY)
  add_custom_target(
    docs
    COMMAND Doxygen::doxygen ${EGELU_DOCS_OUTPUT_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "egelu API reference (doxygen ${DOXYGEN_VERSION}): ${EGELU_DOCS_OUTPUT_DIR}/html/index.html"
    VERBATIM)
else()
  message(STATUS "egelu: doxygen not found; the docs target only says so (apt-get install doxygen)")
  add_custom_target(
    docs
    COMMAND ${CMAKE_COMMAND} -E echo "egelu: the docs target needs doxygen (Debian: apt-get install doxygen)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()
