// egelu: the transformer feed-forward activations for Eigen (3.4 and later) -- GELU
// in both forms, SiLU, QuickGELU, swish and the gated SwiGLU and GeGLU -- as
// vectorized functors and lazy expressions on dense and Tensor expressions, with
// gradients.
//
//   #include <egelu/egelu.hpp>
//   Eigen::ArrayXf y = egelu::gelu(x);             // tanh form
//   Eigen::ArrayXf z = egelu::gelu_exact(x);       // erf form
//   H.noalias() = egelu::swiglu(Wg * X, Wu * X);   // silu(Wg X) * (Wu X)
//
// Define EIGEN_USE_THREADS before including this header to evaluate on an
// Eigen::ThreadPoolDevice.
/// @file
/// The header-only module egelu::egelu: every activation functor, the lazy functions on dense and
/// Tensor expressions, the fused products and the Tensor output kernels. Define EIGEN_USE_THREADS
/// before including it to evaluate on an Eigen::ThreadPoolDevice.

/// @namespace egelu
/// The transformer activations for Eigen (functors, lazy functions on dense and Tensor expressions,
/// Tensor output kernels; `<egelu/egelu.hpp>`) and the feed-forward blocks of the compiled library
/// egelu::nn (FeedForward, GatedFeedForward).
#ifndef EGELU_EGELU_HPP
#define EGELU_EGELU_HPP

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#if !EIGEN_VERSION_AT_LEAST(3, 4, 0)
#error "egelu needs Eigen 3.4 or later"
#endif

#include "internal/bias_gelu_output_kernel.hpp"
#include "internal/dense_api.hpp"
#include "internal/functors.hpp"
#include "internal/fused_gated_product.hpp"
#include "internal/fused_product.hpp"
#include "internal/task_team.hpp"
#include "internal/tensor_api.hpp"
#include "internal/thread_pool_executor.hpp"

#endif  // EGELU_EGELU_HPP
