// Collectives over libtorch's NCCL process group (c10d), rendezvous through a
// FileStore: the ranks of one machine share its file system.
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "distributed.h"
#include "nibble/train/trainer.h"

namespace nibble::train {
namespace {

class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(const std::string& rendezvous, int rank, int world) {
    auto store = c10::make_intrusive<c10d::FileStore>(rendezvous, world);
    group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world,
                                                         c10d::ProcessGroupNCCL::Options::create());
  }
  void all_reduce_sum(torch::Tensor& t) override {
    std::vector<at::Tensor> one{t};
    // For NCCL, wait() makes the current stream wait for the reduction; the host does not block.
    group_->allreduce(one)->wait();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
};

}  // namespace

std::unique_ptr<Collectives> make_nccl_collectives(const std::string& rendezvous, int rank, int world) {
  return std::make_unique<NcclCollectives>(rendezvous, rank, world);
}
bool data_parallel_built() { return true; }

}  // namespace nibble::train
