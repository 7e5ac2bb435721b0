// The headers every test file parses, precompiled once for the whole suite (tests/CMakeLists.txt):
// Eigen's Core and Tensor modules and GoogleTest take 2.5 s (clang++) to 3.4 s (g++) to parse,
// in every one of the suite's files, in each of CI's builds. Only third-party headers are
// here: egelu's own are what the suite tests, so each file includes them itself, and a header
// of egelu's that forgot one of its own includes fails in the g++ builds, which do without
// this one (and in the consumers' programs). EIGEN_USE_THREADS, which the thread-pool tests
// define before including Tensor, is defined for every file alike.
#ifndef EGELU_TESTS_PRECOMPILED_HPP
#define EGELU_TESTS_PRECOMPILED_HPP

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#endif  // EGELU_TESTS_PRECOMPILED_HPP
