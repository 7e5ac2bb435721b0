#include <egelu/weight_format.hpp>

namespace egelu {

const char* to_string(WeightFormat format) {
  switch (format) {
    case WeightFormat::f32:
      return "f32";
    case WeightFormat::bf16:
      return "bf16";
    case WeightFormat::f16:
      return "f16";
    case WeightFormat::f64:
      return "f64";
    case WeightFormat::q8_0:
      return "q8_0";
    case WeightFormat::q4_0:
      return "q4_0";
    case WeightFormat::mxfp4:
      return "mxfp4";
  }
  return "unknown";
}

const char* to_string(InputFormat format) {
  switch (format) {
    case InputFormat::f32:
      return "f32";
    case InputFormat::q16_0:
      return "q16_0";
  }
  return "unknown";
}

}  // namespace egelu
