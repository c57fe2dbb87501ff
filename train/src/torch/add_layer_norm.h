// A block's residual add and the LayerNorm after it, as the trainer's model
// runs them (internal to the harness).
#pragma once

#include <torch/torch.h>

#include <utility>

namespace nibble::train {

// h_out = h + y (h FP32, y a BF16 branch output of h's shape [..., d]; the add
// in FP32, as PyTorch promotes it) and x = layer_norm(h_out, w, b, eps 1e-5)
// rounded to BF16: {h_out, x}, both differentiable. On a CUDA device, for
// widths a multiple of 32 up to 1024, one fused kernel (add_layer_norm_kernel.h)
// reads the residual stream once instead of three times, and its backward
// (from the saved row statistics) twice instead of ATen's five passes.
// Elsewhere, the ATen ops themselves.
std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& h, const torch::Tensor& y,
                                                       const torch::Tensor& w, const torch::Tensor& b);

}  // namespace nibble::train
