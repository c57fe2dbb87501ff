// From a run-time value to a template argument, over one of golden's lists
// (kAllFormats, kAllScaleFormats, kAllScaleModes): the one way the kernels
// pick an instantiation, so that a value added to a list gets its kernels
// without an edit here. Host and device.
#pragma once

#include <cstddef>

#include "nibble/codes.h"

namespace nibble::cuda {

// fn.template operator()<kList[i]>() for the first i with kList[i] == v, or
// for the list's last value where v is not listed (callers pass listed values:
// golden's parsers accept nothing else; listed_kernel_index tells them apart).
// Host and device as fn is: a host-only fn (the kernels' launch choice) is
// called from host code only.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <const auto& kList, size_t I = 0, class T, class Fn>
NIBBLE_HOST_DEVICE constexpr auto with_listed(T v, const Fn& fn) {
  constexpr T kValue = kList[I];
  if constexpr (I + 1 < kList.size()) {
    if (v != kValue) return with_listed<kList, I + 1>(v, fn);
  }
  return fn.template operator()<kValue>();
}

// The position of v in kList, or kList.size() where it is not listed.
template <const auto& kList, class T>
constexpr size_t listed_index(T v) {
  for (size_t i = 0; i < kList.size(); ++i) {
    if (kList[i] == v) return i;
  }
  return kList.size();
}

}  // namespace nibble::cuda
