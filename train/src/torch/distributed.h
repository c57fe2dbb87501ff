// Data-parallel training (internal): the collectives a rank needs, behind an
// interface so that the trainer compiles where libtorch's NCCL process group
// is absent.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace nibble::train {

class Collectives {
 public:
  virtual ~Collectives() = default;
  // In-place sum over the ranks, ordered on the current CUDA stream.
  virtual void all_reduce_sum(torch::Tensor& t) = 0;
};

// The NCCL process group of `world` ranks meeting at `rendezvous` (a file path
// every rank can reach). Throws std::runtime_error where this build has none.
std::unique_ptr<Collectives> make_nccl_collectives(const std::string& rendezvous, int rank, int world);

struct Rank {
  int index = 0;
  int world = 1;
  Collectives* comm = nullptr;

  void all_reduce_sum(std::vector<torch::Tensor> ts) const {
    for (auto& t : ts) comm->all_reduce_sum(t);
  }
  void all_reduce_mean(std::vector<torch::Tensor> ts) const {
    for (auto& t : ts) {
      comm->all_reduce_sum(t);
      t.div_(world);
    }
  }
};

}  // namespace nibble::train
