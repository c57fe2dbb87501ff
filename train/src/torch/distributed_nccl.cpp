// Collectives over libtorch's NCCL process group (c10d), rendezvous through a
// FileStore: the ranks of one machine share its file system.
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "distributed.h"
#include "nibble/train/trainer.h"

namespace nibble::train {
namespace {

// ProcessGroupNCCL::shutdown where this libtorch has it (2.3 and later): a group
// destroyed without it warns that the process group was never destroyed.
template <class Group>
auto shut_down(Group& g, int) -> decltype(g.shutdown(), void()) {
  g.shutdown();
}
template <class Group>
void shut_down(Group&, long) {}

class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(const std::string& rendezvous, int rank, int world) {
    auto store = c10::make_intrusive<c10d::FileStore>(rendezvous, world);
    group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world,
                                                         c10d::ProcessGroupNCCL::Options::create());
  }
  ~NcclCollectives() override { shut_down(*group_, 0); }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

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
