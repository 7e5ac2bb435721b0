// What the headers of the compiled library egelu::nn share: the visibility of its API
// and the check that a program includes the Eigen the library was compiled against.
//
// egelu::nn hides every symbol but its API, so its copies of Eigen's functions stay its
// own whatever SIMD flags either side was compiled with (src/CMakeLists.txt,
// docs/DESIGN.md, "The compiled library").
/// @file
/// The export macro of egelu::nn, EGELU_NN_API, and the check that a program includes the Eigen the
/// library was compiled against (included by feed_forward.hpp, gated_feed_forward.hpp and npy.hpp).
#ifndef EGELU_INTERNAL_NN_API_HPP
#define EGELU_INTERNAL_NN_API_HPP

#include <Eigen/Core>
#include <egelu/nn_config.hpp>

/// @def EGELU_NN_API
/// Marks a name of egelu::nn's API: default visibility, since the library hides every other symbol
/// (on Windows, `__declspec(dllexport)` while the library is built, `__declspec(dllimport)` in a program).
#if defined(_WIN32)
#if defined(EGELU_NN_BUILDING)
#define EGELU_NN_API __declspec(dllexport)
#else
#define EGELU_NN_API __declspec(dllimport)
#endif
#else
#define EGELU_NN_API __attribute__((visibility("default")))
#endif

// Eigen numbers its releases 3.4.0 as WORLD.MAJOR.MINOR and, since 5.0, as
// MAJOR.MINOR.PATCH with WORLD kept at 3; CMake's package numbers both ways alike.
#if defined(EIGEN_PATCH_VERSION)
#define EGELU_EIGEN_SEMVER_MATCHES(major, minor, patch) \
  (EIGEN_MAJOR_VERSION == (major) && EIGEN_MINOR_VERSION == (minor) && EIGEN_PATCH_VERSION == (patch))
#else
#define EGELU_EIGEN_SEMVER_MATCHES(major, minor, patch) \
  (EIGEN_WORLD_VERSION == (major) && EIGEN_MAJOR_VERSION == (minor) && EIGEN_MINOR_VERSION == (patch))
#endif
static_assert(EGELU_EIGEN_SEMVER_MATCHES(EGELU_NN_EIGEN_VERSION_MAJOR, EGELU_NN_EIGEN_VERSION_MINOR,
                                         EGELU_NN_EIGEN_VERSION_PATCH),
              "egelu::nn was compiled against Eigen " EGELU_NN_EIGEN_VERSION_STRING
              ", and a program that links it must include that Eigen: rebuild egelu against your Eigen");
#undef EGELU_EIGEN_SEMVER_MATCHES

#endif  // EGELU_INTERNAL_NN_API_HPP
