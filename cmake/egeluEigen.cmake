# Finding Eigen for egelu: used by egelu's own build and by the installed egeluConfig.cmake.
#
# egelu works with Eigen 3.4.0 and later (5.x, master). No single version argument to
# find_package says so: Debian's 3.4.0 version file (SameMajorVersion) refuses a request
# for "5", and 5.x's semantic-versioning file refuses "3.4". A refused Eigen3_DIR is worse
# than an error: find_package goes on searching and quietly takes the system's Eigen
# instead of the one the user pointed it at. So egelu asks for no version and checks it.

# egelu_eigen_version_string(<var>): the version the headers of Eigen3::Eigen declare,
# e.g. "3.4.0" or "5.0.1-dev+master" (master's CMake package says only "5.0.1").
function(egelu_eigen_version_string out)
  get_target_property(dirs Eigen3::Eigen INTERFACE_INCLUDE_DIRECTORIES)
  foreach(dir IN LISTS dirs)
    if(EXISTS "${dir}/Eigen/Version")
      file(STRINGS "${dir}/Eigen/Version" line REGEX "#define EIGEN_VERSION_STRING")
      if(line MATCHES "\"([^\"]+)\"")
        set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
        return()
      endif()
    endif()
    if(EXISTS "${dir}/Eigen/src/Core/util/Macros.h")
      file(STRINGS "${dir}/Eigen/src/Core/util/Macros.h" lines REGEX "#define EIGEN_(WORLD|MAJOR|MINOR)_VERSION ")
      string(REGEX REPLACE ".*WORLD_VERSION ([0-9]+).*MAJOR_VERSION ([0-9]+).*MINOR_VERSION ([0-9]+).*" "\\1.\\2.\\3"
                           version "${lines}")
      set(${out} "${version}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "${Eigen3_VERSION}" PARENT_SCOPE)
endfunction()

# egelu_check_eigen_version(<ok-var> <message-var>): whether the Eigen found is 3.4 or later.
function(egelu_check_eigen_version ok message)
  if(Eigen3_VERSION VERSION_LESS 3.4)
    set(${ok} FALSE PARENT_SCOPE)
    set(${message}
        "egelu needs Eigen 3.4 or later, but the Eigen found is ${Eigen3_VERSION} (${Eigen3_DIR}). Point CMake at a newer one with -DEigen3_DIR=<prefix>/share/eigen3/cmake."
        PARENT_SCOPE)
  else()
    set(${ok} TRUE PARENT_SCOPE)
    set(${message} "" PARENT_SCOPE)
  endif()
endfunction()
