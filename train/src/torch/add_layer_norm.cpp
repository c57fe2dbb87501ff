#include "add_layer_norm.h"

#include <cstdint>

#if NIBBLE_TRAIN_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "add_layer_norm_kernel.h"
#endif

namespace nibble::train {
namespace {

constexpr double kEps = 1e-5;  // torch::layer_norm's default, which the model used unfused

std::pair<torch::Tensor, torch::Tensor> unfused(const torch::Tensor& h, const torch::Tensor& y, const torch::Tensor& w,
                                                const torch::Tensor& b) {
  torch::Tensor h_out = h + y;
  torch::Tensor x = torch::layer_norm(h_out, {h.size(-1)}, w, b, kEps).to(torch::kBFloat16);
  return {h_out, x};
}

#if NIBBLE_TRAIN_CUDA
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class AddLayerNorm : public torch::autograd::Function<AddLayerNorm> {
 public:
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& y,
                               const torch::Tensor& w, const torch::Tensor& b) {
    const int64_t d = h.size(-1);
    const int64_t rows = h.numel() / d;
    const torch::Tensor hc = h.contiguous(), yc = y.contiguous();
    torch::Tensor h_out = torch::empty_like(hc);
    torch::Tensor x = torch::empty(hc.sizes(), hc.options().dtype(torch::kBFloat16));
    // Each row's statistics, which the backward reads.
    torch::Tensor mean = torch::empty({rows}, hc.options());
    torch::Tensor rstd = torch::empty({rows}, hc.options());
    add_layer_norm_bf16(hc.data_ptr<float>(), reinterpret_cast<const uint16_t*>(yc.data_ptr()),
                        w.data_ptr<float>(), b.data_ptr<float>(), h_out.data_ptr<float>(),
                        reinterpret_cast<uint16_t*>(x.data_ptr()), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                        rows, static_cast<int>(d), static_cast<float>(kEps), at::cuda::getCurrentCUDAStream().stream());
    ctx->save_for_backward({h_out, mean, rstd, w});
    return {h_out, x};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& h_out = saved[0];
    if (!grads[1].defined()) return {grads[0], grads[0].defined() ? grads[0].to(torch::kBFloat16) : torch::Tensor(),
                                     torch::Tensor(), torch::Tensor()};
    const int64_t d = h_out.size(-1);
    const int64_t rows = h_out.numel() / d;
    // y entered the add as BF16: its gradient is h_out's, in y's type (as autograd gives it for h + y).
    torch::Tensor gx = grads[1].to(torch::kBFloat16).contiguous();
    if (reinterpret_cast<uintptr_t>(gx.data_ptr()) % 16 != 0) gx = gx.clone();  // the kernels' vector loads
    const torch::Tensor gh = grads[0].defined() ? grads[0].to(torch::kFloat32).contiguous() : torch::Tensor();
    torch::Tensor dh = torch::empty_like(h_out);
    torch::Tensor dy = torch::empty(h_out.sizes(), h_out.options().dtype(torch::kBFloat16));
    torch::Tensor dw = torch::empty({d}, h_out.options()), db = torch::empty({d}, h_out.options());
    torch::Tensor partial = torch::empty({add_layer_norm_backward_partial_floats(rows, static_cast<int>(d))},
                                         h_out.options());
    add_layer_norm_backward_bf16(reinterpret_cast<const uint16_t*>(gx.data_ptr()),
                                 gh.defined() ? gh.data_ptr<float>() : nullptr, h_out.data_ptr<float>(),
                                 saved[1].data_ptr<float>(), saved[2].data_ptr<float>(), saved[3].data_ptr<float>(),
                                 dh.data_ptr<float>(), reinterpret_cast<uint16_t*>(dy.data_ptr()),
                                 dw.data_ptr<float>(), db.data_ptr<float>(), partial.data_ptr<float>(), rows,
                                 static_cast<int>(d), at::cuda::getCurrentCUDAStream().stream());
    return {dh, dy, dw, db};
  }
};
#endif

}  // namespace

std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& h, const torch::Tensor& y,
                                                       const torch::Tensor& w, const torch::Tensor& b) {
#if NIBBLE_TRAIN_CUDA
  if (h.is_cuda() && h.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kBFloat16 &&
      w.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32 && h.sizes() == y.sizes() &&
      add_layer_norm_width_ok(h.size(-1)) && w.is_contiguous() && b.is_contiguous()) {
    const variable_list r = AddLayerNorm::apply(h, y, w, b);
    return {r[0], r[1]};
  }
#endif
  return unfused(h, y, w, b);
}

}  // namespace nibble::train
